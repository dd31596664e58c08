#pragma once
// The character-level LSTM LM of Kanai et al. 2018, supplementary D.1: embedding -> LSTM ->
// decoder (weight (M, d), bias, d = nhid) -> any single output head (trainers/heads). With M ~ 50
// symbols and d >= M the softmax bottleneck cannot bind: Theorem 2's bound d + 2 exceeds M.
// latent > 0 puts a linear map nhid -> latent (no bias, no nonlinearity) between the LSTM and the
// decoder, so d = latent: the same LSTM with an output layer whose bound d + 2 can lie below M
// (the mechanism control, pipeline/profiles/mechanism.toml). The map is linear, so the logits
// D (P h) + b still lie in an affine space of dimension latent and the bound is unchanged.

#include <torch/torch.h>

#include <utility>

#include "common/head_spec.h"
#include "trainers/heads/output_head.h"

namespace sb::charlm {

using CharState = std::pair<torch::Tensor, torch::Tensor>;  ///< h, c: (nlayers, B, nhid) each

class CharLstmImpl : public torch::nn::Module {
 public:
  /// latent = 0: no projection, d = nhid.
  CharLstmImpl(int64_t vocab_size, HeadSpec spec, int64_t emsize, int64_t nhid, int64_t nlayers,
               int64_t latent = 0);

  CharState zero_state(int64_t batch) const;
  /// x (len, B) int64 -> the decoder's input (len * B, d), and the state after the last step.
  std::pair<torch::Tensor, CharState> forward(const torch::Tensor& x, const CharState& state);
  /// output (N, d) -> log P (N, M).
  torch::Tensor log_probs(const torch::Tensor& output);
  /// Mean loss of the head over the N targets.
  torch::Tensor loss(const torch::Tensor& output, const torch::Tensor& targets);
  int64_t d() const { return latent_ > 0 ? latent_ : nhid_; }
  const HeadSpec& head_spec() const { return spec_; }

  torch::nn::Embedding embedding{nullptr};
  torch::nn::LSTM lstm{nullptr};
  torch::nn::Linear projection{nullptr};  ///< (latent, nhid), no bias; only when latent > 0
  torch::nn::Linear decoder{nullptr};
  heads::OutputHead head{nullptr};

 private:
  HeadSpec spec_;
  int64_t nhid_, nlayers_, latent_;
};
TORCH_MODULE(CharLstm);

}  // namespace sb::charlm
