#pragma once
// Batching for language-model training (AWD-LSTM convention): the token stream is cut into B
// contiguous streams, one per column, and BPTT windows slide down the rows.

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace sb::data {

/// ids -> (N / B, B) int64, column b = ids[b * (N / B) .. (b + 1) * (N / B)); the N mod B tail is
/// dropped. Throws sb::OptionError when B < 1 or fewer than B tokens.
torch::Tensor batchify(const std::vector<int64_t>& ids, int64_t batch_size);

/// batchify() of a corpus split after checking that it gives at least `min_rows` rows; throws
/// sb::OptionError (option `key`) naming the split, the setting and what is needed: "valid split:
/// 12 tokens give 1 row at eval_batch_size = 10; at least 2 rows are needed (use more of the split
/// or a smaller eval_batch_size)".
torch::Tensor batchify_split(const std::vector<int64_t>& ids, int64_t batch_size, int64_t min_rows,
                             const std::string& split, const std::string& key,
                             const std::string& unit = "tokens");

/// Rows [i, i + len) as input and [i + 1, i + 1 + len) as target, len clipped at the end:
/// x (len, B), y (len, B). Requires 0 <= i < rows - 1.
std::pair<torch::Tensor, torch::Tensor> get_batch(const torch::Tensor& source, int64_t i,
                                                  int64_t seq_len);

}  // namespace sb::data
