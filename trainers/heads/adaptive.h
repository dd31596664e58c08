#pragma once
// Adaptive softmax (Grave et al. 2017, "Efficient softmax approximation for GPUs", section 4.1-4.3)
// and adaptive sigsoftmax (Kanai et al. 2018, supplementary E: every softmax replaced by
// sigsoftmax), over a vocabulary sorted by training frequency (datasets/corpus.h,
// sort_by_frequency).
// clang-format off
//   clusters: the head V_0 = [0, c_1) plus one entry per tail cluster; tail i: V_i = [c_i, c_(i+1)),
//             i = 1..n, c_(n+1) = M
//   z_0 = [W[0:c_1] h + b[0:c_1], W_c h + b_c]             head logits (N, c_1 + n)
//   z_i = U_i (P_i h) + b[V_i]                             tail logits (N, |V_i|)
//   log p(w) = log g(z_0)[w]                               w in V_0
//   log p(w) = log g(z_0)[c_1 + i - 1] + log g(z_i)[w - c_i]   w in V_i
// clang-format on
// g = softmax (adaptive) or sigsoftmax (adaptive_sigsoftmax). W, b: the model's decoder (tied to
// the word LM's embedding: the head cluster's words share their input vectors; b gives every
// word, head or tail, its bias, where Grave et al.'s tails have none, so a tail word's frequency
// need not be learnt through its low-dimensional projection); W_c, b_c, P_i (d_i x d,
// d_i = max(1, floor(d / div^i))) and U_i (|V_i| x d_i) are the head's own.
// Training evaluates each row's target cluster only (nll); the dump assembles every word's
// log-probability (forward), so a dump keeps the HDF5 contract. The rank bound of the log-output
// (d + 1 + n + [bias]) is derived in common/head_spec.h, head_rank_bound.

#include <torch/torch.h>

#include <vector>

namespace sb::heads {

/// The log-output of every word: head logits (N, c_1 + n) and tail logits [(N, |V_i|)] ->
/// log p (N, M), M = c_1 + sum |V_i|. `sigsoftmax`: g = sigsoftmax, else softmax.
torch::Tensor adaptive_log_output(const torch::Tensor& head_logits,
                                  const std::vector<torch::Tensor>& tail_logits, bool sigsoftmax);

struct AdaptiveOptions {
  AdaptiveOptions(int64_t input_size, int64_t vocab_size, std::vector<int64_t> cutoffs)
      : input_size_(input_size), vocab_size_(vocab_size), cutoffs_(std::move(cutoffs)) {}
  /// d: the size of the hidden vector (and of the decoder rows the head cluster uses).
  TORCH_ARG(int64_t, input_size);
  /// M: the vocabulary, sorted by training frequency.
  TORCH_ARG(int64_t, vocab_size);
  /// c_1 < ... < c_n < M (HeadSpec::cutoffs).
  TORCH_ARG(std::vector<int64_t>, cutoffs);
  /// Tail cluster i's projection has max(1, floor(d / div^i)) dimensions (Grave et al.: 4).
  TORCH_ARG(double, div) = 4.0;
  /// Every softmax replaced by sigsoftmax (adaptive_sigsoftmax).
  TORCH_ARG(bool, sigsoftmax) = false;
  /// The cluster entries of the head logits get a bias b_c (the model passes its decoder bias).
  TORCH_ARG(bool, cluster_bias) = true;
};

/// The adaptive head's own parameters (cluster rows, projections, tail outputs) and its two
/// evaluations. The decoder (weight (M, d), bias (M) or undefined) is passed in, as to every head.
class AdaptiveImpl : public torch::nn::Cloneable<AdaptiveImpl> {
 public:
  explicit AdaptiveImpl(const AdaptiveOptions& options);
  void reset() override;

  /// hidden (N, d) -> log p (N, M), every word assembled.
  torch::Tensor forward(const torch::Tensor& hidden, const torch::Tensor& weight,
                        const torch::Tensor& bias);
  /// Mean over N of -log p(target), computing only each row's target cluster: the head logits
  /// for every row, tail cluster i's logits for the rows whose target lies in it.
  torch::Tensor nll(const torch::Tensor& hidden, const torch::Tensor& weight,
                    const torch::Tensor& bias, const torch::Tensor& targets);

  /// The head logits z_0 (N, c_1 + n).
  torch::Tensor head_logits(const torch::Tensor& hidden, const torch::Tensor& weight,
                            const torch::Tensor& bias);
  /// Tail cluster i's logits (N, |V_i|), i = 0..n-1, with the decoder bias of its words when
  /// `bias` is defined.
  torch::Tensor tail_logits(const torch::Tensor& hidden, const torch::Tensor& bias, size_t i);
  /// Tail cluster i's projection size d_i.
  int64_t tail_dim(size_t i) const;

  AdaptiveOptions options;
  torch::Tensor cluster_weight;                   ///< (n, d)
  torch::Tensor cluster_bias;                     ///< (n) or undefined
  std::vector<torch::Tensor> projection, output;  ///< P_i (d_i, d), U_i (|V_i|, d_i)
};
TORCH_MODULE(Adaptive);

}  // namespace sb::heads
