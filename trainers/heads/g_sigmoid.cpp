#include "trainers/heads/g_sigmoid.h"

#include "trainers/heads/check.h"
#include "trainers/heads/sigmoid_family_function.h"

namespace sb::heads {

torch::Tensor log_g_sigmoid(const torch::Tensor& logits) {
  return sigmoid_family_log_output(logits, /*sigsoftmax=*/false, log_g_sigmoid_composed,
                                   "log_g_sigmoid");
}

torch::Tensor g_sigmoid_nll_loss(const torch::Tensor& logits, const torch::Tensor& targets) {
  return sigmoid_family_nll_loss(logits, targets, /*sigsoftmax=*/false, log_g_sigmoid_composed,
                                 "g_sigmoid_nll_loss");
}

torch::Tensor log_g_sigmoid_composed(const torch::Tensor& logits) {
  check_logits(logits, "log_g_sigmoid_composed");
  return torch::log_softmax(torch::log_sigmoid(logits), /*dim=*/-1);
}

}  // namespace sb::heads
