// The sketch's report from its last window (sketch.h): the Numerical Recipes rank of the Ritz
// values with what they cannot resolve marked, the certified window, the largest certified gap,
// the pass counts and the bound.

#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis/numerical_rank.h"
#include "analysis/sketch_parts.h"

namespace sb::analysis::sketch_detail {
namespace {
constexpr double kCheckFailureLog10 = 12;  // each check's residual bound fails w.p. <= 1e-12
}  // namespace

void fill_report(SketchResult& out, Window& w, const SketchOptions& o, int64_t rows, int64_t cols,
                 int64_t k, const PassCounts& n) {
  RankReport& r = out.report;
  // What the Ritz values can resolve: the residual bound, or the rounding of their own values
  // (the one-sided finish: of order u ||A||, no longer sqrt(u) ||A||).
  const double resolution = std::max(w.residual, w.value_error);
  r = numerical_rank(w.sigma, rows, cols, o.eps, o.bound, o.theorem2_bounded,
                     w.sigma[0] > 0 ? resolution / w.sigma[0] : kFloat64Eps);
  // What a sigma list of k Ritz values cannot say: counts at thresholds below e.
  r.resolution = resolution;
  r.resolvable = w.tol_lo > w.residual;
  if (!(r.tol_numpy > resolution)) r.rank_numpy = -1;
  for (int j = -2; j <= 2; ++j)
    if (!(r.tol * std::pow(10.0, j) > resolution)) r.rank_sweep[static_cast<size_t>(j + 2)] = -1;
  // The largest gap, certified from below: lower_i / upper_(i+1), with sigma_(k+1) <= e, over the
  // i whose lower_i is resolved (above e): Ritz values below e say nothing of sigma_i.
  r.largest_gap = std::numeric_limits<double>::quiet_NaN();
  r.largest_gap_index = -1;
  for (size_t i = 0; i < w.lower.size() && w.lower[i] > w.residual; ++i) {
    const double next = i + 1 < w.upper.size() ? w.upper[i + 1] : w.residual;
    if (next > 0 && !(w.lower[i] / next <= r.largest_gap)) {
      r.largest_gap = w.lower[i] / next;
      r.largest_gap_index = static_cast<int64_t>(i + 1);
    }
  }
  r.has_certificate = true;
  r.rank_min = std::min(w.rank_min, r.rank);
  r.rank_max = std::max(w.rank_max, r.rank);
  r.certified = r.rank_min == r.rank_max;
  r.uncertain = std::max(r.rank - r.rank_min, r.rank_max - r.rank);
  r.tol_lo = w.tol_lo;
  r.tol_hi = w.tol_hi;
  r.gram_error = w.rounding;
  r.solver_error = 0;
  r.sketch_k = k;
  r.sketch_passes = n.passes;
  r.sketch_check_passes = n.check_passes;
  r.sketch_power_passes = n.power_passes;
  r.sketch_start_nonzeros = n.start_nonzeros;
  r.sketch_starts = n.starts;
  r.sketch_range_start = n.range_start;
  r.sketch_range_probes = n.range_probes;
  r.residual_bound = w.residual;
  r.residual_count = w.residual_count;
  r.failure_probability = n.checks * std::pow(10.0, -kCheckFailureLog10);
  out.sigma = std::move(w.sigma);
  out.lower = std::move(w.lower);
  out.upper = std::move(w.upper);
  apply_bound(r, out, o.bound, rows, cols);
}

}  // namespace sb::analysis::sketch_detail
