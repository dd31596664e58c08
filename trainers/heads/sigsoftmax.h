#pragma once
// sigsoftmax (Kanai et al. 2018, Definition 1):
// clang-format off
//   f_i = exp(z_i) sigmoid(z_i) / sum_m exp(z_m) sigmoid(z_m)
//   computed in log form: log f = w - logsumexp(w),  w = z + logsigmoid(z) = 2z - softplus(z),
// clang-format on
// which stays finite for rows like [-300, -200, -150] (asymptote 2(z - max z)).

#include <torch/torch.h>

namespace sb::heads {

/// log sigsoftmax(z), (N, M) -> (N, M). CPU float32/float64 run the fused kernel with the
/// closed-form backward of Theorem 5; other devices/dtypes use log_sigsoftmax_composed.
torch::Tensor log_sigsoftmax(const torch::Tensor& logits);

/// The same from plain torch ops (autograd derives the backward). Reference for the fused path.
torch::Tensor log_sigsoftmax_composed(const torch::Tensor& logits);

/// The training loss, mean over rows of -log sigsoftmax(z)[target]: logits (N, M), targets (N,).
/// Equals nll_loss(log_sigsoftmax(z), targets); on CPU float32/float64 a fused kernel computes it
/// without the (N, M) log-probabilities (no log per element), else composed ops.
torch::Tensor sigsoftmax_nll_loss(const torch::Tensor& logits, const torch::Tensor& targets);

/// Theorem 4's variant g(z) = exp(z) sigmoid(z + b) with a scalar b (a 0-dim tensor, may require
/// grad). As b -> +inf it tends to softmax; b = 0 is sigsoftmax.
torch::Tensor log_sigsoftmax_shifted(const torch::Tensor& logits, const torch::Tensor& b);

/// Options of the Sigsoftmax module.
struct SigsoftmaxOptions {
  /// Learn the scalar b of Theorem 4 (the paper's experiments keep it off).
  TORCH_ARG(bool, learnable_bias) = false;
  /// Initial value of b when learnable.
  TORCH_ARG(double, initial_bias) = 0.0;
};

/// Module form: owns b when it is learnable, otherwise a thin wrapper of log_sigsoftmax.
class SigsoftmaxImpl : public torch::nn::Cloneable<SigsoftmaxImpl> {
 public:
  explicit SigsoftmaxImpl(const SigsoftmaxOptions& options = {});
  void reset() override;
  /// logits (N, M) -> log f (N, M)
  torch::Tensor forward(const torch::Tensor& logits);

  SigsoftmaxOptions options;
  torch::Tensor b;  ///< 0-dim; undefined unless learnable_bias
};
TORCH_MODULE(Sigsoftmax);

}  // namespace sb::heads
