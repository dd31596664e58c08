#include "analysis/stream_source.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "common/errors.h"

namespace sb::analysis {

namespace {

std::string block_name(int pass, int64_t index) {
  return "<stream>: pass " + std::to_string(pass) + ", block " + std::to_string(index);
}

}  // namespace

StreamSource::StreamSource(PassFactory start, int64_t cols, int64_t rows, std::string input)
    : start_(std::move(start)), cols_(cols), rows_(rows), input_(std::move(input)) {
  if (cols_ < 1)
    throw OptionError("<stream>: M", "the vocabulary size M >= 1", std::to_string(cols_));
  if (rows_ == 0 || rows_ < -1)
    throw OptionError("<stream>: T", "T >= 1 (or unknown)", std::to_string(rows_));
  if (!input_.empty() && input_ != "logprobs" && input_ != "logits")
    throw OptionError("<stream>: input", "logprobs or logits", "'" + input_ + "'");
  // The dtype from the first block; without T, a whole first pass counts the rows (every block
  // checked). With T, the analysis's own passes check that each yields T rows.
  pass_ = start_();
  ++passes_;
  int64_t counted = 0;
  while ((rows_ < 0 || !dtype_known_) && next_block()) counted += block_.rows;
  if (counted == 0)
    throw InputError::described("<stream>", "", "<stream>: the first pass yields no rows");
  if (rows_ < 0) rows_ = counted;
  pass_.reset();
}

void StreamSource::check_block(const ArrayView& b) const {
  const std::string where = block_name(passes_, block_index_);
  if (b.cols != cols_)
    throw InputError(where, "width", "M = " + std::to_string(cols_) + " columns",
                     std::to_string(b.cols));
  if (b.rows < 0 || (b.rows > 0 && !b.data))
    throw InputError::described(where, "", where + ": no data");
  if (!dtype_known_) {
    float64_ = b.float64;
    dtype_known_ = true;
  } else if (b.float64 != float64_) {
    throw InputError(where, "dtype",
                     std::string(float64_ ? "float64" : "float32") + " as the first block",
                     b.float64 ? "float64" : "float32");
  }
  // Non-finite entries: named here, by block, row and column.
  const char* base = static_cast<const char*>(b.data);
  for (int64_t r = 0; r < b.rows; ++r)
    for (int64_t c = 0; c < b.cols; ++c) {
      const char* p = base + r * b.row_stride + c * b.col_stride;
      double v;
      if (b.float64) {
        std::memcpy(&v, p, sizeof v);
      } else {
        float f;
        std::memcpy(&f, p, sizeof f);
        v = f;
      }
      if (!std::isfinite(v))
        throw InputError::described(
            where, "row " + std::to_string(r) + ", column " + std::to_string(c),
            where + ": row " + std::to_string(r) + ", column " + std::to_string(c) +
                ": not finite (" + std::to_string(v) + ")");
    }
}

bool StreamSource::next_block() const {
  ArrayView b;
  if (!pass_->next(b)) return false;
  ++block_index_;
  check_block(b);
  block_ = b;
  block_used_ = 0;
  return true;
}

template <class Out>
void StreamSource::read(int64_t begin, int64_t count, Out* out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (begin == 0) {  // a new pass
    pass_ = start_();
    ++passes_;
    block_index_ = -1;
    block_used_ = 0;
    block_.rows = 0;
    position_ = 0;
  }
  // internal: the analysis reads a stream in order from row 0 (block_stream.h, the input-kind
  // sample, the certificate's passes); no block's content can reorder its reads.
  if (!pass_ || begin != position_)
    throw std::logic_error("<stream>: rows read out of order: [" + std::to_string(begin) + ", " +
                           std::to_string(begin + count) + ") after row " +
                           std::to_string(position_) + " (a stream is read from row 0 on)");
  int64_t filled = 0;
  while (filled < count) {
    if (block_used_ == block_.rows) {
      if (!next_block())
        throw InputError::described("<stream>", "",
                                    "<stream>: pass " + std::to_string(passes_) + " yields " +
                                        std::to_string(position_ + filled) + " rows, the first " +
                                        std::to_string(rows_));
      continue;
    }
    const int64_t take = std::min(count - filled, block_.rows - block_used_);
    ArrayView part = block_;
    part.data = static_cast<const char*>(block_.data) + block_used_ * block_.row_stride;
    part.rows = take;
    part.name = block_name(passes_, block_index_);
    ArraySource(part).read_rows(0, take, out + filled * cols_);
    block_used_ += take;
    filled += take;
  }
  position_ = begin + count;
  if (position_ == rows_) {  // the pass must end here
    while (block_used_ == block_.rows) {
      if (!next_block()) return;
    }
    throw InputError::described(block_name(passes_, block_index_), "",
                                block_name(passes_, block_index_) + ": pass " +
                                    std::to_string(passes_) + " yields more rows than the first (" +
                                    std::to_string(rows_) + ")");
  }
}

void StreamSource::read_rows(int64_t begin, int64_t count, float* out) const {
  read(begin, count, out);
}

void StreamSource::read_rows(int64_t begin, int64_t count, double* out) const {
  read(begin, count, out);
}

}  // namespace sb::analysis
