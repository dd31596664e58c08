#pragma once
// Bengio et al.'s feed-forward neural language model (2003) as de Brebisson & Vincent (2016,
// sec. 4.4.1) use it: the embeddings of the n previous words, concatenated, through ReLU hidden
// layers, then a decoder (weight (M, d), bias) and any single output head (trainers/heads).
// Initialisation (their sec. 4): hidden weights N(0, 2 / fan_in) (He et al. 2015), zero biases;
// output weights zero and the output bias such that the initial outputs are the unigram
// distribution (trainers/heads/unigram_bias.h). Embeddings N(0, 1) (LibTorch's default; the
// paper does not say).

#include <torch/torch.h>

#include <vector>

#include "common/head_spec.h"
#include "trainers/heads/output_head.h"

namespace sb::nplm {

struct NplmOptions {
  NplmOptions(int64_t vocab_size, HeadSpec head) : vocab_size_(vocab_size), head_(head) {}
  TORCH_ARG(int64_t, vocab_size);
  TORCH_ARG(HeadSpec, head);
  TORCH_ARG(int64_t, context) = 6;
  TORCH_ARG(int64_t, emsize) = 250;
  TORCH_ARG(int64_t, layers) = 2;
  TORCH_ARG(int64_t, hidden) = 809;
  /// M, the decoder's outputs: 0 = vocab_size (the LM); C for the `classes` task.
  TORCH_ARG(int64_t, outputs) = 0;

 public:
  int64_t M() const { return outputs_ > 0 ? outputs_ : vocab_size_; }
};

class NplmImpl : public torch::nn::Module {
 public:
  /// `unigram` (M), float64: the distribution the untrained model outputs
  /// (trainers/heads/unigram_bias.h).
  NplmImpl(const NplmOptions& options, const torch::Tensor& unigram);

  /// contexts (N, n) int64 -> the last hidden layer (N, d).
  torch::Tensor features(const torch::Tensor& contexts);
  /// contexts (N, n) -> log P(. | context) (N, M).
  torch::Tensor log_probs(const torch::Tensor& contexts);
  /// Mean training loss of the head over the N targets (OutputHead::loss).
  torch::Tensor loss(const torch::Tensor& contexts, const torch::Tensor& targets);
  /// Theorem 2's d: the size of the vector the decoder multiplies.
  int64_t d() const { return options.hidden(); }

  NplmOptions options;
  torch::nn::Embedding embedding{nullptr};
  std::vector<torch::nn::Linear> hidden_layers;
  torch::nn::Linear decoder{nullptr};
  heads::OutputHead head{nullptr};
};
TORCH_MODULE(Nplm);

}  // namespace sb::nplm
