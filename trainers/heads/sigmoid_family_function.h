#pragma once
// The fused sigsoftmax / g:sigmoid as a torch::autograd::Function over the kernels of
// sigmoid_family_kernel.h, with the closed-form backward of Theorem 5 (supplementary B.2 for
// g:sigmoid). Pays because the composed ops cost ~4.5x log_softmax (README, bench_heads).

#include <torch/torch.h>

namespace sb::heads {

/// log f(z) for (N, M) CPU float32/float64 logits; `sigsoftmax` false gives g:sigmoid.
/// First derivatives come from the fused kernel; under create_graph (double backward) the backward
/// is evaluated with differentiable torch ops of the same closed form instead.
torch::Tensor fused_log_sigmoid_family(const torch::Tensor& logits, bool sigsoftmax);

/// Mean over rows of -log f(z)[target] for (N, M) CPU float32/float64 logits and (N,) targets,
/// without materialising the log-probabilities: the fused training loss (head + NLL). Same
/// create_graph behaviour as above.
torch::Tensor fused_sigmoid_family_nll(const torch::Tensor& logits, const torch::Tensor& targets,
                                       bool sigsoftmax);

/// Whether the fused path can take these logits (CPU, float32/float64); else callers compose.
bool fused_sigmoid_family_supports(const torch::Tensor& logits);

/// A member's composed log-output (log_sigsoftmax_composed, log_g_sigmoid_composed).
using ComposedLogOutput = torch::Tensor (*)(const torch::Tensor&);

/// The family's public log-output, as log_sigsoftmax and log_g_sigmoid are: the logits checked
/// under the caller's `name`, then the fused Function where it applies, else `composed`.
torch::Tensor sigmoid_family_log_output(const torch::Tensor& logits, bool sigsoftmax,
                                        ComposedLogOutput composed, const char* name);

/// The family's training loss (sigsoftmax_nll_loss, g_sigmoid_nll_loss): logits and targets
/// checked under `name`, then the fused head + NLL where it applies, else nll_loss of `composed`.
torch::Tensor sigmoid_family_nll_loss(const torch::Tensor& logits, const torch::Tensor& targets,
                                      bool sigsoftmax, ComposedLogOutput composed,
                                      const char* name);

}  // namespace sb::heads
