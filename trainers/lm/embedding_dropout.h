#pragma once
// Embedding dropout (Gal & Ghahramani 2016, AWD-LSTM's "dropoute"): drops whole words, i.e. rows
// of the embedding matrix, so every occurrence of a dropped word in the batch is zero.

#include <torch/torch.h>

namespace sb::lm {

/// weight (V, E), ids (T, B) int64 -> (T, B, E): embedding lookup with rows of `weight` kept with
/// probability 1 - p and scaled by 1 / (1 - p) when training. Throws unless 0 <= p < 1.
torch::Tensor embedding_dropout(const torch::Tensor& weight, const torch::Tensor& ids, double p,
                                bool training);

}  // namespace sb::lm
