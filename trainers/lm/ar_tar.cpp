#include "trainers/lm/ar_tar.h"

namespace sb::lm {

torch::Tensor activation_regularisation(const torch::Tensor& dropped, double alpha) {
  if (alpha == 0) return torch::zeros({}, dropped.options());
  return alpha * dropped.pow(2).mean();
}

torch::Tensor temporal_activation_regularisation(const torch::Tensor& raw, double beta) {
  if (beta == 0 || raw.size(0) < 2) return torch::zeros({}, raw.options());
  const auto diff = raw.slice(/*dim=*/0, 1) - raw.slice(/*dim=*/0, 0, -1);  // (T - 1, B, H)
  return beta * diff.pow(2).mean();
}

}  // namespace sb::lm
