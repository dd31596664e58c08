#include "analysis/row_gram.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <type_traits>
#include <vector>

#include "analysis/block_stream.h"
#include "analysis/gram_block.h"

namespace sb::analysis {
namespace {

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

template <class In>
GramMatrix row_gram_impl(const std::function<void(int64_t, int64_t, In*)>& read, int64_t rows,
                         int64_t cols, int64_t panel_cols, FiniteScan* scan, SpectrumTiming* timing,
                         const Progress& progress, double keep_bytes) {
  SpectrumTiming local;
  if (!timing) timing = &local;
  const int64_t n = rows, m = cols;
  const int64_t w =
      std::clamp<int64_t>(panel_cols > 0 ? panel_cols : row_gram_panel_cols(rows, cols), 1, m);
  const int64_t passes = (m + w - 1) / w;
  GramMatrix gram;
  gram.rows = rows;
  gram.cols = cols;
  gram.row_gram = true;
  GramAccumulator g(n);  // upper triangle of A A^T, col-major, one rounding per panel
  // The panel: T rows of w columns, row-major, i.e. the column-major w x T matrix A_p^T.
  std::vector<double> panel(static_cast<size_t>(n * w));
  // float32 rows kept from the first pass (T x M, row-major), which the later panels gather from
  // instead of reading the file again.
  const bool keep = row_gram_keeps_rows(rows, cols, w, keep_bytes) && std::is_same_v<In, float>;
  std::vector<In> kept(keep ? static_cast<size_t>(n * m) : 0);
  RowStage<In> stage(m, n);
  bool positive = false, negative = false;
  int64_t done = 0;
  for (int64_t p = 0; p < passes; ++p) {
    const int64_t c0 = p * w, wc = std::min(w, m - c0);
    const auto gather = [&](const In* rows_in, int64_t r, int64_t count) {
      for (int64_t i = 0; i < count; ++i) {
        const In* src = rows_in + i * m + c0;
        std::copy(src, src + wc, panel.begin() + (r + i) * w);
      }
      done += count;
      if (progress && done < n * passes) progress(done, n * passes);
    };
    auto start = std::chrono::steady_clock::now();
    bool clean = true;
    if (p > 0 && keep) {
      gather(kept.data(), 0, n);
    } else {
      clean = stage.for_each(read, 0, n, [&](const In* rows_in, int64_t r, int64_t count) {
        if (p == 0) {  // every entry passes through the first pass: scan and sign facts there
          scan->scan(rows_in, r, count, m);
          if (!scan->clean()) return false;
          for (int64_t i = 0; i < count * m; ++i) {
            positive |= rows_in[i] > 0;
            negative |= rows_in[i] < 0;
          }
          if (keep) std::copy(rows_in, rows_in + count * m, kept.begin() + r * m);
        }
        gather(rows_in, r, count);
        return true;
      });
    }
    if (!clean) return gram;
    timing->read += since(start);
    start = std::chrono::steady_clock::now();
    // X^T X with X = A_p^T (wc x T, leading dimension w): the panel's A_p A_p^T.
    g.add(panel.data(), wc, w, /*trans=*/true);
    timing->accumulate += since(start);
  }
  if (progress) progress(n * passes, n * passes);
  gram.chain = g.chain();
  gram.g = g.take();
  gram.same_sign = !(positive && negative);
  return gram;
}

}  // namespace

int64_t row_gram_panel_cols(int64_t rows, int64_t cols) {
  const double t = static_cast<double>(std::max<int64_t>(rows, 1));
  const double panel_bytes = std::max(256.0 * double(1 << 20), t * t);
  return std::clamp<int64_t>(static_cast<int64_t>(panel_bytes / (8 * t)), 1,
                             std::max<int64_t>(cols, 1));
}

bool row_gram_keeps_rows(int64_t rows, int64_t cols, int64_t panel_cols, double keep_bytes) {
  const int64_t w = std::clamp<int64_t>(panel_cols, 1, std::max<int64_t>(cols, 1));
  return w < cols && 4.0 * static_cast<double>(rows) * static_cast<double>(cols) <= keep_bytes;
}

double row_gram_bytes(int64_t rows, int64_t cols) {
  const double t = static_cast<double>(rows);
  const int64_t panel = row_gram_panel_cols(rows, cols);
  const double w = static_cast<double>(panel);
  const double staging = std::min(kStageBytes, 8.0 * t * static_cast<double>(cols));
  const double kept = row_gram_keeps_rows(rows, cols, panel, kRowGramKeepBytes)
                          ? 4.0 * t * static_cast<double>(cols)
                          : 0.0;
  return 8.0 * t * t + gram_tile_bytes(rows) + 8.0 * t * w + staging + kept +
         8.0 * (2 * 128 + 3) * t;
}

GramMatrix accumulate_row_gram(const RowReader& read, int64_t rows, int64_t cols,
                               int64_t panel_cols, FiniteScan* scan, SpectrumTiming* timing,
                               const Progress& progress, double keep_bytes) {
  return row_gram_impl(read, rows, cols, panel_cols, scan, timing, progress, keep_bytes);
}

GramMatrix accumulate_row_gram(const RowReader64& read, int64_t rows, int64_t cols,
                               int64_t panel_cols, FiniteScan* scan, SpectrumTiming* timing,
                               const Progress& progress, double keep_bytes) {
  return row_gram_impl(read, rows, cols, panel_cols, scan, timing, progress, keep_bytes);
}

}  // namespace sb::analysis
