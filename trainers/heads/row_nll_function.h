#pragma once
// Per-row negative log-likelihood of a softmax or sigsoftmax over (R, M) logits, fused: the
// mixtures' experts (MoS, MoSS) need only -log f_k(y) of each expert's target, never the
// (R, M) log-probabilities. A torch::autograd::Function over softmax_nll_kernel.h and
// sigmoid_family_kernel.h; its backward writes the (R, M) gradient in one pass with each row's
// own upstream gradient (a mixture's posterior responsibility of that expert).

#include <torch/torch.h>

namespace sb::heads {

/// -log f(z_r)[t_r] for every row r: logits (R, M) CPU float32/float64, targets (R) int64 in
/// [0, M) -> (R) of the logits' dtype. f = softmax, or sigsoftmax when `sigsoftmax`. The first
/// derivatives come from the fused kernels; under create_graph (double backward) the backward is
/// the same closed form in differentiable torch ops.
torch::Tensor fused_row_nll(const torch::Tensor& logits, const torch::Tensor& targets,
                            bool sigsoftmax);

/// g_r * d(-log f(z_r)[t_r]) / dz_r, (R, M), from differentiable torch ops (for create_graph):
/// (f_j - [j = t]) (2 - sigmoid(z_j)) for sigsoftmax (Theorem 5), f_j - [j = t] for softmax.
torch::Tensor row_nll_grad_differentiable(const torch::Tensor& z, const torch::Tensor& targets,
                                          const torch::Tensor& g, bool sigsoftmax);

/// Whether fused_row_nll takes these logits (CPU, float32/float64) and it is enabled; else
/// callers compose.
bool fused_row_nll_supports(const torch::Tensor& logits);

/// For benchmarks (bench_wordlm --composed-mixture-nll): false makes fused_row_nll_supports say
/// no, so the mixtures take the composed path (log_output + gather) in the same process. Default
/// true; process-wide.
void set_fused_row_nll_enabled(bool enabled);

}  // namespace sb::heads
