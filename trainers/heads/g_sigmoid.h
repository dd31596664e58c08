#pragma once
// g:sigmoid (Kanai et al. 2018, supplementary B.2): f_i = sigmoid(z_i) / sum_m sigmoid(z_m).
// log f = logsigmoid(z) - logsumexp(logsigmoid(z)); gradient (delta_ij - f_j)(1 - sigmoid(z_j)).

#include <torch/torch.h>

namespace sb::heads {

/// (N, M) -> (N, M); fused kernel on CPU float32/float64, composed ops elsewhere.
torch::Tensor log_g_sigmoid(const torch::Tensor& logits);

/// The training loss, mean over rows of -log f(z)[target], fused on CPU (see sigsoftmax_nll_loss).
torch::Tensor g_sigmoid_nll_loss(const torch::Tensor& logits, const torch::Tensor& targets);

/// Plain torch ops; the reference for the fused path.
torch::Tensor log_g_sigmoid_composed(const torch::Tensor& logits);

}  // namespace sb::heads
