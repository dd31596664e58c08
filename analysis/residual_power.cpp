#include "analysis/residual_power.h"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

#include "analysis/block_stream.h"
#include "analysis/collective.h"
#include "analysis/inertia.h"
#include "analysis/numerical_rank.h"

namespace sb::analysis {
namespace {

constexpr double kUnit = kFloat64Eps / 2;  // u = 2^-53
constexpr double kFailureLog10 = 12;       // each bound fails w.p. <= 1e-12

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

double log_or_minus_inf(double v) {
  return v > 0 ? std::log(v) : -std::numeric_limits<double>::infinity();
}

// The largest x in (0, hi] at which satisfied(log x) holds, for a predicate that holds below some
// x and not above it: bisection on log x, hi when it holds there, e^-700 hi when it holds nowhere.
template <class Pred>
double largest_root(const Pred& satisfied, double hi) {
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

}  // namespace

double power_bound_root(const std::vector<std::vector<PowerTerm>>& probes, double log_factor,
                        double hi) {
  auto satisfied = [&](double log_x) {
    for (const auto& terms : probes) {
      double sum = 0;
      for (const PowerTerm& t : terms) sum += std::exp(log_factor + t.log_coef - t.power * log_x);
      if (sum >= 1) return true;
    }
    return false;
  };
  return largest_root(satisfied, hi);
}

double block_chi_log(int probes) {
  const double half = 0.5 * probes;
  // (c / 2)^(p/2) / Gamma(p/2 + 1) = 10^-12, solved for c; returns log sqrt(c).
  const double log_half_c = (-kFailureLog10 * std::log(10.0) + std::lgamma(half + 1)) / half;
  return 0.5 * (std::log(2.0) + log_half_c);
}

double block_bound_root(double log_gram, int power,
                        const std::vector<std::vector<PowerTerm>>& errors, double log_chi,
                        double hi) {
  auto log_add = [](double a, double b) {
    if (a < b) std::swap(a, b);
    return b == -std::numeric_limits<double>::infinity() ? a : a + std::log1p(std::exp(b - a));
  };
  auto satisfied = [&](double log_x) {
    double sq = -std::numeric_limits<double>::infinity();  // log sum_i (e_i / x^power)^2
    for (const auto& terms : errors) {
      double e = -std::numeric_limits<double>::infinity();
      for (const PowerTerm& t : terms) e = log_add(e, t.log_coef - t.power * log_x);
      sq = log_add(sq, 2 * e);
    }
    return log_add(log_gram - power * log_x, 0.5 * sq) >= log_chi;
  };
  return largest_root(satisfied, hi);
}

namespace {

// log of an upper bound on ||Z D||_2 for the computed z (T x p) with D = diag(e^log_scale), from
// its Gram matrix (upper triangle) and the columns' norm bounds (residual_power.h, "The block
// bound").
double log_block_norm(const std::vector<double>& gram, const std::vector<double>& z_norm,
                      const std::vector<double>& log_scale, double gamma_t) {
  const auto p = static_cast<int64_t>(z_norm.size());
  const double top = *std::max_element(log_scale.begin(), log_scale.end());
  std::vector<double> d(static_cast<size_t>(p)), g(static_cast<size_t>(p * p));
  double frob = 0;  // sum_i (d_i ||z_i||)^2 >= ||D' G D'||_F
  for (int64_t i = 0; i < p; ++i) {
    const auto si = static_cast<size_t>(i);
    d[si] = std::exp(log_scale[si] - top) * (1 + 4 * kUnit);  // rounded up: the norm grows in d
    frob += d[si] * z_norm[si] * d[si] * z_norm[si];
  }
  for (int64_t j = 0; j < p; ++j)
    for (int64_t i = 0; i <= j; ++i) {
      const auto at = static_cast<size_t>(i + j * p);
      g[at] = d[static_cast<size_t>(i)] * gram[at] * d[static_cast<size_t>(j)];
    }
  std::vector<double> eig(static_cast<size_t>(p));
  if (LAPACKE_dsyev(LAPACK_COL_MAJOR, 'N', 'U', static_cast<lapack_int>(p), g.data(),
                    static_cast<lapack_int>(p), eig.data()) != 0)
    return top + 0.5 * std::log(frob * (1 + gamma_t) + 1e-300);  // ||Z D'||_2^2 <= ||Z D'||_F^2
  // The Gram's entries within gamma_T ||z_i|| ||z_j|| (any order of the T-term sums), the
  // scaling's two roundings, dsyev's backward error 2 p gamma_p ||G'||_F.
  const double slack =
      (gamma_t + 4 * kUnit + 2 * static_cast<double>(p) * gamma_float64(static_cast<double>(p))) *
      frob;
  return top + 0.5 * std::log(std::max(eig.back(), 0.0) + slack);
}

}  // namespace

std::vector<double> column_norms(const double* v, int64_t m, int64_t p) {
  std::vector<double> n(static_cast<size_t>(p));
  for (int64_t i = 0; i < p; ++i)
    n[static_cast<size_t>(i)] =
        cblas_dnrm2(blas_int(m), v + i * m, 1) * (1 + 2 * kUnit * static_cast<double>(m));
  return n;
}

bool power_steps_done(double bound, double estimate, double target, int step, int max_steps) {
  if (!(target > 0)) return false;
  if (bound < target || !(estimate < target)) return true;
  if (!(estimate > 0)) return false;
  const double log_k = (2 * step + 1) * std::log(bound / estimate);
  const double needed = 0.5 * (log_k / std::log(target / estimate) - 1);
  return needed > max_steps - 1;
}

double probe_factor(int probes) {
  return std::pow(10.0, kFailureLog10 / probes) * std::sqrt(2 / std::acos(-1.0));
}

double projection_error(int64_t m, int64_t k, double eta) {
  return 2 * gamma_float64(static_cast<double>(m)) * std::sqrt(double(k)) * std::pow(1 + eta, 1.5) +
         3 * kUnit;
}

namespace {

// The probes' state across the power steps: w (M x p), the next y = A^T A w, each probe's
// chain of rounding terms (header) and the exact power-of-two scale the probes carry.
struct PowerChain {
  PowerChain(const std::vector<double>& q, int64_t cols, int64_t c_cols, double eta_q,
             double total_rows, const ResidualPowerOptions& o)
      : q_c(q),
        m(cols),
        p(o.probes),
        c(c_cols),
        eta(eta_q),
        f(projection_error(cols, c_cols, eta_q)),
        gamma_m(gamma_float64(static_cast<double>(cols))),
        gamma_t(gamma_float64(total_rows)),
        n_abs(o.abs_norm),
        s1(o.sigma1_upper) {}

