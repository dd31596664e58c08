#pragma once
// Activation regularisation (AR) and temporal activation regularisation (TAR) of AWD-LSTM
// (Merity et al. 2018, sec. 4.6; Merity, McCann & Socher 2017).

#include <torch/torch.h>

namespace sb::lm {

/// alpha * mean(h^2) over the last layer's *dropped* output h (T, B, H).
torch::Tensor activation_regularisation(const torch::Tensor& dropped, double alpha);

/// beta * mean((h_t - h_{t-1})^2) over the last layer's *undropped* output h (T, B, H), t >= 1.
/// Zero for T < 2 (no pair of steps).
torch::Tensor temporal_activation_regularisation(const torch::Tensor& raw, double beta);

}  // namespace sb::lm
