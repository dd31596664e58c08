#include "trainers/lm/weight_drop_lstm.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "common/errors.h"
#include "trainers/lm/fused_lstm.h"

namespace sb::lm {

WeightDropLstmImpl::WeightDropLstmImpl(const WeightDropLstmOptions& options_) : options(options_) {
  reset();
}

void WeightDropLstmImpl::reset() {
  const auto I = options.input_size(), H = options.hidden_size();
  if (I < 1 || H < 1)
    throw OptionError::described(I < 1 ? "input_size" : "hidden_size",
                                 "WeightDropLstm: sizes must be >= 1, got input " +
                                     std::to_string(I) + ", hidden " + std::to_string(H));
  const double p = options.weight_drop();
  if (!(p >= 0 && p < 1))
    throw OptionError::described(
        "weight_drop",
        "WeightDropLstm: weight_drop must satisfy 0 <= p < 1, got " + std::to_string(p));
  const double bound = 1.0 / std::sqrt(static_cast<double>(H));
  auto init = [&](std::vector<int64_t> shape) {
    return torch::empty(shape).uniform_(-bound, bound);
  };
  weight_ih = register_parameter("weight_ih", init({4 * H, I}));
  weight_hh_raw = register_parameter("weight_hh_raw", init({4 * H, H}));
  bias_ih = register_parameter("bias_ih", init({4 * H}));
  bias_hh = register_parameter("bias_hh", init({4 * H}));
}

torch::Tensor WeightDropLstmImpl::effective_weight_hh() const {
  // Element-wise dropout of the weight itself, scaled by 1 / (1 - p), as AWD-LSTM's WeightDrop.
  return torch::dropout(weight_hh_raw, options.weight_drop(), is_training());
}

LstmState WeightDropLstmImpl::zero_state(int64_t batch_size) const {
  const auto z = torch::zeros({1, batch_size, options.hidden_size()}, weight_ih.options());
  return {z, z.clone()};
}

std::pair<torch::Tensor, LstmState> WeightDropLstmImpl::forward(const torch::Tensor& input,
                                                                const LstmState& state) {
  // internal: AwdLstm feeds each layer the (T, B, size) output of the one below, or the embedding.
  if (input.dim() != 3 || input.size(2) != options.input_size())
    throw std::logic_error("WeightDropLstm: input must be (T, B, " +
                           std::to_string(options.input_size()) + "), got " +
                           c10::str(input.sizes()));
  const auto s = state.first.defined() ? state : zero_state(input.size(1));
  const auto w_hh = effective_weight_hh();
  if (options.fused() && input.device().is_cpu()) {
    auto [output, h, c] = fused_lstm(input, s.first, s.second, weight_ih, w_hh, bias_ih, bias_hh);
    return {output, {h, c}};  // (T, B, H)
  }
  auto [output, h, c] = at::lstm(input, {s.first, s.second}, {weight_ih, w_hh, bias_ih, bias_hh},
                                 /*has_biases=*/true, /*num_layers=*/1, /*dropout=*/0.0,
                                 /*train=*/is_training(), /*bidirectional=*/false,
                                 /*batch_first=*/false);
  return {output, {h, c}};  // (T, B, H)
}

}  // namespace sb::lm