  const std::vector<double>& q_c;
  int64_t m, p, c;
  double eta, f, gamma_m, gamma_t, n_abs, s1;
  std::vector<double> w, y, coef, log_scale;  // true probe = stored * e^log_scale
  std::vector<std::vector<PowerTerm>> chain;

  // The start: omega, then w_0 = fl(P~ fl(P~ omega)). The start's mu_-1 is a term of power 0
  // (x ||r_j|| / x^(2j+1) carries x^(2j+1) mu_-1).
  void start(std::mt19937_64& rng) {
    w.resize(static_cast<size_t>(m * p));
    y.resize(w.size());
    log_scale.assign(static_cast<size_t>(p), 0.0);
    std::normal_distribution<double> normal(0.0, 1.0);
    for (auto& v : w) v = normal(rng);
    const auto omega_norm = column_norms(w.data(), m, p);
    project(q_c, m, c, w.data(), p, coef);
    const auto v_norm = column_norms(w.data(), m, p);
    project(q_c, m, c, w.data(), p, coef);
    chain.assign(static_cast<size_t>(p), {});
    for (size_t i = 0; i < chain.size(); ++i)
      chain[i].push_back(
          {log_or_minus_inf((eta * eta + (1 + eta) * f) * omega_norm[i] + f * v_norm[i]), 0});
  }

  // Rescales each probe to unit norm by a power of two (exact); returns the norms' bounds.
  std::vector<double> rescale() {
    auto w_norm = column_norms(w.data(), m, p);
    for (int64_t i = 0; i < p; ++i) {
      const auto s = static_cast<size_t>(i);
      if (!(w_norm[s] > 0)) continue;
      const int e = std::ilogb(w_norm[s]);
      cblas_dscal(blas_int(m), std::ldexp(1.0, -e), w.data() + i * m, 1);
      w_norm[s] = std::ldexp(w_norm[s], -e);
      log_scale[s] += e * std::log(2.0);
    }
    return w_norm;
  }

