#include "trainers/heads/softmax.h"

#include "trainers/heads/check.h"

namespace sb::heads {

torch::Tensor log_softmax(const torch::Tensor& logits) {
  check_logits(logits, "log_softmax");
  return torch::log_softmax(logits, /*dim=*/-1);
}

torch::Tensor log_softmax_abs(const torch::Tensor& logits) {
  check_logits(logits, "log_softmax_abs");
  return torch::log_softmax(logits.abs(), /*dim=*/-1);
}

}  // namespace sb::heads
