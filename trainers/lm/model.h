#pragma once
// AWD-LSTM (Merity et al. 2018) with any output head from the registry on top of its tied decoder:
//   ids (T, B) -> embedding dropout (whole words) -> locked dropout (dropouti)
//     -> LSTM layers with weight drop, locked dropout (dropouth) between them
//     -> locked dropout (dropout) on the last layer's output -> head(W = embedding, b = bias).
// The last layer has emsize units (single heads: d = emsize is the decoder input, Theorem 2's d)
// or nhidlast units for MoS/MoSS, whose latent tanh projection maps it to K contexts of size
// emsize (Yang et al. 2018); the contexts get their own locked dropout (dropoutl).

#include <torch/torch.h>

#include <utility>
#include <vector>

#include "common/head_spec.h"
#include "trainers/heads/output_head.h"
#include "trainers/lm/config.h"
#include "trainers/lm/weight_drop_lstm.h"

namespace sb::lm {

/// The model's shape and dropouts. The defaults are the paper's PTB settings, taken from the one
/// table that holds them (config.h: WordLmConfig's defaults, docs/protocol.md "AWD-LSTM training").
struct AwdLstmOptions {
  AwdLstmOptions(int64_t vocab_size, HeadSpec head) : vocab_size_(vocab_size), head_(head) {}
  /// M: vocabulary size (rows of the tied embedding / decoder).
  TORCH_ARG(int64_t, vocab_size);
  /// The output head (registry spelling in common/head_spec.h).
  TORCH_ARG(HeadSpec, head);
  /// Embedding size = d, the decoder's input size.
  TORCH_ARG(int64_t, emsize) = paper_defaults().emsize;
  /// Units of every LSTM layer but the last.
  TORCH_ARG(int64_t, nhid) = paper_defaults().nhid;
  /// Units of the last layer; 0 = emsize (required for single heads).
  TORCH_ARG(int64_t, nhidlast) = paper_defaults().nhidlast;
  TORCH_ARG(int64_t, nlayers) = paper_defaults().nlayers;
  /// Locked dropout on the last layer's output.
  TORCH_ARG(double, dropout) = paper_defaults().dropout;
  /// Locked dropout between LSTM layers.
  TORCH_ARG(double, dropouth) = paper_defaults().dropouth;
  /// Locked dropout on the word vectors.
  TORCH_ARG(double, dropouti) = paper_defaults().dropouti;
  /// Embedding dropout, whole words.
  TORCH_ARG(double, dropoute) = paper_defaults().dropoute;
  /// Weight drop on hidden-to-hidden matrices.
  TORCH_ARG(double, wdrop) = paper_defaults().wdrop;
  /// Locked dropout on MoS/MoSS contexts; unused by single heads.
  TORCH_ARG(double, dropoutl) = paper_defaults().dropoutl;
  /// MoS/MoSS: the latent projection's bias b_h; unused by single heads.
  TORCH_ARG(bool, latent_bias) = paper_defaults().latent_bias;
  /// CPU: each LSTM layer's window as one autograd node (fused_lstm.h) instead of at::lstm.
  TORCH_ARG(bool, fused_lstm) = false;
};

struct AwdLstmOutput {
  torch::Tensor output;          ///< (T, B, H_last): the head's input, after output dropout
  torch::Tensor raw_last;        ///< (T, B, H_last): the last layer before dropout (TAR reads it)
  std::vector<LstmState> state;  ///< one (h, c) per layer, to carry into the next segment
};

class AwdLstmImpl : public torch::nn::Cloneable<AwdLstmImpl> {
 public:
  explicit AwdLstmImpl(const AwdLstmOptions& options);
  /// Embedding U(-0.1, 0.1), decoder bias 0, LSTM layers U(-1/sqrt(H), 1/sqrt(H))
  /// (docs/protocol.md).
  void reset() override;

  /// ids (T, B) int64, state (empty = zeros) -> output, raw last layer, new state.
  AwdLstmOutput forward(const torch::Tensor& ids, const std::vector<LstmState>& state = {});
  /// The head's training loss, mean over the T * B targets: output (T, B, H_last), targets
  /// (T * B) in the same (time-major) order.
  torch::Tensor loss(const torch::Tensor& output, const torch::Tensor& targets);
  /// output (T, B, H_last) -> log P (T * B, M), time-major rows.
  torch::Tensor log_probs(const torch::Tensor& output);

  /// Mixture heads only: output (T, B, H_last) -> {log pi (N, K), log f (N, K, M)}, the prior and
  /// the experts' log-outputs (heads::MixtureImpl::components), time-major rows.
  std::pair<torch::Tensor, torch::Tensor> mixture_components(const torch::Tensor& output);

  std::vector<LstmState> zero_state(int64_t batch_size) const;
  /// d of Theorem 2: the decoder's input size (emsize).
  int64_t d() const { return options.emsize(); }
  int64_t last_size() const;

  AwdLstmOptions options;
  torch::Tensor embedding;     ///< (M, emsize), tied: also the decoder weight
  torch::Tensor decoder_bias;  ///< (M)
  std::vector<WeightDropLstm> rnns;
  heads::OutputHead head{nullptr};

 private:
  /// The latent dropout a mixture head applies to its contexts (N = T B rows): a locked dropout
  /// (dropoutl) over the T positions of each of the B sequences, as Yang et al.'s MoS code.
  heads::ContextDropout latent_dropout(int64_t T, int64_t B);
};
TORCH_MODULE(AwdLstm);

/// Detach a carried state from the graph of the previous segment (truncated BPTT).
std::vector<LstmState> detach_state(const std::vector<LstmState>& state);

}  // namespace sb::lm
