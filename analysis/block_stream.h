#pragma once
// The streaming loop shared by the gram path (spectrum.cpp) and the sketch (sketch.cpp): rows
// [0, rows) in blocks of block_rows, each converted to float64 by the caller's `load`, handed to
// the caller's `consume`; with overlap a second thread loads block b + 1 into the other buffer
// while block b is consumed.

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <future>
#include <vector>

#include "contract/rank_report.h"

namespace sb::analysis {

/// The most bytes of a reader's own type (float32 or float64) staged at a time on their way to
/// float64 (RowStage): 16 MiB, so a float32 source never holds a second whole block.
inline constexpr double kStageBytes = double(int64_t{16} << 20);

/// The staging buffer between a reader of rows of type In and the float64 blocks, shared by the
/// sketch's passes, the power steps and the row Gram: rows come in stages of at most max_rows
/// rows and at most kStageBytes.
template <class In>
class RowStage {
 public:
  RowStage(int64_t cols, int64_t max_rows)
      : cols_(cols),
        rows_(std::max<int64_t>(1, std::min<int64_t>(max_rows, static_cast<int64_t>(kStageBytes) /
                                                                   (int64_t{sizeof(In)} *
                                                                    std::max<int64_t>(cols, 1))))),
        buffer_(static_cast<size_t>(rows_ * cols_)) {}

  /// Reads rows [begin, begin + count) through read(first, n, In* out), a stage at a time, and
  /// hands each to visit(const In* rows, int64_t first, int64_t n) (row-major n x cols); visit
  /// returns false to stop, and then so does for_each.
  template <class Read, class Visit>
  bool for_each(const Read& read, int64_t begin, int64_t count, Visit&& visit) {
    for (int64_t s = 0; s < count; s += rows_) {
      const int64_t n = std::min(rows_, count - s);
      read(begin + s, n, buffer_.data());
      if (!visit(static_cast<const In*>(buffer_.data()), begin + s, n)) return false;
    }
    return true;
  }

 private:
  int64_t cols_, rows_;
  std::vector<In> buffer_;
};

/// load(begin, count, out) fills out (count x cols, row-major T: float64 unless the caller asks
/// for the reader's own type) and returns false to stop (non-finite entries); consume(block, n)
/// uses the block of n rows; done(rows_done) follows each block (progress). timing->read gets the
/// time spent waiting for loads, timing->accumulate the consumer's. Returns false when a load
/// stopped the stream.
template <class T = double, class Load, class Consume, class Done>
bool stream_blocks(int64_t rows, int64_t cols, int64_t block_rows, bool overlap,
                   contract::SpectrumTiming* timing, Load& load, Consume&& consume, Done&& done) {
  using clock = std::chrono::steady_clock;
  auto since = [](clock::time_point t) {
    return std::chrono::duration<double>(clock::now() - t).count();
  };
  std::array<std::vector<T>, 2> blocks;
  blocks[0].resize(static_cast<size_t>(std::min(block_rows, rows) * cols));
  if (overlap) blocks[1].resize(blocks[0].size());
  auto rows_in = [&](int64_t b) { return std::min(block_rows, rows - b * block_rows); };
  const int64_t nblocks = (rows + block_rows - 1) / block_rows;
  auto start = clock::now();
  bool ok = load(0, rows_in(0), blocks[0].data());
  timing->read += since(start);
  for (int64_t b = 0; b < nblocks; ++b) {
    if (!ok) return false;
    T* current = blocks[overlap ? b % 2 : 0].data();
    const bool more = b + 1 < nblocks;
    std::future<bool> next;
    if (overlap && more)
      next = std::async(std::launch::async,
                        [&load, &blocks, b, n = rows_in(b + 1), begin = (b + 1) * block_rows] {
                          return load(begin, n, blocks[(b + 1) % 2].data());
                        });
    start = clock::now();
    consume(static_cast<const T*>(current), rows_in(b));
    timing->accumulate += since(start);
    done(b * block_rows + rows_in(b));
    if (!more) break;
    start = clock::now();
    ok = overlap ? next.get() : load((b + 1) * block_rows, rows_in(b + 1), current);
    timing->read += since(start);
  }
  return ok;
}

}  // namespace sb::analysis
