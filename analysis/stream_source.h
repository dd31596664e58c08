#pragma once
// A MatrixSource over a stream of row blocks that is never stored: a model's outputs computed
// block by block (sbrank.analyse(blocks, M=...), python/sbrank/). The caller gives a way to start
// a pass (a factory of BlockPass); every pass must yield the same rows in the same order, in
// blocks of any sizes. The analysis reads rows in order from row 0 (stream_blocks in
// block_stream.h, the input-kind sample, the certificate's passes), so a read starting at row 0
// starts a new pass and every other read continues where the last one stopped; only the current
// block is held (memory O(block), never O(T M)).
//
// Errors name the block: a block whose width or dtype differs from the first one's, a pass that
// yields fewer or more rows than the first (T), a read out of order, a non-finite entry.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "analysis/array_source.h"

namespace sb::analysis {

/// One pass over the rows: next() hands out the next block (valid until the following call) or
/// returns false at the end.
class BlockPass {
 public:
  virtual ~BlockPass() = default;
  virtual bool next(ArrayView& block) = 0;
};
using PassFactory = std::function<std::unique_ptr<BlockPass>()>;

class StreamSource final : public MatrixSource {
 public:
  /// `cols` = M. `rows` = T when known (the first block alone is read here, for its dtype), else
  /// -1: a first pass counts the rows, checking every block. Throws sb::InputError naming the
  /// block for a bad one, sb::OptionError for M, T or input out of range.
  StreamSource(PassFactory start, int64_t cols, int64_t rows, std::string input = "");
  const std::string& path() const override { return name_; }
  int64_t rows() const override { return rows_; }
  int64_t cols() const override { return cols_; }
  bool float64() const override { return float64_; }
  const contract::LogProbHeader* header() const override { return nullptr; }
  std::string data_name() const override { return "the stream"; }
  std::string plain_kind() const override { return "a stream of row blocks"; }
  std::string declared_input() const override { return input_; }
  void read_rows(int64_t begin, int64_t count, float* out) const override;
  void read_rows(int64_t begin, int64_t count, double* out) const override;
  /// Passes started so far (the counting pass included).
  int passes() const { return passes_; }

 private:
  template <class Out>
  void read(int64_t begin, int64_t count, Out* out) const;
  bool next_block() const;  // the current pass's next block into block_, checked
  void check_block(const ArrayView& b) const;

  PassFactory start_;
  int64_t cols_, rows_;
  mutable bool float64_ = false;
  std::string input_, name_ = "<stream>";
  mutable std::mutex mutex_;  // the overlapped loader reads from a second thread
  mutable std::unique_ptr<BlockPass> pass_;
  mutable ArrayView block_;
  mutable int64_t block_index_ = -1, block_used_ = 0, position_ = 0;
  mutable int passes_ = 0;
  mutable bool dtype_known_ = false;
};

}  // namespace sb::analysis
