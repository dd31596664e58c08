#include "analysis/residual_power.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "analysis/block_stream.h"
#include "analysis/collective.h"
#include "analysis/inertia.h"
#include "analysis/numerical_rank.h"

namespace sb::analysis {
namespace {

constexpr double kUnit = kFloat64Eps / 2;  // u = 2^-53
constexpr double kFailureLog10 = 12;       // each bound fails w.p. <= 1e-12
constexpr double kStageBytes = double(int64_t{16} << 20);

int blas_int(int64_t n) { return static_cast<int>(n); }

// v (M x p, column-major) <- (I - Q Q^T) v for the M x c matrix q.
void project(const std::vector<double>& q, int64_t m, int64_t c, double* v, int64_t p,
             std::vector<double>& coef) {
  coef.resize(static_cast<size_t>(c * p));
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, blas_int(c), blas_int(p), blas_int(m), 1.0,
              q.data(), blas_int(m), v, blas_int(m), 0.0, coef.data(), blas_int(c));
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, blas_int(m), blas_int(p), blas_int(c),
              -1.0, q.data(), blas_int(m), coef.data(), blas_int(c), 1.0, v, blas_int(m));
}

// Upper bounds on the 2-norms of the p columns of the M x p matrix v (dnrm2 widened by its
// rounding, (1 + 2 M u)).
std::vector<double> column_norms(const double* v, int64_t m, int64_t p) {
  std::vector<double> n(static_cast<size_t>(p));
  for (int64_t i = 0; i < p; ++i)
    n[static_cast<size_t>(i)] =
        cblas_dnrm2(blas_int(m), v + i * m, 1) * (1 + 2 * kUnit * static_cast<double>(m));
  return n;
}

// q_l of the header: bounds on ||Q^^T w_i|| from the computed Q_c^T w_i.
std::vector<double> range_parts(const std::vector<double>& q, int64_t m, int64_t c, double eta,
                                const double* w, int64_t p, const std::vector<double>& w_norm) {
  std::vector<double> coef(static_cast<size_t>(c * p));
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, blas_int(c), blas_int(p), blas_int(m), 1.0,
              q.data(), blas_int(m), w, blas_int(m), 0.0, coef.data(), blas_int(c));
  const auto coef_norm = column_norms(coef.data(), c, p);
  const double widen = gamma_float64(static_cast<double>(m)) * std::sqrt(double(c) * (1 + eta));
  std::vector<double> out(static_cast<size_t>(p));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = (coef_norm[i] + widen * w_norm[i]) / std::sqrt(1 - eta);
  return out;
}

// A coefficient over a power of x, as log(coef) and the power: the terms of the header's
// inequality divided by x^(2j+1).
struct Term {
  double log_coef;
  int power;
};

// The largest x in (0, hi] with alpha' sum_terms coef / x^power >= 1 for some probe (each probe's
// sum decreases in x), by bisection on log x; hi when even hi satisfies it.
double largest_root(const std::vector<std::vector<Term>>& probes, double log_factor, double hi) {
  auto satisfied = [&](double log_x) {
    for (const auto& terms : probes) {
      double sum = 0;
      for (const Term& t : terms) sum += std::exp(log_factor + t.log_coef - t.power * log_x);
      if (sum >= 1) return true;
    }
    return false;
  };
  double upper = std::log(hi);
  if (satisfied(upper)) return hi;
  double lower = upper - 700;  // e^-700 of sigma_1: below any tol
  if (!satisfied(lower)) return std::exp(lower);
  for (int it = 0; it < 100 && upper - lower > 1e-13; ++it) {
    const double mid = 0.5 * (lower + upper);
    (satisfied(mid) ? lower : upper) = mid;
  }
  return std::exp(upper) * (1 + 1e-12);
}

double log_or_minus_inf(double v) {
  return v > 0 ? std::log(v) : -std::numeric_limits<double>::infinity();
}

}  // namespace

double probe_factor(int probes) {
  return std::pow(10.0, kFailureLog10 / probes) * std::sqrt(2 / std::acos(-1.0));
}

double projection_error(int64_t m, int64_t k, double eta) {
  return 2 * gamma_float64(static_cast<double>(m)) * std::sqrt(double(k)) * std::pow(1 + eta, 1.5) +
         3 * kUnit;
}

