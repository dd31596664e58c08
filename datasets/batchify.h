#pragma once
// Batching for language-model training (AWD-LSTM convention): the token stream is cut into B
// contiguous streams, one per column, and BPTT windows slide down the rows.

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace sb::data {

/// ids -> (N / B, B) int64, column b = ids[b * (N / B) .. (b + 1) * (N / B)); the N mod B tail is
/// dropped. Throws std::invalid_argument when B < 1 or fewer than B tokens.
torch::Tensor batchify(const std::vector<int64_t>& ids, int64_t batch_size);

/// Rows [i, i + len) as input and [i + 1, i + 1 + len) as target, len clipped at the end:
/// x (len, B), y (len, B). Requires 0 <= i < rows - 1.
std::pair<torch::Tensor, torch::Tensor> get_batch(const torch::Tensor& source, int64_t i,
                                                  int64_t seq_len);

}  // namespace sb::data
