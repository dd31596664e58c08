#include "trainers/heads/sigsoftmax.h"

#include "trainers/heads/check.h"
#include "trainers/heads/sigmoid_family_function.h"

namespace sb::heads {

torch::Tensor log_sigsoftmax(const torch::Tensor& logits) {
  return sigmoid_family_log_output(logits, /*sigsoftmax=*/true, log_sigsoftmax_composed,
                                   "log_sigsoftmax");
}

torch::Tensor sigsoftmax_nll_loss(const torch::Tensor& logits, const torch::Tensor& targets) {
  return sigmoid_family_nll_loss(logits, targets, /*sigsoftmax=*/true, log_sigsoftmax_composed,
                                 "sigsoftmax_nll_loss");
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
