#pragma once
// Locked (variational) dropout (Gal & Ghahramani 2016, as used by AWD-LSTM, Merity et al. 2018):
// one Bernoulli mask per sequence and feature, shared by every time step.

#include <torch/torch.h>

namespace sb::lm {

/// x (T, B, H) -> x * m / (1 - p) with m ~ Bernoulli(1 - p) of shape (1, B, H) when training;
/// x unchanged otherwise or when p == 0. Throws sb::OptionError unless 0 <= p < 1.
torch::Tensor locked_dropout(const torch::Tensor& x, double p, bool training);

struct LockedDropoutOptions {
  /// Drop probability (AWD-LSTM PTB: 0.4 on inputs and outputs, 0.25 between layers).
  TORCH_ARG(double, p) = 0.5;
};

class LockedDropoutImpl : public torch::nn::Cloneable<LockedDropoutImpl> {
 public:
  explicit LockedDropoutImpl(const LockedDropoutOptions& options = {});
  void reset() override;
  /// x (T, B, H) -> (T, B, H)
  torch::Tensor forward(const torch::Tensor& x);
  LockedDropoutOptions options;
};
TORCH_MODULE(LockedDropout);

}  // namespace sb::lm
