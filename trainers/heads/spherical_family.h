#pragma once
// Spherical softmax and Taylor softmax (de Brebisson & Vincent 2016), both normalised squares:
// clang-format off
//   spherical: f_i = (z_i^2 + eps) / sum_m (z_m^2 + eps)
//   Taylor:    f_i = (1 + z_i + z_i^2/2) / sum_m (...) = ((z_i + 1)^2 + 1) / sum_m ((z_m + 1)^2 + 1)
// clang-format on
// Rows are rescaled by s = max(1, max|x|) before squaring, so logits up to float max do not
// overflow.

#include <torch/torch.h>

namespace sb::heads {

/// (N, M) -> (N, M). Throws sb::OptionError unless eps > 0 (eps must be tuned: 0.0198 in
/// the paper's PTB run).
torch::Tensor log_spherical_softmax(const torch::Tensor& logits, double eps);

/// (N, M) -> (N, M). The numerator is >= 1/2, so no eps is needed.
torch::Tensor log_taylor_softmax(const torch::Tensor& logits);

}  // namespace sb::heads
