// The sketch's float64 finish (sketch.h, "Float64 finish"; compensated_finish.h): where the window
// stays open at the float64 eps because rounding, not the basis, keeps it open.

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <type_traits>

#include "analysis/compensated_finish.h"
#include "analysis/sketch_parts.h"

namespace sb::analysis::sketch_detail {

bool finish_wanted(const Window& w, const SketchOptions& o, int64_t rows, int64_t cols, int64_t k) {
  return o.float64_finish && !settled(w, o) && o.collective == nullptr && w.rank >= 1 &&
         w.residual_floor >= w.tol_lo && k >= 2 &&
         compensated_finish_bytes(rows, cols, k, o.probes) <= kRangeStartBytes;
}

namespace {

int finish_rows(const std::function<void(int64_t, int64_t, double*)>& read, int64_t rows,
                int64_t cols, const std::vector<double>& basis, int64_t k, Window& w,
                const SketchOptions& o, double frobenius, int pass_before, std::mt19937_64& rng,
                SpectrumTiming* timing, const SketchProgress& progress, int* checks,
                int* power_passes) {
  if (!finish_wanted(w, o, rows, cols, k)) return 0;
  CompensatedFinishOptions fo;
  fo.tol = w.tol;
  fo.tol_lo = w.tol_lo;
  fo.tol_hi = w.tol_hi;
  fo.frobenius = frobenius;
  fo.probes = o.probes;
  fo.max_steps = std::max(o.power_steps, 1);
  fo.block_rows = std::min<int64_t>(256, rows);
  fo.threads = std::max(1, openblas_get_num_threads());
  auto start = std::chrono::steady_clock::now();
  auto step_done = [&](const char* kind, const CompensatedFinishResult& r) {
    if (!progress.pass_done) return;
    const bool power = kind[0] == 'p';
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    start = std::chrono::steady_clock::now();
    const int64_t lo = std::max(w.rank_min, r.rank_min);
    const int64_t hi = r.upper_certified ? std::max(lo, std::min(w.rank_max, r.count)) : w.rank_max;
    SketchPass line{pass_before + r.passes,
                    k,
                    r.count > 0 ? r.count : w.rank,
                    lo,
                    hi,
                    power ? r.residual_bound : w.residual,
                    w.tol,
                    seconds,
                    false,
                    power ? r.power_steps : 0,
                    r.count};
    line.finish = kind;
    progress.pass_done(line);
  };
  const auto f = compensated_finish(read, rows, cols,
                                    std::vector<double>(basis.begin(), basis.begin() + cols * k), k,
                                    fo, rng, timing, step_done);
  *checks += f.checks;
  *power_passes += f.power_steps;
  const auto c = static_cast<size_t>(f.count);
  if (f.lower.size() == c && c > 0) {
    // The finish's values replace the sketch's: their lower bounds are certified column by
    // column, the sketch's upper bounds hold for any list (each is >= sigma_i(A)).
    w.rank_min = std::max(w.rank_min, f.rank_min);
    w.sigma.resize(std::max(w.sigma.size(), c));
    w.lower.resize(w.sigma.size(), 0.0);
    w.upper.resize(w.sigma.size(), w.upper.empty() ? frobenius : w.upper.back());
    for (size_t i = 0; i < c; ++i) {
      w.sigma[i] = f.sigma[i];
      w.lower[i] = std::max(w.lower[i], f.lower[i]);
      w.upper[i] = std::max(w.upper[i], w.lower[i]);
    }
    // The finish's bounds are relative (compensated_finish.h): near tol, where the count is
    // decided, a value is off by at most its smallest one's margin.
    const double value_error = f.sigma[c - 1] - f.lower[c - 1];
    if (f.upper_certified) {
      w.rank_max = std::max(w.rank_min, std::min(w.rank_max, f.count));
      w.residual = f.residual_bound;
      w.residual_count = f.count;
      w.value_error = value_error;
      for (size_t i = c; i < w.sigma.size(); ++i) {
        w.sigma[i] = std::min(w.sigma[i], f.residual_bound);
        w.upper[i] = std::min(w.upper[i], f.residual_bound);
        w.lower[i] = std::min(w.lower[i], w.upper[i]);
      }
    }
  }
  return f.passes - f.power_steps;
}

}  // namespace

// float32 rows never reach the float64 eps's rounding floor with data of their own precision: the
// finish is for float64 files.
template <class In>
int float64_finish(const std::function<void(int64_t, int64_t, In*)>& read, int64_t rows,
                   int64_t cols, const std::vector<double>& basis, int64_t k, Window& w,
                   const SketchOptions& o, double frobenius, int pass_before, std::mt19937_64& rng,
                   SpectrumTiming* timing, const SketchProgress& progress, int* checks,
                   int* power_passes) {
  if constexpr (std::is_same_v<In, double>)
    return finish_rows(read, rows, cols, basis, k, w, o, frobenius, pass_before, rng, timing,
                       progress, checks, power_passes);
  else
    return 0;
}

template int float64_finish<float>(const std::function<void(int64_t, int64_t, float*)>&, int64_t,
                                   int64_t, const std::vector<double>&, int64_t, Window&,
                                   const SketchOptions&, double, int, std::mt19937_64&,
                                   SpectrumTiming*, const SketchProgress&, int*, int*);
template int float64_finish<double>(const std::function<void(int64_t, int64_t, double*)>&, int64_t,
                                    int64_t, const std::vector<double>&, int64_t, Window&,
                                    const SketchOptions&, double, int, std::mt19937_64&,
                                    SpectrumTiming*, const SketchProgress&, int*, int*);

}  // namespace sb::analysis::sketch_detail
