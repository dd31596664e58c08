#pragma once
// The decoder and the per-row NLL of a softmax or sigsoftmax as one autograd node, for the
// training loss of those heads (OutputHead::loss) and of the mixtures' experts (MoS, MoSS; Yang
// et al. 2018, Kanai et al. 2018 eq. 19): the (R, M)
// logits z = x W^T + b are made by one GEMM and, in the same forward, overwritten row by row with
// the unscaled gradient Q = d(-log f(z_r)[t_r]) / dz_r (row_nll_function.h's kernels, in place).
// The backward is then GEMMs only; with g the upstream gradient of each row's loss (a mixture's
// posterior responsibility of that expert over N):
//   dL/dz = diag(g) Q                                   (R, M)
//   dL/dx = diag(g) Q W                                 (R, d): Q W, then each row scaled
//   [dL/dW | dL/db] = Q^T [diag(g) x | g]               (M, d + 1): one GEMM gives both
// so no pass over the (R, M) matrix is left for the backward apart from the GEMMs that read it
// (the composed path, linear + fused_row_nll, recomputes exp over it and writes diag(g) Q).
// Q takes the logits' memory: what the graph keeps is the same size as before.

#include <torch/torch.h>

namespace sb::heads {

/// -log f(x_r W^T + b)[t_r] for every row r: x (R, d), weight (M, d), bias (M) or undefined,
/// targets (R) int64 in [0, M) -> (R) of x's dtype. f = softmax, or sigsoftmax when `sigsoftmax`.
/// CPU float32/float64 only (fused_row_nll_supports(x)). Without a gradient to compute (no
/// input requires grad, or grad mode off) only the NLL is computed. Under create_graph the
/// backward is the closed form in differentiable torch ops (recomputing z from x, W, b).
torch::Tensor fused_linear_row_nll(const torch::Tensor& x, const torch::Tensor& weight,
                                   const torch::Tensor& bias, const torch::Tensor& targets,
                                   bool sigsoftmax);

}  // namespace sb::heads
