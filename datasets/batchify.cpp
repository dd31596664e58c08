#include "datasets/batchify.h"

#include <string>

#include "common/errors.h"

namespace sb::data {

torch::Tensor batchify(const std::vector<int64_t>& ids, int64_t batch_size) {
  const auto n = static_cast<int64_t>(ids.size());
  if (batch_size < 1 || n < batch_size)
    throw OptionError::described("batch_size", "batchify: batch size " +
                                                   std::to_string(batch_size) + " for " +
                                                   std::to_string(n) + " tokens");
  const int64_t rows = n / batch_size;
  const auto flat =
      torch::from_blob(const_cast<int64_t*>(ids.data()), {rows * batch_size}, torch::kLong);
  return flat.view({batch_size, rows}).t().contiguous();  // (rows, B)
}

torch::Tensor batchify_split(const std::vector<int64_t>& ids, int64_t batch_size, int64_t min_rows,
                             const std::string& split, const std::string& key,
                             const std::string& unit) {
  const auto n = static_cast<int64_t>(ids.size());
  const int64_t rows = batch_size > 0 ? n / batch_size : 0;
  if (rows < min_rows)
    throw OptionError::described(
        key, split + " split: " + std::to_string(n) + " " + unit + " give " + std::to_string(rows) +
                 (rows == 1 ? " row" : " rows") + " at " + key + " = " +
                 std::to_string(batch_size) + "; at least " + std::to_string(min_rows) +
                 " rows are needed (use more of the split or a smaller " + key + ")");
  return batchify(ids, batch_size);
}

std::pair<torch::Tensor, torch::Tensor> get_batch(const torch::Tensor& source, int64_t i,
                                                  int64_t seq_len) {
  const int64_t rows = source.size(0);
  if (i < 0 || i >= rows - 1 || seq_len < 1)
    throw OptionError::described("i, seq_len", "get_batch: row " + std::to_string(i) + ", length " +
                                                   std::to_string(seq_len) + " of " +
                                                   std::to_string(rows) + " rows");
  const int64_t len = std::min(seq_len, rows - 1 - i);
  return {source.slice(/*dim=*/0, i, i + len), source.slice(/*dim=*/0, i + 1, i + 1 + len)};
}

}  // namespace sb::data
