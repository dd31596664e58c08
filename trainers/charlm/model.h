#pragma once
// The character-level LSTM LM of Kanai et al. 2018, supplementary D.1: embedding -> LSTM ->
// decoder (weight (M, d), bias, d = nhid) -> any single output head (trainers/heads). With M ~ 50
// symbols and d >= M the softmax bottleneck cannot bind: Theorem 2's bound d + 2 exceeds M.

#include <torch/torch.h>

#include <utility>

#include "common/head_spec.h"
#include "trainers/heads/output_head.h"

namespace sb::charlm {

using CharState = std::pair<torch::Tensor, torch::Tensor>;  ///< h, c: (nlayers, B, nhid) each

class CharLstmImpl : public torch::nn::Module {
 public:
  CharLstmImpl(int64_t vocab_size, HeadSpec spec, int64_t emsize, int64_t nhid, int64_t nlayers);

  CharState zero_state(int64_t batch) const;
  /// x (len, B) int64 -> the LSTM output (len * B, nhid), and the state after the last step.
  std::pair<torch::Tensor, CharState> forward(const torch::Tensor& x, const CharState& state);
  /// output (N, nhid) -> log P (N, M).
  torch::Tensor log_probs(const torch::Tensor& output);
  /// Mean loss of the head over the N targets.
  torch::Tensor loss(const torch::Tensor& output, const torch::Tensor& targets);
  int64_t d() const { return nhid_; }
  const HeadSpec& head_spec() const { return spec_; }

  torch::nn::Embedding embedding{nullptr};
  torch::nn::LSTM lstm{nullptr};
  torch::nn::Linear decoder{nullptr};
  heads::OutputHead head{nullptr};

 private:
  HeadSpec spec_;
  int64_t nhid_, nlayers_;
};
TORCH_MODULE(CharLstm);

}  // namespace sb::charlm
