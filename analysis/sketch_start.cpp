// The sparse start's window and its progress line (sketch.h, "Start";
// sketch_parts.h).

#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis/sketch_parts.h"
#include "analysis/streamed_qr.h"

namespace sb::analysis::sketch_detail {

Window start_window(const PassSums& s, int64_t rows, int64_t cols, int64_t k, double eps) {
  Window w;
  w.sigma = singular_values_descending(s.r, k);
  w.tol = 0.5 * std::sqrt(static_cast<double>(rows + cols + 1)) * eps * w.sigma[0];
  w.tol_lo = w.tol_hi = w.tol;
  w.rank = static_cast<int64_t>(
      std::count_if(w.sigma.begin(), w.sigma.end(), [&](double x) { return x > w.tol; }));
  w.rank_max = std::min(rows, cols);
  w.residual = std::numeric_limits<double>::infinity();
  w.lower.assign(w.sigma.size(), 0.0);
  w.upper.assign(w.sigma.size(), w.residual);
  return w;
}

void report_start(const SketchProgress& progress, const Window& w, int pass, int64_t k,
                  double seconds, bool range) {
  if (!progress.pass_done) return;
  SketchPass done{pass, k, w.rank, w.rank_min, w.rank_max, w.residual, w.tol, seconds};
  done.start = true;
  done.range = range;
  progress.pass_done(done);
}

}  // namespace sb::analysis::sketch_detail
