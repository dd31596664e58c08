#include "trainers/lm/locked_dropout.h"

#include <string>

#include "common/errors.h"

namespace sb::lm {

torch::Tensor locked_dropout(const torch::Tensor& x, double p, bool training) {
  if (!(p >= 0 && p < 1))
    throw OptionError::described(
        "p", "locked_dropout: p must satisfy 0 <= p < 1, got " + std::to_string(p));
  if (!training || p == 0) return x;
  TORCH_CHECK(x.dim() == 3, "locked_dropout: expected (T, B, H), got ", x.sizes());
  const auto mask = torch::empty({1, x.size(1), x.size(2)}, x.options())
                        .bernoulli_(1 - p)
                        .div_(1 - p);  // (1, B, H), broadcast over T
  return x * mask;
}

LockedDropoutImpl::LockedDropoutImpl(const LockedDropoutOptions& options_) : options(options_) {
  reset();
}

void LockedDropoutImpl::reset() {
  if (!(options.p() >= 0 && options.p() < 1))
    throw OptionError::described(
        "p", "LockedDropout: p must satisfy 0 <= p < 1, got " + std::to_string(options.p()));
}

torch::Tensor LockedDropoutImpl::forward(const torch::Tensor& x) {
  return locked_dropout(x, options.p(), is_training());
}

}  // namespace sb::lm