  // The probes' largest Rayleigh quotient ||z_j|| / ||w_j|| (a lower estimate of x).
  double estimate(const std::vector<double>& z_sq, const std::vector<double>& w_norm) const {
    double e = 0;
    for (size_t i = 0; i < w_norm.size(); ++i)
      if (w_norm[i] > 0) e = std::max(e, std::sqrt(z_sq[i]) / w_norm[i]);
    return e;
  }

  // The block bound's error terms after step j, per probe (residual_power.h, "The block bound"):
  // the chain's and gamma_M N ||w_j|| + s1 q_j over x^(2j+1), without the computed ||z_j||.
  std::vector<std::vector<PowerTerm>> error_terms(int step, const std::vector<double>& w_norm,
                                                  const std::vector<double>& q_part) const {
    std::vector<std::vector<PowerTerm>> out = chain;
    for (size_t i = 0; i < out.size(); ++i)
      out[i].push_back(
          {log_scale[i] + log_or_minus_inf(gamma_m * n_abs * w_norm[i] + s1 * q_part[i]),
           2 * step + 1});
    return out;
  }

  // The next probes: w <- fl(P~ fl(P~ y)), and this step's mu_l (header) into the chain.
  void advance(int step, const std::vector<double>& z_norm, const std::vector<double>& w_norm,
               const std::vector<double>& q_part) {
    const auto y_norm = column_norms(y.data(), m, p);
    project(q_c, m, c, y.data(), p, coef);
    const auto v_norm = column_norms(y.data(), m, p);
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
};

// The products of one block x (n x M, row-major: the column-major M x n matrix A_b^T):
// z = A_b w, y += A_b^T z, z's squared column norms into z_sq and z^T z into gram (p x p,
// column-major, upper triangle).
void block_products(const double* x, int64_t n, int64_t m, int64_t p, const double* w, double* z,
                    double* y, std::vector<double>& z_sq, std::vector<double>& gram) {
  cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, blas_int(n), blas_int(p), blas_int(m), 1.0,
              x, blas_int(m), w, blas_int(m), 0.0, z, blas_int(n));
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, blas_int(m), blas_int(p), blas_int(n), 1.0,
              x, blas_int(m), z, blas_int(n), 1.0, y, blas_int(m));
  for (int64_t i = 0; i < p; ++i) {
    const double* col = z + i * n;
    z_sq[static_cast<size_t>(i)] += cblas_ddot(blas_int(n), col, 1, col, 1);
  }
  cblas_dsyrk(CblasColMajor, CblasUpper, CblasTrans, blas_int(p), blas_int(n), 1.0, z, blas_int(n),
              1.0, gram.data(), blas_int(p));
}

// One lane's buffers (residual_power.h, "Lanes"), made once for every step. A single lane
// (own_blocks false) streams through block_stream.h, which holds the blocks, into the chain's y.
template <class In>
struct PowerLane {
  PowerLane(int64_t cols, int64_t rows, int64_t p, bool own_blocks)
      : stage(cols, rows),
        block(own_blocks ? static_cast<size_t>(rows * cols) : 0),
        z(static_cast<size_t>(rows * p)),
        y(own_blocks ? static_cast<size_t>(cols * p) : 0),
        z_sq(static_cast<size_t>(p)),
        gram(static_cast<size_t>(p * p)) {}
  RowStage<In> stage;
  std::vector<double> block, z, y, z_sq, gram;
  double read_seconds = 0, product_seconds = 0;
  std::exception_ptr error;
};

// Rows [begin, begin + count) through the stage, widened into dst (count x m, row-major): the
// load of both the single stream and each lane.
template <class In, class Read>
bool load_rows(RowStage<In>& stage, const Read& read, int64_t begin, int64_t count, int64_t m,
               double* dst) {
  return stage.for_each(read, begin, count, [&](const In* src, int64_t at, int64_t n) {
    std::copy(src, src + n * m, dst + (at - begin) * m);
    return true;
  });
}

// The lanes of a power pass and the rows of each lane's blocks.
template <class In>
struct PowerLanes {
  std::vector<PowerLane<In>> lanes;
  int64_t block_rows = 0;
};

int power_lane_count(const ResidualPowerOptions& o) {
  const int blas = std::max(1, openblas_get_num_threads());
  return std::clamp(o.lanes > 0 ? o.lanes : blas, 1, kMaxPowerLanes);
}

// Lane l's share of a pass: blocks l, l + L, ... of lanes.block_rows rows, read under read_lock,
// widened and multiplied with the BLAS's threads as the caller set them.
template <class In>
void run_lane(const std::function<void(int64_t, int64_t, In*)>& read, int64_t local_rows,
              bool reverse, PowerLanes<In>& all, size_t l, const PowerChain& s,
              std::mutex& read_lock, std::atomic<int64_t>& rows_in, std::atomic<bool>& stop,
              const std::function<void(int64_t)>& rows_done) {
  using clock = std::chrono::steady_clock;
  PowerLane<In>& lane = all.lanes[l];
  const int64_t m = s.m, b_rows = all.block_rows;
  const auto count = static_cast<int64_t>(all.lanes.size());
  std::fill(lane.y.begin(), lane.y.end(), 0.0);
  std::fill(lane.z_sq.begin(), lane.z_sq.end(), 0.0);
  std::fill(lane.gram.begin(), lane.gram.end(), 0.0);
  auto locked_read = [&](int64_t first, int64_t n, In* out) {
    const std::lock_guard<std::mutex> hold(read_lock);
    read(first, n, out);
  };
  for (int64_t begin = static_cast<int64_t>(l) * b_rows; begin < local_rows && !stop;
       begin += count * b_rows) {
    const int64_t n = std::min(b_rows, local_rows - begin);
    const int64_t at = reverse ? local_rows - begin - n : begin;  // "Order" (header)
    auto t = clock::now();
    load_rows(lane.stage, locked_read, at, n, m, lane.block.data());
    lane.read_seconds += std::chrono::duration<double>(clock::now() - t).count();
    t = clock::now();
    block_products(lane.block.data(), n, m, s.p, s.w.data(), lane.z.data(), lane.y.data(),
                   lane.z_sq, lane.gram);
    lane.product_seconds += std::chrono::duration<double>(clock::now() - t).count();
    const int64_t done = rows_in += n;
    if (l == 0 && rows_done) rows_done(done);  // progress from one thread only
  }
}

// One pass over A: z = A w (its squared column norms into z_sq, z^T z into gram), y = A^T z;
// summed over the processes of a collective. reverse: the rows last to first ("Order", header). One
// lane: blocks of block_rows streamed with overlapped reads and the BLAS's threads; several:
// residual_power.h, "Lanes".
template <class In>
void power_pass(const std::function<void(int64_t, int64_t, In*)>& read, int64_t local_rows,
                bool reverse, int64_t block_rows, const ResidualPowerOptions& o,
                SpectrumTiming* timing, const std::function<void(int64_t)>& rows_done,
                PowerLanes<In>& all, PowerChain& s, std::vector<double>& z_sq,
                std::vector<double>& gram) {
  const int64_t m = s.m, p = s.p;
  z_sq.assign(static_cast<size_t>(p), 0.0);
  gram.assign(static_cast<size_t>(p * p), 0.0);
  if (all.lanes.size() == 1) {
    PowerLane<In>& one = all.lanes[0];
    auto load = [&](int64_t begin, int64_t count, double* dst) {
      const int64_t at = reverse ? local_rows - begin - count : begin;
      return load_rows(one.stage, read, at, count, m, dst);
    };
    std::fill(s.y.begin(), s.y.end(), 0.0);
    stream_blocks(
        local_rows, m, block_rows, o.overlap, timing, load,
        [&](const double* x, int64_t n) {
          block_products(x, n, m, p, s.w.data(), one.z.data(), s.y.data(), z_sq, gram);
        },
        [&](int64_t done) {
          if (rows_done) rows_done(done);
        });
  } else {
    std::mutex read_lock;
    std::atomic<int64_t> rows_in{0};
    std::atomic<bool> stop{false};
    const int blas_threads = openblas_get_num_threads();
    openblas_set_num_threads(1);
    auto lane_body = [&](size_t l) {
      try {
        openblas_set_num_threads(1);  // this thread's OpenMP setting (the value is already 1)
        run_lane(read, local_rows, reverse, all, l, s, read_lock, rows_in, stop, rows_done);
      } catch (...) {
        all.lanes[l].error = std::current_exception();
        stop = true;
      }
    };
    std::vector<std::thread> helpers;
    for (size_t l = 1; l < all.lanes.size(); ++l) helpers.emplace_back(lane_body, l);
    lane_body(0);
    for (auto& h : helpers) h.join();
    openblas_set_num_threads(blas_threads);
    double read_s = 0, product_s = 0;
    for (auto& lane : all.lanes) {
      if (lane.error) std::rethrow_exception(lane.error);
      read_s += lane.read_seconds;
      product_s += lane.product_seconds;
      lane.read_seconds = lane.product_seconds = 0;
    }
    // the lanes' mean: each lane's time is split between its reads and its products
    const auto lanes = static_cast<double>(all.lanes.size());
    timing->read += read_s / lanes;
    timing->accumulate += product_s / lanes;
    std::copy(all.lanes[0].y.begin(), all.lanes[0].y.end(), s.y.begin());
    z_sq = all.lanes[0].z_sq;
    gram = all.lanes[0].gram;
    for (size_t l = 1; l < all.lanes.size(); ++l) {
      cblas_daxpy(blas_int(m * p), 1.0, all.lanes[l].y.data(), 1, s.y.data(), 1);
      for (size_t i = 0; i < z_sq.size(); ++i) z_sq[i] += all.lanes[l].z_sq[i];
      for (size_t i = 0; i < gram.size(); ++i) gram[i] += all.lanes[l].gram[i];
    }
  }
  if (o.collective) {
    o.collective->allreduce_sum(s.y.data(), static_cast<int64_t>(s.y.size()));
    o.collective->allreduce_sum(z_sq.data(), p);
    o.collective->allreduce_sum(gram.data(), p * p);
  }
}

// The lanes for a pass over local_rows rows in blocks of block_rows: one lane keeps the
// overlapped stream's two blocks (its own is only the stage and z); L lanes share their memory.
template <class In>
PowerLanes<In> make_lanes(const ResidualPowerOptions& o, int64_t local_rows, int64_t cols,
                          int64_t block_rows) {
  PowerLanes<In> all;
  const int count = power_lane_count(o);
  all.block_rows =
      count == 1 ? block_rows : std::clamp<int64_t>(2 * block_rows / count, 1, local_rows);
  all.lanes.reserve(static_cast<size_t>(count));
  for (int l = 0; l < count; ++l) all.lanes.emplace_back(cols, all.block_rows, o.probes, count > 1);
  return all;
}

}  // namespace

template <class In>
ResidualPowerResult residual_power_bound(
    const std::function<void(int64_t, int64_t, In*)>& read, int64_t local_rows, int64_t cols,
    const std::vector<double>& q_c, int64_t c, double eta, const ResidualPowerOptions& o,
    std::mt19937_64& rng, SpectrumTiming* timing,
    const std::function<void(const ResidualPowerStep&)>& step_done,
    const std::function<void(int64_t)>& rows_done) {
  using clock = std::chrono::steady_clock;
  const double rows = static_cast<double>(o.total_rows > 0 ? o.total_rows : local_rows);
  PowerChain s(q_c, cols, c, eta, rows, o);
  s.start(rng);
  const double log_chi = block_chi_log(o.probes);
  ResidualPowerResult out;
  out.bound = o.sigma1_upper;
  const int64_t block_rows = std::max<int64_t>(1, std::min(o.block_rows, local_rows));
  auto lanes = make_lanes<In>(o, local_rows, cols, block_rows);
  std::vector<double> z_sq, gram, z_norm(static_cast<size_t>(o.probes));
  for (int step = 0; step < o.max_steps; ++step) {
    const auto start = clock::now();
    const auto w_norm = s.rescale();
    const auto q_part = range_parts(q_c, s.m, c, eta, s.w.data(), s.p, w_norm);
    // The first step after the sketch's (forward) pass streams last to first, then they alternate.
    power_pass(read, local_rows, /*reverse=*/step % 2 == 0, block_rows, o, timing, rows_done, lanes,
               s, z_sq, gram);
    ++out.steps;
    for (size_t i = 0; i < z_norm.size(); ++i)
      z_norm[i] = std::sqrt(std::max(z_sq[i], 0.0) * (1 + s.gamma_t));
    out.estimate = s.estimate(z_sq, w_norm);
    const double log_gram = log_block_norm(gram, z_norm, s.log_scale, s.gamma_t);
    out.bound = std::min(
        out.bound, block_bound_root(log_gram, 2 * step + 1, s.error_terms(step, w_norm, q_part),
                                    log_chi, o.sigma1_upper));
    ++out.checks;
    if (step_done)
      step_done({step + 1, out.bound, out.estimate,
                 std::chrono::duration<double>(clock::now() - start).count()});
    if (power_steps_done(out.bound, out.estimate, o.target, step, o.max_steps)) break;
    s.advance(step, z_norm, w_norm, q_part);
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
