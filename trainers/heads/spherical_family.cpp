#include "trainers/heads/spherical_family.h"

#include "common/errors.h"
#include "trainers/heads/check.h"

namespace sb::heads {
namespace {

// log((x_i^2 + c) / sum_m (x_m^2 + c)) with the row scale s divided out of numerator and sum.
torch::Tensor log_normalised_square(const torch::Tensor& x, double c) {
  const auto s = x.detach().abs().amax(/*dim=*/-1, /*keepdim=*/true).clamp_min(1.0);  // (N, 1)
  const auto a = (x / s).square() + c / s.square();                                   // (N, M)
  return a.log() - a.sum(/*dim=*/-1, /*keepdim=*/true).log();
}

}  // namespace

torch::Tensor log_spherical_softmax(const torch::Tensor& logits, double eps) {
  check_logits(logits, "log_spherical_softmax");
  if (!(eps > 0))
    throw OptionError::described(
        "eps", "log_spherical_softmax: eps must be > 0, got " + std::to_string(eps));
  return log_normalised_square(logits, eps);
}

torch::Tensor log_taylor_softmax(const torch::Tensor& logits) {
  check_logits(logits, "log_taylor_softmax");
  return log_normalised_square(logits + 1.0, 1.0);
}

}  // namespace sb::heads
