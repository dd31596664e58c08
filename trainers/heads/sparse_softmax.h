#pragma once
// Sparse (top-k) softmax (Sun et al. 2021): softmax over the k largest logits, exactly 0 elsewhere
// (eq. 4), trained with L = logsumexp_{i in top-k} z_i - z_target (eq. 5), which stays finite
// even when the target falls outside the top k.

#include <torch/torch.h>

namespace sb::heads {

/// (N, M) -> (N, M): log-probabilities, -inf off the top k. Requires 1 <= k <= M.
/// Ties at the k-th value are broken by torch::topk.
torch::Tensor log_sparse_softmax(const torch::Tensor& logits, int64_t k);

/// Mean over rows of eq. 5. logits (N, M), targets (N,) integer.
torch::Tensor sparse_softmax_loss(const torch::Tensor& logits, const torch::Tensor& targets,
                                  int64_t k);

}  // namespace sb::heads
