#pragma once
// The heads registry: every output activation chosen by its HeadSpec (head_spec.h), by name.

#include <torch/torch.h>

#include "common/head_spec.h"
#include "trainers/heads/mixture.h"
#include "trainers/heads/sigsoftmax.h"

namespace sb::heads {

/// Log-output of a parameter-free head (every head but mos/moss and sigsoftmax with b=1):
/// logits (N, M) -> log-probabilities (N, M). Throws std::invalid_argument for the others.
torch::Tensor log_output(const HeadSpec& spec, const torch::Tensor& logits);

struct OutputHeadOptions {
  OutputHeadOptions(HeadSpec spec, int64_t input_size, int64_t embedding_size)
      : spec_(spec), input_size_(input_size), embedding_size_(embedding_size) {}
  /// Which head, with its hyperparameters.
  TORCH_ARG(HeadSpec, spec);
  /// Size of the hidden vector given to forward(). Single heads need input_size == embedding_size.
  TORCH_ARG(int64_t, input_size);
  /// d: the decoder's input size (the vector the decoder multiplies; Theorem 2's d).
  TORCH_ARG(int64_t, embedding_size);
  /// mos/moss: the latent projection's bias (MixtureOptions::latent_bias).
  TORCH_ARG(bool, latent_bias) = true;
};

/// Any head on top of a (possibly tied) decoder: hidden (N, input_size) -> log P (N, M).
/// Owns the head's parameters (MoS/MoSS projections, sigsoftmax's b); not the decoder.
class OutputHeadImpl : public torch::nn::Cloneable<OutputHeadImpl> {
 public:
  explicit OutputHeadImpl(const OutputHeadOptions& options);
  void reset() override;

  /// hidden (N, input_size), decoder weight (M, d), bias (M) or undefined -> log P (N, M).
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& weight,
                        const torch::Tensor& bias);
  /// The training loss (mean over N): NLL of forward(), except sparse, which trains with its own
  /// eq. 5 (the NLL would be infinite for a target outside the top k). sigsoftmax and g:sigmoid
  /// use their fused head + NLL kernels (same value, no (N, M) log-probabilities).
  torch::Tensor loss(const torch::Tensor& hidden, const torch::Tensor& weight,
                     const torch::Tensor& bias, const torch::Tensor& targets);

  OutputHeadOptions options;
  Mixture mixture{nullptr};        ///< mos/moss only
  Sigsoftmax sigsoftmax{nullptr};  ///< sigsoftmax only
};
TORCH_MODULE(OutputHead);

}  // namespace sb::heads
