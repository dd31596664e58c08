#pragma once
// g:sigmoid (Kanai et al. 2018, supplementary B.2): f_i = sigmoid(z_i) / sum_m sigmoid(z_m).
// log f = logsigmoid(z) - logsumexp(logsigmoid(z)); gradient (delta_ij - f_j)(1 - sigmoid(z_j)).

#include <torch/torch.h>

namespace sb::heads {

/// (N, M) -> (N, M); fused kernel on CPU float32/float64, composed ops elsewhere.
torch::Tensor log_g_sigmoid(const torch::Tensor& logits);

/// Plain torch ops; the reference for the fused path.
torch::Tensor log_g_sigmoid_composed(const torch::Tensor& logits);

}  // namespace sb::heads
