#pragma once
// g:ReLU (Kanai et al. 2018, supplementary eq. 15):
// clang-format off
//   f_i = (ReLU(z_i) + eps) / sum_m (ReLU(z_m) + eps)
// clang-format on
// The eps (1e-8 in the paper) keeps every probability, and so every log-output, finite.

#include <torch/torch.h>

namespace sb::heads {

/// (N, M) -> (N, M). Throws sb::OptionError unless eps > 0.
torch::Tensor log_g_relu(const torch::Tensor& logits, double eps = 1e-8);

}  // namespace sb::heads
