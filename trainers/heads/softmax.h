#pragma once
// softmax and softmax-abs as log-output functions over logits (N, M) -> (N, M).

#include <torch/torch.h>

namespace sb::heads {

/// log softmax(z): the baseline whose log-outputs Theorem 2 bounds to rank d + 1.
torch::Tensor log_softmax(const torch::Tensor& logits);

/// log softmax(|z|): the control of de Brebisson & Vincent (2016), "log-softmax-abs".
torch::Tensor log_softmax_abs(const torch::Tensor& logits);

}  // namespace sb::heads
