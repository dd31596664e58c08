#include "trainers/heads/g_relu.h"

#include "common/errors.h"
#include "trainers/heads/check.h"

namespace sb::heads {

torch::Tensor log_g_relu(const torch::Tensor& logits, double eps) {
  check_logits(logits, "log_g_relu");
  if (!(eps > 0))
    throw OptionError::described("eps", "log_g_relu: eps must be > 0, got " + std::to_string(eps));
  const auto a = torch::relu(logits) + eps;  // (N, M), >= eps
  return a.log() - a.sum(/*dim=*/-1, /*keepdim=*/true).log();
}

}  // namespace sb::heads