template <class In>
ResidualPowerResult residual_power_bound(
    const std::function<void(int64_t, int64_t, In*)>& read, int64_t local_rows, int64_t cols,
    const std::vector<double>& q_c, int64_t c, double eta, const ResidualPowerOptions& o,
    std::mt19937_64& rng, SpectrumTiming* timing,
    const std::function<void(const ResidualPowerStep&)>& step_done,
    const std::function<void(int64_t)>& rows_done) {
  using clock = std::chrono::steady_clock;
  const int64_t m = cols, p = o.probes;
  const double rows = static_cast<double>(o.total_rows > 0 ? o.total_rows : local_rows);
  const double gamma_m = gamma_float64(static_cast<double>(m)), gamma_t = gamma_float64(rows);
  const double f = projection_error(m, c, eta);
  const double n_abs = o.abs_norm, s1 = o.sigma1_upper;
  const double log_factor = std::log(probe_factor(static_cast<int>(p)));
  ResidualPowerResult out;
  out.bound = s1;

  // The start: omega, then w_0 = fl(P~ fl(P~ omega)) (header).
  std::vector<double> w(static_cast<size_t>(m * p)), y(w.size()), coef;
  std::normal_distribution<double> normal(0.0, 1.0);
  for (auto& v : w) v = normal(rng);
  const auto omega_norm = column_norms(w.data(), m, p);
  project(q_c, m, c, w.data(), p, coef);
  auto v_norm = column_norms(w.data(), m, p);
  project(q_c, m, c, w.data(), p, coef);
  // Each probe's terms; the start's mu_-1 is a term of power 0 (x ||r_j|| / x^(2j+1) carries
  // x^(2j+1) mu_-1).
  std::vector<std::vector<Term>> chain(static_cast<size_t>(p));
  for (size_t i = 0; i < chain.size(); ++i)
    chain[i].push_back(
        {log_or_minus_inf((eta * eta + (1 + eta) * f) * omega_norm[i] + f * v_norm[i]), 0});
  std::vector<double> log_scale(static_cast<size_t>(p), 0.0);  // true = stored * e^log_scale

  const int64_t block_rows = std::max<int64_t>(1, std::min(o.block_rows, local_rows));
  const int64_t stage_rows =
      std::min(block_rows,
               std::max<int64_t>(1, static_cast<int64_t>(kStageBytes) / (int64_t{sizeof(In)} * m)));
  std::vector<In> stage(static_cast<size_t>(stage_rows * m));
  std::vector<double> z(static_cast<size_t>(block_rows * p));
  auto load = [&](int64_t begin, int64_t count, double* dst) {
    for (int64_t s = 0; s < count; s += stage_rows) {
      const int64_t n = std::min(stage_rows, count - s);
      read(begin + s, n, stage.data());
      std::copy(stage.begin(), stage.begin() + n * m, dst + s * m);
    }
    return true;
  };

  for (int step = 0; step < o.max_steps; ++step) {
    const auto start = clock::now();
    // Rescale each probe to unit norm by a power of two (exact).
    auto w_norm = column_norms(w.data(), m, p);
    for (int64_t i = 0; i < p; ++i) {
      const auto s = static_cast<size_t>(i);
      if (!(w_norm[s] > 0)) continue;
      const int e = std::ilogb(w_norm[s]);
      cblas_dscal(blas_int(m), std::ldexp(1.0, -e), w.data() + i * m, 1);
      w_norm[s] = std::ldexp(w_norm[s], -e);
      log_scale[s] += e * std::log(2.0);
    }
    const auto q_part = range_parts(q_c, m, c, eta, w.data(), p, w_norm);

    // One pass: z = A w (its norms), y = A^T z.
    std::fill(y.begin(), y.end(), 0.0);
    std::vector<double> z_sq(static_cast<size_t>(p), 0.0);
    stream_blocks(
        local_rows, m, block_rows, o.overlap, timing, load,
        [&](const double* x, int64_t n) {
          // The row-major n x M block is the column-major M x n matrix X = A_b^T.
          cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, blas_int(n), blas_int(p),
                      blas_int(m), 1.0, x, blas_int(m), w.data(), blas_int(m), 0.0, z.data(),
                      blas_int(n));
          cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, blas_int(m), blas_int(p),
                      blas_int(n), 1.0, x, blas_int(m), z.data(), blas_int(n), 1.0, y.data(),
                      blas_int(m));
          for (int64_t i = 0; i < p; ++i) {
            const double* col = z.data() + i * n;
            z_sq[static_cast<size_t>(i)] += cblas_ddot(blas_int(n), col, 1, col, 1);
          }
        },
        [&](int64_t done) {
          if (rows_done) rows_done(done);
        });
    if (o.collective) {
      o.collective->allreduce_sum(y.data(), static_cast<int64_t>(y.size()));
      o.collective->allreduce_sum(z_sq.data(), p);
    }
    ++out.steps;

    // The bound after this step (j = step), per probe: the main term over x^(2j+1), the chain's.
    std::vector<std::vector<Term>> terms = chain;
    out.estimate = 0;
    std::vector<double> z_norm(static_cast<size_t>(p));
    for (size_t i = 0; i < terms.size(); ++i) {
      z_norm[i] = std::sqrt(std::max(z_sq[i], 0.0) * (1 + gamma_t));
      const double main = z_norm[i] + gamma_m * n_abs * w_norm[i] + s1 * q_part[i];
      terms[i].push_back({log_scale[i] + log_or_minus_inf(main), 2 * step + 1});
      if (w_norm[i] > 0) out.estimate = std::max(out.estimate, std::sqrt(z_sq[i]) / w_norm[i]);
    }
    out.bound = std::min(out.bound, largest_root(terms, log_factor, s1));
    ++out.checks;
    if (step_done)
      step_done({step + 1, out.bound, out.estimate,
                 std::chrono::duration<double>(clock::now() - start).count()});
    if (o.target > 0 && (out.bound < o.target || !(out.estimate < o.target))) break;
    // The steps a bound below the target still needs, from the bound's ratio to the estimate:
    // ratio^(2j+1) = K, and K^(1/(2q+1)) estimate < target for 2q + 1 > ln K / ln(target / est).
    if (o.target > 0 && out.estimate > 0) {
      const double log_k = (2 * step + 1) * std::log(out.bound / out.estimate);
      const double needed = 0.5 * (log_k / std::log(o.target / out.estimate) - 1);
      if (needed > o.max_steps - 1) break;
    }

    // The next probes: w <- fl(P~ fl(P~ y)), and this step's mu_l (header) into the chain.
    const auto y_norm = column_norms(y.data(), m, p);
    project(q_c, m, c, y.data(), p, coef);
    v_norm = column_norms(y.data(), m, p);
    project(q_c, m, c, y.data(), p, coef);
    for (size_t i = 0; i < chain.size(); ++i) {
      const double a =
          gamma_t * n_abs * z_norm[i] + (eta * eta + (1 + eta) * f) * y_norm[i] + f * v_norm[i];
      const double b = s1 * q_part[i] + gamma_m * n_abs * w_norm[i];
      // x mu_l x^(2(j-1-l)) / x^(2j+1) = (a + x b) / x^(2l+2) at the next step's j.
      chain[i].push_back({log_scale[i] + log_or_minus_inf(a), 2 * step + 2});
      chain[i].push_back({log_scale[i] + log_or_minus_inf(b), 2 * step + 1});
    }
    w.swap(y);
  }
  return out;
}

template ResidualPowerResult residual_power_bound<float>(
    const std::function<void(int64_t, int64_t, float*)>&, int64_t, int64_t,
    const std::vector<double>&, int64_t, double, const ResidualPowerOptions&, std::mt19937_64&,
    SpectrumTiming*, const std::function<void(const ResidualPowerStep&)>&,
    const std::function<void(int64_t)>&);
template ResidualPowerResult residual_power_bound<double>(
    const std::function<void(int64_t, int64_t, double*)>&, int64_t, int64_t,
    const std::vector<double>&, int64_t, double, const ResidualPowerOptions&, std::mt19937_64&,
    SpectrumTiming*, const std::function<void(const ResidualPowerStep&)>&,
    const std::function<void(int64_t)>&);

}  // namespace sb::analysis
