#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "analysis/residual_power.h"
#include "analysis/sketch_parts.h"
#include "analysis/streamed_qr.h"

namespace sb::analysis::sketch_detail {
namespace {

int blas_int(int64_t n) { return static_cast<int>(n); }

/// The c top Ritz vectors of a pass, Q V_c (V from R's SVD), re-orthonormalised; *eta their
/// certified orthogonality defect.
std::vector<double> ritz_vectors(const std::vector<double>& basis, const std::vector<double>& r,
                                 int64_t m, int64_t k, int64_t c, double* eta) {
  const std::vector<double> vt = right_singular_vectors_t(r, k);
  std::vector<double> q_c(static_cast<size_t>(m * c));
  // Q_c = Q V(:, 1:c) = Q (V^T(1:c, :))^T: (M, c).
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, blas_int(m), blas_int(c), blas_int(k), 1.0,
              basis.data(), blas_int(m), vt.data(), blas_int(k), 0.0, q_c.data(), blas_int(m));
  *eta = orthonormalise(q_c, m, c);
  return q_c;
}

/// The widest window a power attempt may end on, as a fraction of its upper end: window_fraction
/// clamped to [0, 0.5].
double window_fraction(const SketchOptions& o) {
  return std::min(std::max(o.window_fraction, 0.0), 0.5);
}

}  // namespace

bool PowerAttempts::wanted(const Window& w, const SketchOptions& o, int64_t k_now, int passes_at_k,
                           bool check, int pass_now) const {
  const int64_t count = w.rank;
  // The count certified from below, or short of it by at most window_fraction of the count: an
  // attempt that certifies the count leaves [rank_min, count], which ends the sketch at that width
  // (narrow_enough). On the basis route at least one value short will do: values within 5% of tol
  // sit within their Ritz brackets of it (sigsoftmax's WikiText-2 dump at k = 3584: count 303,
  // rank_min 301). On Q_c the brackets widen with k (e_R = f ||AQ||_F, f ~ k): on MoSS's
  // WikiText-2 dump at k = 3584 the count 887 had rank_min 882, its next value clear of tol;
  // without an attempt k doubled to 7168 (35-minute passes), where [882, 887] is 0.56% wide.
  const bool route = power_route(w, o, 0.0, k_now).basis;
  const double f = window_fraction(o);
  const auto within = static_cast<int64_t>(f * static_cast<double>(count));
  const int64_t short_by = route ? std::max<int64_t>(1, within) : within;
  if (o.power_steps <= 0 || settled(w, o) || count < 1 || w.rank_min + short_by < count ||
      w.rank_max <= count || reaches_k(count, o, k_now))
    return false;
  if (!check && passes_at_k < 2) return false;
  // Not again at the same (k, c) too soon: on the basis route a pass at k is a new basis, so one
  // pass will do; on Q_c the attempt waits for two.
  return !(k_now == k && count == c && pass_now - pass < (route ? 1 : 2));
}

ResidualPowerOptions power_options(const SketchOptions& o, double target, double sigma1_upper,
                                   double abs_norm, int64_t rows, int64_t block_rows) {
  ResidualPowerOptions po;
  po.probes = o.probes;
  po.max_steps = o.power_steps;
  po.target = target;
  po.sigma1_upper = sigma1_upper;
  po.abs_norm = abs_norm;
  po.total_rows = rows;
  po.block_rows = block_rows;
  po.overlap = o.overlap;
  po.lanes = o.power_lanes;
  po.collective = o.collective;
  return po;
}

