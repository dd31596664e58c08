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

/// load(begin, count, out) fills out (count x cols, row-major float64) and returns false to stop
/// (non-finite entries); consume(block, n) uses the block of n rows; done(rows_done) follows each
/// block (progress). timing->read gets the time spent waiting for loads, timing->accumulate the
/// consumer's. Returns false when a load stopped the stream.
template <class Load, class Consume, class Done>
bool stream_blocks(int64_t rows, int64_t cols, int64_t block_rows, bool overlap,
                   contract::SpectrumTiming* timing, Load& load, Consume&& consume, Done&& done) {
  using clock = std::chrono::steady_clock;
  auto since = [](clock::time_point t) {
    return std::chrono::duration<double>(clock::now() - t).count();
  };
  std::array<std::vector<double>, 2> blocks;
  blocks[0].resize(static_cast<size_t>(std::min(block_rows, rows) * cols));
  if (overlap) blocks[1].resize(blocks[0].size());
  auto rows_in = [&](int64_t b) { return std::min(block_rows, rows - b * block_rows); };
  const int64_t nblocks = (rows + block_rows - 1) / block_rows;
  auto start = clock::now();
  bool ok = load(0, rows_in(0), blocks[0].data());
  timing->read += since(start);
  for (int64_t b = 0; b < nblocks; ++b) {
    if (!ok) return false;
    double* current = blocks[overlap ? b % 2 : 0].data();
    const bool more = b + 1 < nblocks;
    std::future<bool> next;
    if (overlap && more)
      next = std::async(std::launch::async,
                        [&load, &blocks, b, n = rows_in(b + 1), begin = (b + 1) * block_rows] {
                          return load(begin, n, blocks[(b + 1) % 2].data());
                        });
    start = clock::now();
    consume(static_cast<const double*>(current), rows_in(b));
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
