#pragma once
// A decoder-only Transformer LM in GPT-2's shape (Radford et al. 2019; Vaswani et al. 2017 for the
// attention): token and learned position embeddings -> `layers` pre-LayerNorm blocks
//   x <- x + Dropout(W_o Attn(LN_1(x)))        causal multi-head self-attention
//   x <- x + Dropout(W_2 GELU(W_1 LN_2(x)))    the MLP
// -> a final normalisation -> the decoder, tied to the token embedding (Press & Wolf 2017), with
// or without a bias -> any output head of trainers/heads.
//
// The rank of the log-output matrix (common/head_spec.h, head_rank_bound): the decoder's input is
// the final normalisation's output h (d = d_model). After a LayerNorm, h = gamma * u + beta with u
// centred, so h spans d - 1 directions plus beta's constant: a softmax head's log-probabilities
// have rank at most d + 1 whatever the decoder bias (d + 2 would be Theorem 2's count for a biased
// decoder). RMSNorm and none leave Theorem 2's d + 1 + bias. A mixture head (MoS, MoSS) puts its
// own projection (tanh) between h and the decoder, so its decoder input is no normalisation's
// output: its dump states final_norm "none" (final_norm_of_dump).
//
// Initialisation (GPT-2): every Linear and Embedding weight N(0, 0.02), the residual branches'
// output projections N(0, 0.02 / sqrt(2 layers)), biases zero, norm gains one.

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "common/head_spec.h"
#include "trainers/heads/output_head.h"

namespace sb::transformer {

struct TransformerLmOptions {
  TransformerLmOptions(int64_t vocab_size, HeadSpec head, int64_t d_model)
      : vocab_size_(vocab_size), head_(head), d_model_(d_model) {}
  TORCH_ARG(int64_t, vocab_size);  ///< M
  TORCH_ARG(HeadSpec, head);       ///< the output head
  TORCH_ARG(int64_t, d_model);     ///< d: residual width and the decoder's input size
  TORCH_ARG(int64_t, layers) = 2;
  TORCH_ARG(int64_t, heads) = 4;  ///< attention heads; d_model % heads == 0
  TORCH_ARG(int64_t, d_ff) = 0;   ///< MLP width; 0 = 4 d_model
  TORCH_ARG(int64_t, context) = 64;
  TORCH_ARG(double, dropout) = 0.1;
  TORCH_ARG(FinalNorm, final_norm) = FinalNorm::layernorm;
  TORCH_ARG(bool, decoder_bias) = true;
};

/// One pre-LayerNorm block: causal self-attention, then the GELU MLP, each on a residual branch.
class BlockImpl : public torch::nn::Cloneable<BlockImpl> {
 public:
  BlockImpl(int64_t d_model, int64_t heads, int64_t d_ff, double dropout, int64_t layers);
  void reset() override;
  /// x (B, T, d), mask (T, T) bool, true above the diagonal -> (B, T, d).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask);

  torch::nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  torch::nn::Linear qkv{nullptr};  ///< (3 d, d): queries, keys, values
  torch::nn::Linear attn_out{nullptr};
  torch::nn::Linear fc{nullptr}, fc_out{nullptr};
  torch::nn::Dropout attn_drop{nullptr}, resid_drop{nullptr};

 private:
  int64_t d_model_, heads_, d_ff_, layers_;
  double dropout_;
};
TORCH_MODULE(Block);

class TransformerLmImpl : public torch::nn::Cloneable<TransformerLmImpl> {
 public:
  explicit TransformerLmImpl(const TransformerLmOptions& options);
  void reset() override;

  /// tokens (B, T) int64, T <= context -> the decoder's input h (B * T, d), rows in (b, t) order.
  torch::Tensor forward(const torch::Tensor& tokens);
  /// h (N, d) -> log P (N, M).
  torch::Tensor log_probs(const torch::Tensor& h);
  /// The head's mean training loss over the N targets.
  torch::Tensor loss(const torch::Tensor& h, const torch::Tensor& targets);
  int64_t d() const { return options.d_model(); }
  /// What the dump's attribute final_norm states: the model's final normalisation, or "none"
  /// for a mixture head (its tanh projection stands between the norm and the decoder).
  std::string final_norm_of_dump() const;

  TransformerLmOptions options;
  torch::nn::Embedding tokens{nullptr};     ///< (M, d), also the decoder's weight
  torch::nn::Embedding positions{nullptr};  ///< (context, d)
  torch::nn::Dropout embed_drop{nullptr};
  torch::nn::ModuleList blocks{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};  ///< final_norm layernorm only
  torch::Tensor rms_gain;              ///< final_norm rmsnorm only: (d)
  torch::Tensor decoder_bias;          ///< (M) or undefined
  heads::OutputHead head{nullptr};
};
TORCH_MODULE(TransformerLm);

}  // namespace sb::transformer