template <class In>
int power_attempt(const std::function<void(int64_t, int64_t, In*)>& read, int64_t local_rows,
                  int64_t cols, const std::vector<double>& basis, const PassSums& sums, Window& w,
                  const SketchOptions& o, int64_t k, int64_t rows, double frobenius, bool same_sign,
                  int64_t block_rows, int pass_before, std::mt19937_64& rng, SpectrumTiming* timing,
                  const SketchProgress& progress, int* checks, int64_t c) {
  double eta_c = 0;
  const auto q_c = ritz_vectors(basis, sums.r, cols, k, c, &eta_c);
  const ResidualPowerOptions po =
      power_options(o, w.tol_lo, w.upper[0], same_sign ? w.upper[0] : frobenius, rows, block_rows);
  int step = 1;
  auto step_done = [&](const ResidualPowerStep& s) {
    step = s.step + 1;
    if (progress.pass_done)
      progress.pass_done({pass_before + s.step, k, w.rank, w.rank_min,
                          s.bound < w.tol_lo ? c : w.rank_max, s.bound, w.tol, s.seconds, false,
                          s.step, c});
  };
  std::function<void(int64_t)> on_rows;
  if (progress.rows)
    on_rows = [&](int64_t done) { progress.rows(pass_before + step, k, done, local_rows); };
  const auto res = residual_power_bound<In>(read, local_rows, cols, q_c, c, eta_c, po, rng, timing,
                                            step_done, on_rows);
  *checks += res.checks;
  if (res.bound < w.tol_lo) {
    w.rank_max = std::max(w.rank_min, std::min(w.rank_max, c));
    w.residual = res.bound;
    w.residual_count = c;
    for (size_t i = static_cast<size_t>(c); i < w.upper.size(); ++i)
      w.upper[i] = std::min(w.upper[i], res.bound);
  }
  return res.steps;
}

bool basis_route(const Window& w, double eta) {
  const auto c = static_cast<size_t>(w.rank);
  if (c >= w.sigma.size()) return false;
  const double q_inv = q_inverse_bound(eta);
  return (w.sigma[c] + w.value_error) * q_inv >= 0.95 * w.tol_lo;
}

double basis_target(const Window& w, const SketchOptions& o, double eta) {
  // The window closes at c = w.rank when r falls below close_c, and is at most window_fraction f
  // wide when r falls below close_1: the window [rank_min, U] is narrow enough for U <= rank_min /
  // (1 - f), so the (U + 1)-th value (index U) must fall below tol (at c = 303, rank_min = 302:
  // U = 305, not c / 0.99 = 306).
  const double close_c = residual_to_close(w, w.rank, eta);
  const double close_1 = residual_to_close(w, widest_upper(w, o), eta);
  return close_c >= 0.5 * close_1 ? close_c : close_1;
}

int64_t widest_upper(const Window& w, const SketchOptions& o) {
  return static_cast<int64_t>(static_cast<double>(w.rank_min) / (1 - window_fraction(o)));
}

PowerRoute power_route(const Window& w, const SketchOptions& o, double eta, int64_t k) {
  PowerRoute route;
  route.c = w.rank;
  if (!basis_route(w, eta)) return route;
  route.target = basis_target(w, o, eta);
  route.basis = route.target > 0;
  if (route.basis) return route;
  // No r closes the window: the Ritz brackets (+- e_R + e_Z) of the count's next value and of
  // the (U + 1)-th reach tol. A bound on ||A (I - Q_U Q_U^T)||_2 below tol_lo leaves [rank_min,
  // U] with no Ritz bracket in it: Eckart-Young, sigma_(U+1) <= the bound.
  const int64_t u = std::min(widest_upper(w, o), reach_of(o, k) - 1);
  if (u >= w.rank) {
    route.c = u;
    route.basis_closed = true;
  } else {
    route.basis = true;  // nothing to try at this k: the basis attempt makes no step
  }
  return route;
}

/// The line for a basis attempt that made no step: no r closes the window (a Ritz bracket reaches
/// tol, and U = rank_min / (1 - window_fraction) falls below the count or reaches k).
void note_no_step(const SketchProgress& progress, const Window& w, const SketchOptions& o,
                  int64_t k, bool past_k) {
  if (!progress.note) return;
  char line[240];
  std::snprintf(line, sizeof line,
                "no power step at k = %lld: the Ritz brackets reach tol at value %lld and at U = "
                "%lld (window [%lld, %lld]); %s",
                static_cast<long long>(k), static_cast<long long>(w.rank + 1),
                static_cast<long long>(widest_upper(w, o) + 1), static_cast<long long>(w.rank_min),
                static_cast<long long>(w.rank_max), past_k ? "the basis widens" : "k stays");
  progress.note(line);
}

/// The line for power steps on the top U Ritz vectors in place of the basis (power_route).
void note_closed(const SketchProgress& progress, const Window& w, int64_t k, int64_t u) {
  if (!progress.note) return;
  char line[240];
  std::snprintf(
      line, sizeof line,
      "power steps on c = %lld, not the basis, at k = %lld: the Ritz brackets of value "
      "%lld and of value %lld reach tol, so no residual of the basis closes the window; a "
      "bound below tol on the top %lld leaves [%lld, %lld]",
      static_cast<long long>(u), static_cast<long long>(k), static_cast<long long>(w.rank + 1),
      static_cast<long long>(u + 1), static_cast<long long>(u), static_cast<long long>(w.rank_min),
      static_cast<long long>(u));
  progress.note(line);
}

