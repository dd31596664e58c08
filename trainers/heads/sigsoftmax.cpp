#include "trainers/heads/sigsoftmax.h"

#include "trainers/heads/check.h"
#include "trainers/heads/sigmoid_family_function.h"

namespace sb::heads {

torch::Tensor log_sigsoftmax(const torch::Tensor& logits) {
  check_logits(logits, "log_sigsoftmax");
  if (fused_sigmoid_family_supports(logits))
    return fused_log_sigmoid_family(logits, /*sigsoftmax=*/true);
  return log_sigsoftmax_composed(logits);
}

torch::Tensor sigsoftmax_nll_loss(const torch::Tensor& logits, const torch::Tensor& targets) {
  check_logits(logits, "sigsoftmax_nll_loss");
  check_targets(targets, logits, "sigsoftmax_nll_loss");
  if (fused_sigmoid_family_supports(logits))
    return fused_sigmoid_family_nll(logits, targets, /*sigsoftmax=*/true);
  return torch::nll_loss(log_sigsoftmax_composed(logits), targets);
}

torch::Tensor log_sigsoftmax_composed(const torch::Tensor& logits) {
  check_logits(logits, "log_sigsoftmax_composed");
  const auto w = logits + torch::log_sigmoid(logits);  // (N, M)
  return torch::log_softmax(w, /*dim=*/-1);
}

torch::Tensor log_sigsoftmax_shifted(const torch::Tensor& logits, const torch::Tensor& b) {
  check_logits(logits, "log_sigsoftmax_shifted");
  TORCH_CHECK(b.defined() && b.numel() == 1, "log_sigsoftmax_shifted: b must be a scalar, got ",
              b.defined() ? b.sizes() : at::IntArrayRef{});
  const auto w = logits + torch::log_sigmoid(logits + b.reshape({}));  // (N, M)
  return torch::log_softmax(w, /*dim=*/-1);
}

SigsoftmaxImpl::SigsoftmaxImpl(const SigsoftmaxOptions& options_) : options(options_) { reset(); }

void SigsoftmaxImpl::reset() {
  b = options.learnable_bias() ? register_parameter("b", torch::full({}, options.initial_bias()))
                               : torch::Tensor();
}

torch::Tensor SigsoftmaxImpl::forward(const torch::Tensor& logits) {
  return b.defined() ? log_sigsoftmax_shifted(logits, b) : log_sigsoftmax(logits);
}

}  // namespace sb::heads
