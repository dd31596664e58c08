#pragma once
// The MNIST conv net of de Brebisson & Vincent 2016, sec. 4.1: two conv-pool layers (30 and 60
// feature maps, 5x5 filters), a fully connected layer of 500 rectifiers and the output layer,
// He initialisation of the hidden layers, zero initial output weights. The output layer is the
// "decoder" (M = 10, d = fc, with a bias) of any head of the registry (OutputHead), or the linear
// outputs of the squared error (mse).
//
// Pooling: 2x2 max pooling with stride 2. The paper says "pooling windows of size 5"; with 5x5
// filters on 28x28 images that does not leave room for a second conv-pool layer (28 -> 24 -> 4
// -> 0), so we take the usual 2x2 (28 -> 24 -> 12 -> 8 -> 4, 60 x 4 x 4 = 960 inputs to the FC
// layer): a named deviation (docs/protocol.md).

#include <torch/torch.h>

#include "common/head_spec.h"
#include "trainers/heads/output_head.h"

namespace sb::classifier {

struct ConvNetOptions {
  int64_t conv1 = 30, conv2 = 60, fc = 500, classes = 10;
  bool mse = false;            ///< squared-error outputs instead of a head
  HeadSpec head;               ///< the head (ignored for mse)
  double output_init_std = 0;  ///< 0 = zero output weights (the paper)
};

class ConvNetImpl : public torch::nn::Module {
 public:
  explicit ConvNetImpl(ConvNetOptions options);

  /// images (N, 1, 28, 28) float in [0, 1] -> the last hidden layer h (N, fc).
  torch::Tensor hidden(const torch::Tensor& images);
  /// h (N, fc) -> linear outputs o = W h + b (N, classes).
  torch::Tensor logits(const torch::Tensor& h);
  /// h (N, fc) -> log-probabilities (N, classes) of the head. Not for mse.
  torch::Tensor log_probs(const torch::Tensor& h);
  /// The training loss (mean over N) of h (N, fc) and targets (N): the head's loss (NLL; sparse:
  /// its eq. 5), or for mse sum_i (o_i - y_i)^2 with y the one-hot target (paper sec. 1, L_MSE).
  torch::Tensor loss(const torch::Tensor& h, const torch::Tensor& targets);

  const ConvNetOptions& options() const { return options_; }

  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr};
  torch::nn::Linear fc{nullptr}, out{nullptr};
  heads::OutputHead head{nullptr};  ///< not for mse

 private:
  ConvNetOptions options_;
};
TORCH_MODULE(ConvNet);

}  // namespace sb::classifier