template <class In>
int basis_attempt(const std::function<void(int64_t, int64_t, In*)>& read, int64_t local_rows,
                  int64_t cols, const std::vector<double>& basis, double eta, Window& w,
                  const SketchOptions& o, int64_t k, int64_t rows, double frobenius, bool same_sign,
                  int64_t block_rows, int pass_before, std::mt19937_64& rng, SpectrumTiming* timing,
                  const SketchProgress& progress, int* checks, int passes_at_k, bool* past_k) {
  // The count c is certified from below, or nearly (power.wanted); the steps stop at the r that
  // closes the window at c or leaves it window_fraction wide (basis_target).
  const double target = basis_target(w, o, eta);
  // What keeps r up: values Q has not yet converged to (the Gaussian half of a widened basis, a
  // basis one power step old), which another pass at k takes in, or the spectrum past k, which
  // only a wider basis does. The latter once Q has been iterated at this k and its last Ritz
  // value (about sigma_k >= sigma_(k+1), the floor of r at this k) is not below the target, or
  // after a third pass at k; a pass at k costs a quarter of the two at 2k that widening takes.
  const bool tail_high = w.sigma.empty() || w.sigma.back() >= target;
  const bool iterated = passes_at_k >= 2;
  *past_k = iterated && (tail_high || passes_at_k >= 3);
  if (!(target > 0)) return 0;
  const std::vector<double> q(basis.begin(), basis.begin() + cols * k);  // (M, k)
  const ResidualPowerOptions po =
      power_options(o, target, w.upper[0], same_sign ? w.upper[0] : frobenius, rows, block_rows);
  int step = 1;
  auto step_done = [&](const ResidualPowerStep& s) {
    step = s.step + 1;
    Window shown = w;
    narrow_by_residual(shown, s.bound, eta, rows, cols, k, o.eps);
    if (progress.pass_done)
      progress.pass_done({pass_before + s.step, k, shown.rank, shown.rank_min, shown.rank_max,
                          s.bound, w.tol, s.seconds, false, s.step, k});
  };
  std::function<void(int64_t)> on_rows;
  if (progress.rows)
    on_rows = [&](int64_t done) { progress.rows(pass_before + step, k, done, local_rows); };
  const auto res = residual_power_bound<In>(read, local_rows, cols, q, k, eta, po, rng, timing,
                                            step_done, on_rows);
  *checks += res.checks;
  narrow_by_residual(w, res.bound, eta, rows, cols, k, o.eps);
  return res.steps;
}

template int power_attempt<float>(const std::function<void(int64_t, int64_t, float*)>&, int64_t,
                                  int64_t, const std::vector<double>&, const PassSums&, Window&,
                                  const SketchOptions&, int64_t, int64_t, double, bool, int64_t,
                                  int, std::mt19937_64&, SpectrumTiming*, const SketchProgress&,
                                  int*, int64_t);
template int power_attempt<double>(const std::function<void(int64_t, int64_t, double*)>&, int64_t,
                                   int64_t, const std::vector<double>&, const PassSums&, Window&,
                                   const SketchOptions&, int64_t, int64_t, double, bool, int64_t,
                                   int, std::mt19937_64&, SpectrumTiming*, const SketchProgress&,
                                   int*, int64_t);

template int basis_attempt<float>(const std::function<void(int64_t, int64_t, float*)>&, int64_t,
                                  int64_t, const std::vector<double>&, double, Window&,
                                  const SketchOptions&, int64_t, int64_t, double, bool, int64_t,
                                  int, std::mt19937_64&, SpectrumTiming*, const SketchProgress&,
                                  int*, int, bool*);
template int basis_attempt<double>(const std::function<void(int64_t, int64_t, double*)>&, int64_t,
                                   int64_t, const std::vector<double>&, double, Window&,
                                   const SketchOptions&, int64_t, int64_t, double, bool, int64_t,
                                   int, std::mt19937_64&, SpectrumTiming*, const SketchProgress&,
                                   int*, int, bool*);

}  // namespace sb::analysis::sketch_detail
