#pragma once
// One LSTM layer over a BPTT window as a single autograd node, forward and backward written out
// (issue 5/5, "fused LSTM cells"): the same function as at::lstm with one layer (gates in
// PyTorch's order i, f, g, o; Hochreiter & Schmidhuber 1997, with the forget gate of Gers et al.
// 2000):
//   a_t = x_t W_ih^T + b_ih + b_hh + h_{t-1} W_hh^T                       // (B, 4H)
//   i, f, o = sigmoid(a_i, a_f, a_o),  g = tanh(a_g)
//   c_t = f * c_{t-1} + i * g,         h_t = o * tanh(c_t)
// What it changes is where the work goes (results/bench/step_profile.md): at::lstm runs every
// time step as separate operators and autograd nodes, and its backward multiplies the weight
// gradient one step at a time, T products of (4H, B) x (B, H) with B = 20 rows, far below the
// BLAS's rate. Here the gates of a step are one loop over (B, 4H) values, the input projection
// is one GEMM over the window forward ((T B, I) x (I, 4H)), and the backward keeps only the
// recurrent product per step (dh_{t-1} = da_t W_hh, sequential by nature); the weight and input
// gradients are one GEMM each over the whole window:
//   dW_hh = sum_t da_t^T h_{t-1} = dA^T [h_0 .. h_{T-1}],  dW_ih = dA^T X,  dX = dA W_ih,
//   db_ih = db_hh = sum over the T B rows of dA.
// Backward of the gates (s' = s (1 - s) for a sigmoid s, 1 - t^2 for t = tanh):
//   dh = dh_t (from above and from step t + 1),  dc = dc_{t+1 -> t} + dh * o * (1 - tanh(c_t)^2)
//   da_o = dh * tanh(c_t) * o (1 - o),  da_i = dc * g * i (1 - i),  da_g = dc * i * (1 - g^2),
//   da_f = dc * c_{t-1} * f (1 - f),   dc_{t -> t-1} = dc * f.
// CPU, float32 or float64; first derivatives only (a backward under create_graph throws).

#include <torch/torch.h>

#include <tuple>

namespace sb::lm {

/// input (T, B, I), h0 and c0 (1, B, H), w_ih (4H, I), w_hh (4H, H), b_ih and b_hh (4H) ->
/// output (T, B, H), h_T and c_T (1, B, H): at::lstm's one-layer, unidirectional result.
std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> fused_lstm(
    const torch::Tensor& input, const torch::Tensor& h0, const torch::Tensor& c0,
    const torch::Tensor& w_ih, const torch::Tensor& w_hh, const torch::Tensor& b_ih,
    const torch::Tensor& b_hh);

}  // namespace sb::lm
