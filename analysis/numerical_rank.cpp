#include "analysis/numerical_rank.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/errors.h"
#include "common/head_spec.h"

namespace sb::analysis {

double parse_eps(const std::string& text) {
  if (text == "float32") return kFloat32Eps;
  if (text == "float64") return kFloat64Eps;
  const auto value = parse_finite_number(text);
  // A machine epsilon lies in (0, 1): eps >= 1 puts tol above sigma_max (rank 0 whatever the data).
  if (!value || !(*value > 0) || !(*value < 1))
    throw OptionError::for_setting("--eps", "--eps " + text,
                                   "float32, float64 or a number in (0, 1)");
  return *value;
}

RankReport numerical_rank(const std::vector<double>& sigma, int64_t rows, int64_t cols, double eps,
                          int64_t bound, bool theorem2_bounded, double resolution_rel) {
  RankReport r;
  r.sigma_max = sigma.empty() ? 0.0 : sigma.front();
  r.eps = eps;
  r.tol = 0.5 * std::sqrt(static_cast<double>(rows + cols + 1)) * r.sigma_max * eps;
  r.tol_numpy = r.sigma_max * static_cast<double>(std::max(rows, cols)) * eps;
  auto count_above = [&](double tol) {
    return static_cast<int64_t>(
        std::count_if(sigma.begin(), sigma.end(), [&](double s) { return s > tol; }));
  };
  r.rank = count_above(r.tol);
  r.rank_numpy = count_above(r.tol_numpy);
  r.bound = bound;
  r.theorem2_bounded = theorem2_bounded;
  r.within_bound = r.rank <= bound;
  r.bound_binding = bound < std::min(rows, cols);
  const auto b = static_cast<size_t>(bound);
  r.spectral_gap = (bound >= 1 && b < sigma.size() && sigma[b] > 0)
                       ? sigma[b - 1] / sigma[b]
                       : std::numeric_limits<double>::quiet_NaN();
  r.resolution = resolution_rel * r.sigma_max;
  r.resolvable = r.tol > r.resolution;
  for (int j = -2; j <= 2; ++j)
    r.rank_sweep[static_cast<size_t>(j + 2)] = count_above(r.tol * std::pow(10.0, j));
  // Ratios of resolved values; the first value at or below the resolution ends the scan with
  // sigma_i / (sigma_(i+1) + resolution), a lower bound on its ratio (the computed value is
  // within the resolution of the true one), so a cliff into round-off counts however deep it
  // falls, and whether sigma_(i+1) lands just above or just below the resolution no longer
  // moves the largest gap from the cliff to the top of the spectrum.
  for (size_t i = 1; i < sigma.size() && sigma[i - 1] > r.resolution; ++i) {
    const bool resolved = sigma[i] > r.resolution;
    const double below = resolved ? sigma[i] : std::max(sigma[i], 0.0) + r.resolution;
    if (!(below > 0)) break;
    if (!(sigma[i - 1] / below <= r.largest_gap)) {  // the first at a tie; NaN at the start
      r.largest_gap = sigma[i - 1] / below;
      r.largest_gap_index = static_cast<int64_t>(i);
    }
    if (!resolved) break;
  }
  return r;
}

void limit_by_precision(RankReport& r, const std::vector<double>& sigma) {
  r.precision_limited = false;
  r.eps_to_resolve = std::numeric_limits<double>::quiet_NaN();
  if (!r.bound_binding || !r.within_bound || r.rank >= r.bound || r.rank < 0 || !(r.tol > 0))
    return;
  const auto next = static_cast<size_t>(r.rank);  // sigma_(rank+1), 0-based
  const bool known = next < sigma.size();
  // A count that stays within the bound two decades below tol, where the method resolves that
  // far, is no artifact of the precision even when sigma_(rank+1) sits just under tol.
  // The count at tol / kPrecisionDecade^2 = tol / 100 is the sweep's first entry.
  const double fine = r.tol / (kPrecisionDecade * kPrecisionDecade);
  const int64_t count_fine = r.rank_sweep[0];
  const bool resolved_within = fine >= r.resolution && count_fine >= 0 && count_fine <= r.bound;
  const bool continues = known && sigma[next] >= r.tol / kPrecisionDecade && !resolved_within;
  const bool coarse = r.eps > kFloat32Eps * (1 + 1e-9);
  if (!continues && !coarse) return;
  r.precision_limited = true;
  r.eps_to_resolve =
      known && sigma[next] > 0 ? std::min(kFloat32Eps, r.eps * sigma[next] / r.tol) : kFloat32Eps;
}

}  // namespace sb::analysis
