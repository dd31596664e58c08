#pragma once
// The toy bigram LM: the previous word's embedding (d) through a decoder (weight (M, d), bias) and
// any single output head (trainers/heads). Its log-output matrix has softmax's rank bound d + 2
// like any other model with a d-dimensional decoder input (Theorem 2 with a decoder bias).

#include <torch/torch.h>

#include "common/head_spec.h"
#include "trainers/heads/output_head.h"

namespace sb::bigram {

struct BigramOptions {
  BigramOptions(int64_t vocab_size, HeadSpec head) : vocab_size_(vocab_size), head_(head) {}
  TORCH_ARG(int64_t, vocab_size);
  TORCH_ARG(HeadSpec, head);
  TORCH_ARG(int64_t, d) = 16;
};

class BigramImpl : public torch::nn::Cloneable<BigramImpl> {
 public:
  explicit BigramImpl(const BigramOptions& options);
  void reset() override;

  /// previous words (N) int64 -> log P(. | previous word) (N, M).
  torch::Tensor log_probs(const torch::Tensor& previous);
  /// Mean training loss of the head over the N targets (OutputHead::loss).
  torch::Tensor loss(const torch::Tensor& previous, const torch::Tensor& targets);

  BigramOptions options;
  torch::nn::Embedding embedding{nullptr};
  torch::nn::Linear decoder{nullptr};
  heads::OutputHead head{nullptr};
};
TORCH_MODULE(Bigram);

}  // namespace sb::bigram
