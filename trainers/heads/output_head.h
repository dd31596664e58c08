#pragma once
// The heads registry: every output activation chosen by its HeadSpec (head_spec.h), by name.

#include <torch/torch.h>

#include <functional>
#include <utility>

#include "common/head_spec.h"
#include "trainers/heads/adaptive.h"
#include "trainers/heads/mixture.h"
#include "trainers/heads/sigsoftmax.h"

namespace sb::heads {

/// Log-output of a parameter-free head (every head but mos/moss, the adaptive heads and
/// sigsoftmax with b=1):
/// logits (N, M) -> log-probabilities (N, M). Throws sb::OptionError (option "head") for the
/// others.
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
  /// adaptive heads: M, the (frequency-sorted) vocabulary; required (> 0) by them only.
  TORCH_ARG(int64_t, vocab_size) = 0;
  /// adaptive heads: the model's decoder has a bias, so the cluster entries get one too
  /// (AdaptiveOptions::cluster_bias).
  TORCH_ARG(bool, decoder_bias) = true;
};

/// A mixture's latent dropout (Yang et al. 2018's dropoutl: a locked dropout over the positions
/// of a sequence), applied to the contexts (N, K d) before the experts. The head decides whether
/// it has contexts: single heads never call it.
using ContextDropout = std::function<torch::Tensor(const torch::Tensor& contexts)>;

/// Any head on top of a (possibly tied) decoder: hidden (N, input_size) -> log P (N, M).
/// Owns the head's parameters (MoS/MoSS projections, sigsoftmax's b); not the decoder.
class OutputHeadImpl : public torch::nn::Cloneable<OutputHeadImpl> {
 public:
  explicit OutputHeadImpl(const OutputHeadOptions& options);
  void reset() override;

  /// hidden (N, input_size), decoder weight (M, d), bias (M) or undefined -> log P (N, M).
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& weight,
                        const torch::Tensor& bias, const ContextDropout& dropout = {});
  /// The training loss (mean over N): NLL of forward(), except sparse, which trains with its own
  /// eq. 5 (the NLL would be infinite for a target outside the top k). softmax, sigsoftmax,
  /// g:sigmoid and the mixtures use fused head + NLL paths (same value, no (N, M)
  /// log-probabilities); on CPU float, softmax, sigsoftmax and the mixtures' experts take the
  /// decoder into the node too (linear_row_nll_function.h: a backward of GEMMs only).
  torch::Tensor loss(const torch::Tensor& hidden, const torch::Tensor& weight,
                     const torch::Tensor& bias, const torch::Tensor& targets,
                     const ContextDropout& dropout = {});
  /// mos/moss: the parts of the log-output, log pi (N, K) and log f (N, K, M)
  /// (Mixture::components); throws std::logic_error for a single head.
  std::pair<torch::Tensor, torch::Tensor> components(const torch::Tensor& hidden,
                                                     const torch::Tensor& weight,
                                                     const torch::Tensor& bias,
                                                     const ContextDropout& dropout = {});

  OutputHeadOptions options;

 private:
  /// mos/moss: contexts (N, K d) after `dropout`, then prior logits (N, K), in that order (the
  /// dropout's random draw comes first, as AWD-LSTM's MoS code).
  std::pair<torch::Tensor, torch::Tensor> mixture_inputs(const torch::Tensor& hidden,
                                                         const ContextDropout& dropout);

 public:
  Mixture mixture{nullptr};        ///< mos/moss only
  Sigsoftmax sigsoftmax{nullptr};  ///< sigsoftmax only
  Adaptive adaptive{nullptr};      ///< adaptive / adaptive_sigsoftmax only
};
TORCH_MODULE(OutputHead);

}  // namespace sb::heads
