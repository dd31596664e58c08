#include "analysis/rank_certificate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

namespace sb::analysis {
namespace {

// tol^2 / lambda_1: c = (0.5 sqrt(M + T + 1) eps)^2.
double tol2_factor(int64_t rows, int64_t cols, double eps) {
  const double t = 0.5 * std::sqrt(static_cast<double>(rows + cols + 1)) * eps;
  return t * t;
}

void set_certificate(RankReport& r, const GramFacts& f, const RankWindow& w, int64_t rank_min,
                     int64_t rank_max, bool errors_covered) {
  r.has_certificate = true;
  r.rank_min = std::min(rank_min, r.rank);
  r.rank_max = std::max(rank_max, r.rank);
  r.certified = errors_covered && r.rank_min == r.rank_max;
  r.uncertain = std::max(r.rank - r.rank_min, r.rank_max - r.rank);
  r.tol_lo = std::sqrt(std::max(w.t_lo, 0.0));
  r.tol_hi = std::sqrt(std::max(w.t_hi, 0.0));
  r.gram_error = gram_rounding_bound(f);
  r.solver_error = f.solver_error;
}

}  // namespace

double gram_rounding_bound(const GramFacts& f) {
  const double gamma = gamma_float64(static_cast<double>(f.chain > 0 ? f.chain : f.rows));
  return gamma * (f.same_sign ? f.lambda1_upper : f.trace) / (1 - gamma);
}

double solver_error_estimate(const GramFacts& f, double eps) {
  const double n = static_cast<double>(f.cols);
  const double tau_max =
      tol2_factor(f.rows, f.cols, eps) * (f.lambda1_upper + gram_rounding_bound(f));
  const double abs_norm = f.same_sign ? f.lambda1_upper : f.trace;
  return 2 * gamma_float64(n + 1) * (abs_norm + f.trace + (2 * n + 1) * tau_max);
}

RankWindow rank_window(const GramFacts& f, double eps) {
  const double c = tol2_factor(f.rows, f.cols, eps);
  const double gram = gram_rounding_bound(f), delta = gram + f.solver_error;
  return {c * (f.lambda1_lower - gram) - delta, c * (f.lambda1_upper + gram) + delta};
}

void certify_from_spectrum(RankReport& report, const std::vector<double>& sigma, int64_t rows,
                           int64_t cols, bool same_sign, int64_t chain) {
  if (sigma.empty()) return;
  GramFacts f;
  f.rows = rows;
  f.cols = cols;
  f.same_sign = same_sign;
  f.chain = chain;
  for (double s : sigma) f.trace += s * s;
  const double lambda1 = sigma.front() * sigma.front();
  f.lambda1_lower = f.lambda1_upper = lambda1;
  f.solver_error = solver_error_estimate(f, report.eps);
  f.lambda1_lower = lambda1 - f.solver_error;
  f.lambda1_upper = lambda1 + f.solver_error;
  const auto w = rank_window(f, report.eps);
  auto count_above = [&](double t) {
    return static_cast<int64_t>(
        std::count_if(sigma.begin(), sigma.end(), [&](double s) { return s * s > t; }));
  };
  set_certificate(report, f, w, count_above(w.t_hi), count_above(w.t_lo), true);
}

bool narrow_window(RankReport& r, const RankReport& other) {
  if (!r.has_certificate || !other.has_certificate) return false;
  const int64_t lo = std::max(r.rank_min, other.rank_min),
                hi = std::min(r.rank_max, other.rank_max);
  if (lo > hi) return false;
  r.rank_min = lo;
  r.rank_max = hi;
  r.rank = std::clamp(r.rank, lo, hi);
  r.certified = lo == hi;
  r.uncertain = std::max(r.rank - lo, hi - r.rank);
  judge_window(r);
  return true;
}

void judge_window(RankReport& r) {
  if (r.rank_min > r.bound)
    r.within_bound = false;
  else if (r.rank_max <= r.bound)
    r.within_bound = true;
  else
    r.within_bound = r.rank <= r.bound;
}

RankReport rank_by_inertia(InertiaCounter& counter, int64_t rows, double eps, bool same_sign,
                           int64_t bound, bool theorem2_bounded, std::string* solver,
                           double* power_seconds, int64_t chain) {
  const int64_t cols = counter.size();
  const auto start = std::chrono::steady_clock::now();
  const PowerIteration p = counter.largest_eigenvalue();
  if (power_seconds)
    *power_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  GramFacts f;
  f.rows = rows;
  f.cols = cols;
  f.same_sign = same_sign;
  f.chain = chain;
  f.trace = counter.trace();
  f.lambda1_lower = p.lower;
  f.lambda1_upper = p.upper;
  // The counts' backward error is measured from their factors: start from the undoubled estimate
  // (about what an LDL^T count measures, solver_error_estimate) and widen to just above a
  // measured one that exceeds it.
  f.solver_error = solver_error_estimate(f, eps) / 2;

  std::vector<std::string> methods;  // the routes taken, in order
  auto note = [&](const std::string& m) {
    if (std::find(methods.begin(), methods.end(), m) == methods.end()) methods.push_back(m);
  };
  double backward = 0;  // the largest measured backward error of the counts behind the window
  auto count = [&](double t) {
    const int64_t c = counter.count_above(t);
    note(counter.method());
    backward = std::max(backward, counter.backward_error());
    return c;
  };
  RankWindow w;
  int64_t n_lo = 0, n_hi = 0;
  // The pivoted Cholesky route may take up to max(1024, n / 8) pivots (n^3 / 8 flops at most)
  // before the LDL^T counts take over.
  const int64_t max_pivots = std::max<int64_t>(1024, cols / 8);
  // The window assumes solver_error; a count whose measured backward error exceeds it widens the
  // window to 1.25x that error and counts again, twice at most (the error varies little with the
  // threshold: the factors' growth is nearly the same across the window).
  for (int attempt = 0; attempt < 3; ++attempt) {
    w = rank_window(f, eps);
    const int64_t k = counter.split(w.t_lo, w.t_hi, max_pivots);
    note(counter.method());
    backward = counter.backward_error();
    if (k >= 0) {
      n_lo = n_hi = k;
    } else {
      backward = 0;
      n_lo = count(w.t_lo);
      n_hi = count(w.t_hi);
    }
    if (backward <= f.solver_error) break;
    f.solver_error = 1.25 * backward;
  }
  const bool covered = backward <= f.solver_error;
  RankReport r;
  r.sigma_max = std::sqrt(p.rho);
  r.eps = eps;
  r.tol = 0.5 * std::sqrt(static_cast<double>(rows + cols + 1)) * r.sigma_max * eps;
  r.tol_numpy = r.sigma_max * static_cast<double>(std::max(rows, cols)) * eps;
  r.rank = n_lo == n_hi ? n_lo : count(r.tol * r.tol);  // the nominal count only when it matters
  r.rank_numpy = -1;
  r.bound = bound;
  r.theorem2_bounded = theorem2_bounded;
  r.within_bound = r.rank <= bound;
  r.bound_binding = bound < std::min(rows, cols);
  r.spectral_gap = std::numeric_limits<double>::quiet_NaN();
  r.resolution = std::sqrt(kFloat64Eps) * r.sigma_max;
  r.resolvable = r.tol > r.resolution;
  r.spectrum = false;
  r.sigma_max_iterations = p.iterations;
  r.sigma_max_rel_error = p.relative_width();
  set_certificate(r, f, w, n_hi, n_lo, covered);
  if (solver) {
    *solver = "power_iteration";
    for (const auto& m : methods) *solver += "+" + m;
  }
  return r;
}

std::string narrow_by_inertia(RankReport& report, InertiaCounter& counter, int64_t rows,
                              bool same_sign, int64_t chain) {
  if (!report.has_certificate || report.certified) return "";
  std::string routes;
  const RankReport counted = rank_by_inertia(counter, rows, report.eps, same_sign, report.bound,
                                             report.theorem2_bounded, &routes, nullptr, chain);
  return narrow_window(report, counted) ? routes : "";
}

}  // namespace sb::analysis
