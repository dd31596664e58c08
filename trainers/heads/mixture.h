#pragma once
// Mixture heads: MoS (Yang et al. 2018) and MoSS (Kanai et al. 2018, eq. 19).
//   prior    pi = softmax(W_pi h)            (MoSS: sigsoftmax(W_pi h)); W_pi has no bias
//   contexts h_k = tanh(W_h h + b_h), reshaped to K vectors of size d (the decoder's input size)
//   experts  f_k = softmax(W h_k + b)        (MoSS: sigsoftmax), W/b the decoder shared with the
//            other heads (tied to the input embedding in AWD-LSTM)
//   log P    = logsumexp_k (log pi_k + log f_k)
// No 1e-8 floor inside the log: the reference MoS code computes log(P + 1e-8), which floors every
// log-probability at about -18.4 and so changes the numerical rank of the log-output matrix.

#include <torch/torch.h>

#include <utility>

namespace sb::heads {

struct MixtureOptions {
  MixtureOptions(int64_t input_size, int64_t embedding_size, int64_t experts)
      : input_size_(input_size), embedding_size_(embedding_size), experts_(experts) {}
  /// Size of the hidden vector h the mixture reads (the last LSTM layer's output).
  TORCH_ARG(int64_t, input_size);
  /// d: size of each context vector h_k, equal to the decoder's input size.
  TORCH_ARG(int64_t, embedding_size);
  /// K: number of experts (15 in the paper).
  TORCH_ARG(int64_t, experts);
  /// false: MoS (softmax experts and prior); true: MoSS (sigsoftmax experts and prior).
  TORCH_ARG(bool, sigsoftmax) = false;
  /// true: contexts tanh(W_h h + b_h), as Yang et al.'s code; false: tanh(W_h h). Measured on the
  /// cpu profile's small model (README, "Why the mixtures stayed near the bound"): with b_h and
  /// lr 20 the mixture's gradient norm is ~10x softmax's and its loss stalls near the unigram
  /// level; without b_h it learns at softmax's pace.
  TORCH_ARG(bool, latent_bias) = true;
};

class MixtureImpl : public torch::nn::Cloneable<MixtureImpl> {
 public:
  explicit MixtureImpl(const MixtureOptions& options);
  void reset() override;

  /// h (N, input_size) -> tanh(W_h h + b_h), (N, K * d): the context vectors, flat, so that a
  /// trainer can apply its (locked) latent dropout before mix().
  torch::Tensor contexts(const torch::Tensor& h);
  /// h (N, input_size) -> prior logits (N, K).
  torch::Tensor prior_logits(const torch::Tensor& h);
  /// The mixture's parts: contexts (N, K * d), prior logits (N, K), decoder weight (M, d), bias
  /// (M) or undefined -> {log pi (N, K), log f (N, K, M)}, log f[n, k] = expert k's
  /// log-output. mix() is logsumexp over K of log pi + log f.
  std::pair<torch::Tensor, torch::Tensor> components(const torch::Tensor& contexts,
                                                     const torch::Tensor& prior_logits,
                                                     const torch::Tensor& weight,
                                                     const torch::Tensor& bias);
  /// contexts (N, K * d), prior logits (N, K), decoder weight (M, d), bias (M) or undefined
  /// -> log P (N, M).
  torch::Tensor mix(const torch::Tensor& contexts, const torch::Tensor& prior_logits,
                    const torch::Tensor& weight, const torch::Tensor& bias);
  /// Mean negative log-likelihood of targets (N) int64: equal to
  /// nll_loss(mix(contexts, prior_logits, weight, bias), targets), but it only forms each expert's
  /// log-normaliser and its target column, log P(y) = logsumexp_k(log pi_k + log f_k(y)), instead
  /// of the (N, K, M) mixture over the whole vocabulary and its logsumexp over K. On CPU float
  /// tensors the decoder and -log f_k(y) are one node (linear_row_nll_function.h): no (N K, M)
  /// log-probabilities, one pass over the logits forward, and a backward of GEMMs only.
  torch::Tensor nll(const torch::Tensor& contexts, const torch::Tensor& prior_logits,
                    const torch::Tensor& weight, const torch::Tensor& bias,
                    const torch::Tensor& targets);
  /// mix(contexts(h), prior_logits(h), weight, bias).
  torch::Tensor forward(const torch::Tensor& h, const torch::Tensor& weight,
                        const torch::Tensor& bias);

  MixtureOptions options;
  torch::nn::Linear latent{nullptr};  ///< W_h, b_h (latent_bias): input_size -> K * d
  torch::nn::Linear prior{nullptr};   ///< W_pi: input_size -> K, no bias

 private:
  /// Checks the shapes of contexts (N, K * d), prior logits (N, K) and the decoder weight (M, d).
  void expert_logits_check(const torch::Tensor& contexts, const torch::Tensor& prior_logits,
                           const torch::Tensor& weight) const;
  /// Checks the shapes; returns the experts' logits (N * K, M), row n * K + k for expert k.
  torch::Tensor expert_logits(const torch::Tensor& contexts, const torch::Tensor& prior_logits,
                              const torch::Tensor& weight, const torch::Tensor& bias);
  /// The log of the output function every expert and the prior go through, over the last dim:
  /// softmax for MoS, sigsoftmax for MoSS (eq. 19).
  torch::Tensor log_output(const torch::Tensor& logits);
};
TORCH_MODULE(Mixture);

}  // namespace sb::heads
