#pragma once
// One LSTM layer with weight drop (DropConnect on the hidden-to-hidden matrix), as in AWD-LSTM
// (Merity et al. 2018, sec. 2): a fresh Bernoulli mask on W_hh for every forward call in training,
// shared by all time steps and sequences of that call; W_ih and the biases are never dropped.
// Runs ATen's fused LSTM (the kernel behind torch.nn.LSTM) with the dropped weight.

#include <torch/torch.h>

#include <utility>

namespace sb::lm {

/// (h, c), each (1, B, H).
using LstmState = std::pair<torch::Tensor, torch::Tensor>;

struct WeightDropLstmOptions {
  WeightDropLstmOptions(int64_t input_size, int64_t hidden_size)
      : input_size_(input_size), hidden_size_(hidden_size) {}
  TORCH_ARG(int64_t, input_size);
  TORCH_ARG(int64_t, hidden_size);
  /// Drop probability of the hidden-to-hidden weights in training (AWD-LSTM PTB: 0.5).
  TORCH_ARG(double, weight_drop) = 0.5;
  /// CPU: the window as one autograd node (fused_lstm.h) instead of at::lstm; the same function
  /// to float rounding, faster to train (results/bench/step_profile.md). Off by default: the
  /// committed results were trained with at::lstm.
  TORCH_ARG(bool, fused) = false;
};

class WeightDropLstmImpl : public torch::nn::Cloneable<WeightDropLstmImpl> {
 public:
  explicit WeightDropLstmImpl(const WeightDropLstmOptions& options);
  /// Registers weight_ih (4H, I), weight_hh_raw (4H, H), bias_ih, bias_hh (4H), all
  /// U(-1/sqrt(H), 1/sqrt(H)) as torch.nn.LSTM (docs/protocol.md).
  void reset() override;

  /// input (T, B, I), state or undefined (zeros) -> output (T, B, H), final state.
  std::pair<torch::Tensor, LstmState> forward(const torch::Tensor& input,
                                              const LstmState& state = {});
  /// The hidden-to-hidden matrix the next forward would use with this mask: weight_hh_raw
  /// dropped (training) or as is (evaluation). forward() draws its mask the same way.
  torch::Tensor effective_weight_hh() const;
  LstmState zero_state(int64_t batch_size) const;

  WeightDropLstmOptions options;
  torch::Tensor weight_ih, weight_hh_raw, bias_ih, bias_hh;
};
TORCH_MODULE(WeightDropLstm);

}  // namespace sb::lm
