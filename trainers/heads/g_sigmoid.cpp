#include "trainers/heads/g_sigmoid.h"

#include "trainers/heads/check.h"
#include "trainers/heads/sigmoid_family_function.h"

namespace sb::heads {

torch::Tensor log_g_sigmoid(const torch::Tensor& logits) {
  check_logits(logits, "log_g_sigmoid");
  if (fused_sigmoid_family_supports(logits))
    return fused_log_sigmoid_family(logits, /*sigsoftmax=*/false);
  return log_g_sigmoid_composed(logits);
}

torch::Tensor g_sigmoid_nll_loss(const torch::Tensor& logits, const torch::Tensor& targets) {
  check_logits(logits, "g_sigmoid_nll_loss");
  check_targets(targets, logits, "g_sigmoid_nll_loss");
  if (fused_sigmoid_family_supports(logits))
    return fused_sigmoid_family_nll(logits, targets, /*sigsoftmax=*/false);
  return torch::nll_loss(log_g_sigmoid_composed(logits), targets);
}

torch::Tensor log_g_sigmoid_composed(const torch::Tensor& logits) {
  check_logits(logits, "log_g_sigmoid_composed");
  return torch::log_softmax(torch::log_sigmoid(logits), /*dim=*/-1);
}

}  // namespace sb::heads
