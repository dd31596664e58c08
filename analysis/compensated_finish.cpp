#include "analysis/compensated_finish.h"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

#include "analysis/block_stream.h"
#include "analysis/compensated_dot.h"
#include "analysis/inertia.h"
#include "analysis/numerical_rank.h"
#include "analysis/residual_power.h"
#include "analysis/sketch_parts.h"
#include "analysis/streamed_qr.h"
#include "common/vector_clones.h"

namespace sb::analysis {
namespace {

constexpr double kUnit = kFloat64Eps / 2;

int blas_int(int64_t n) { return static_cast<int>(n); }
size_t at(int64_t i) { return static_cast<size_t>(i); }

double log_or_minus_inf(double v) {
  return v > 0 ? std::log(v) : -std::numeric_limits<double>::infinity();
}

// (p_j, s_j) += a u_j for j < k: one Dot2 step on k independent accumulators (compensated_dot.h).
SB_VECTOR_CLONES void dot2_axpy(double a, const double* __restrict u, int64_t k,
                                double* __restrict p, double* __restrict s) {
  for (int64_t j = 0; j < k; ++j) {
    double h, l, t, e;
    two_prod(a, u[j], h, l);
    two_sum(p[j], h, t, e);
    p[j] = t;
    s[j] += e + l;
  }
}

// Streams the rows in blocks of block_rows into f(block, first_row, count) (block_stream.h, one
// buffer: the finish's products are compute-bound).
template <class F>
void for_blocks(const std::function<void(int64_t, int64_t, double*)>& read, int64_t rows,
                int64_t cols, int64_t block_rows, SpectrumTiming* timing, F f) {
  SpectrumTiming local;
  auto load = [&read](int64_t begin, int64_t n, double* out) {
    read(begin, n, out);
    return true;
  };
  int64_t first = 0;
  stream_blocks(
      rows, cols, block_rows, /*overlap=*/false, timing ? timing : &local, load,
      [&](const double* x, int64_t n) {
        f(x, first, n);
        first += n;
      },
      [](int64_t) {});
}

// f(begin, end) over [0, n) in `threads` contiguous parts, each on its own thread (the caller's
// the last). Every use below splits independent outputs (rows of a product, or accumulators), each
// summed in the serial order: the result is the same to the bit for any number of threads.
template <class F>
void parallel_for(int64_t n, int threads, F f) {
  const int64_t parts = std::clamp<int64_t>(threads, 1, std::max<int64_t>(n, 1));
  std::vector<std::thread> pool;
  for (int64_t i = 0; i + 1 < parts; ++i)
    pool.emplace_back([&f, i, n, parts] { f(n * i / parts, n * (i + 1) / parts); });
  f(n * (parts - 1) / parts, n);
  for (auto& t : pool) t.join();
}

// Column-major m x k <-> row-major m x k.
std::vector<double> transposed(const std::vector<double>& x, int64_t m, int64_t k, bool to_rows) {
  std::vector<double> y(at(m * k));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < k; ++j) {
      if (to_rows)
        y[at(i * k + j)] = x[at(i + j * m)];
      else
        y[at(i + j * m)] = x[at(i * k + j)];
    }
  return y;
}

// hi + lo = p + s exactly, hi = fl(p + s), entry by entry.
void normalise(std::vector<double>& p, std::vector<double>& s) {
  for (size_t i = 0; i < p.size(); ++i) {
    double h, l;
    two_sum(p[i], s[i], h, l);
    p[i] = h;
    s[i] = l;
  }
}

// A Q (T x k, row-major) for q_rows = Q row-major (M x k), compensated: hi + lo per entry.
void times_basis(const std::function<void(int64_t, int64_t, double*)>& read, int64_t rows,
                 int64_t cols, int64_t block_rows, const std::vector<double>& q_rows, int64_t k,
                 int threads, SpectrumTiming* timing, std::vector<double>& hi,
                 std::vector<double>& lo) {
  hi.assign(at(rows * k), 0.0);
  lo.assign(at(rows * k), 0.0);
  for_blocks(read, rows, cols, block_rows, timing, [&](const double* x, int64_t b, int64_t n) {
    parallel_for(n, threads, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        double* p = hi.data() + (b + t) * k;
        double* s = lo.data() + (b + t) * k;
        for (int64_t m = 0; m < cols; ++m)
          dot2_axpy(x[t * cols + m], q_rows.data() + m * k, k, p, s);
      }
    });
  });
  normalise(hi, lo);
}

// A^T U (M x k, column-major, rounded once) for u_rows = U row-major (T x k), compensated.
std::vector<double> transpose_times(const std::function<void(int64_t, int64_t, double*)>& read,
                                    int64_t rows, int64_t cols, int64_t block_rows,
                                    const std::vector<double>& u_rows, int64_t k, int threads,
                                    SpectrumTiming* timing) {
  std::vector<double> p(at(cols * k), 0.0), s(at(cols * k), 0.0);
  for_blocks(read, rows, cols, block_rows, timing, [&](const double* x, int64_t b, int64_t n) {
    parallel_for(cols, threads, [&](int64_t m0, int64_t m1) {
      for (int64_t t = 0; t < n; ++t) {
        const double* u = u_rows.data() + (b + t) * k;
        for (int64_t m = m0; m < m1; ++m)
          dot2_axpy(x[t * cols + m], u, k, p.data() + m * k, s.data() + m * k);
      }
    });
  });
  for (size_t i = 0; i < p.size(); ++i) p[i] += s[i];
  return transposed(p, cols, k, /*to_rows=*/false);
}

// Householder QR of the column-major m x k matrix y in place (streamed_qr.h): Q in y, the
// diagonal of R returned (with R itself into *r when asked, k x k column-major).
std::vector<double> householder(std::vector<double>& y, int64_t m, int64_t k,
                                std::vector<double>* r = nullptr) {
  std::vector<double> own, diag(at(k));
  std::vector<double>& rr = r ? *r : own;
  householder_qr(y.data(), m, k, &rr);
  for (int64_t j = 0; j < k; ++j) diag[at(j)] = std::abs(rr[at(j + j * k)]);
  return diag;
}

// One round of the header's one-sided iteration: q (M x k, column-major) -> orth(A^T U), U =
// orth(A Q) rotated by its R's left singular vectors; returns the new Q's |r_jj|.
std::vector<double> iterate(const std::function<void(int64_t, int64_t, double*)>& read,
                            int64_t rows, int64_t cols, int64_t block_rows, std::vector<double>& q,
                            int64_t k, int threads, SpectrumTiming* timing) {
  std::vector<double> hi, lo, r;
  times_basis(read, rows, cols, block_rows, transposed(q, cols, k, true), k, threads, timing, hi,
              lo);
  std::vector<double> u = transposed(hi, rows, k, /*to_rows=*/false);
  householder(u, rows, k, &r);
  const std::vector<double> w = left_singular_vectors(r, k);
  std::vector<double> rotated(at(rows * k));
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, blas_int(rows), blas_int(k), blas_int(k),
              1.0, u.data(), blas_int(rows), w.data(), blas_int(k), 0.0, rotated.data(),
              blas_int(rows));
  q = transpose_times(read, rows, cols, block_rows, transposed(rotated, rows, k, true), k, threads,
                      timing);
  return householder(q, cols, k);
}

// The lower bound of the header from Z_c = zh + zl (T x c, row-major): lambda_min of the scaled
// Gram verified by Cholesky, the norms n_j, delta; fills out.lower, out.sigma, out.rank_min.
void lower_bounds(const std::vector<double>& zh, const std::vector<double>& zl, int64_t rows,
                  int64_t c, double eps_z, double eta, double tol_hi,
                  CompensatedFinishResult& out) {
  std::vector<double> g(at(c * c), 0.0);
  // zh row-major T x c is the column-major c x T matrix X: G = X X^T.
  cblas_dsyrk(CblasColMajor, CblasUpper, CblasNoTrans, blas_int(c), blas_int(rows), 1.0, zh.data(),
              blas_int(c), 0.0, g.data(), blas_int(c));
  std::vector<double> n(at(c)), lo_sq(at(c), 0.0);
  for (int64_t j = 0; j < c; ++j) n[at(j)] = std::sqrt(g[at(j + j * c)]);
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t j = 0; j < c; ++j) lo_sq[at(j)] += zl[at(t * c + j)] * zl[at(t * c + j)];
  double delta_sq = 0, h_max = 0;
  for (int64_t j = 0; j < c; ++j) {
    if (!(n[at(j)] > 0)) return;  // a zero column: no lower bound
    const double lo_norm = std::sqrt(lo_sq[at(j)]) * (1 + gamma_float64(double(rows)));
    delta_sq += std::pow((lo_norm + eps_z) / n[at(j)], 2);
  }
  std::vector<double> h(at(c * c), 0.0);
  for (int64_t j = 0; j < c; ++j)
    for (int64_t i = 0; i <= j; ++i) {
      h[at(i + j * c)] = g[at(i + j * c)] / n[at(i)] / n[at(j)];
      if (i == j) h_max = std::max(h_max, h[at(i + j * c)]);
    }
  std::vector<double> ev(at(c)), copy = h;
  const auto lc = static_cast<lapack_int>(c);
  if (LAPACKE_dsyev(LAPACK_COL_MAJOR, 'N', 'U', lc, copy.data(), lc, ev.data()) != 0) return;
  // The largest s = 0.9 lambda_est / 2^i for which Cholesky of fl(H) - s I runs through.
  double s = 0.9 * ev[0], lambda_lo = 0;
  const double chol = gamma_float64(double(c + 1)) * double(c) * (1 + gamma_float64(double(c + 1)));
  const double gram = double(c) * gamma_float64(double(rows + 2)) * 1.01;
  for (int tries = 0; tries < 30 && s > 1e-6; ++tries, s *= 0.5) {
    copy = h;
    for (int64_t j = 0; j < c; ++j) copy[at(j + j * c)] -= s;
    if (LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', lc, copy.data(), lc) == 0) {
      lambda_lo = s - chol * h_max - gram;
      break;
    }
  }
  out.sigma_min_scale = std::max(0.0, std::sqrt(std::max(lambda_lo, 0.0)) - std::sqrt(delta_sq));
  std::sort(n.begin(), n.end(), std::greater<>());
  out.sigma = n;
  out.lower.assign(at(c), 0.0);
  out.rank_min = 0;
  for (int64_t j = 0; j < c; ++j) {
    out.lower[at(j)] = n[at(j)] * out.sigma_min_scale / std::sqrt(1 + eta);
    if (out.lower[at(j)] > tol_hi) ++out.rank_min;
  }
}

// Norms of the p columns of a row-major r x p matrix, widened by their rounding.
std::vector<double> row_major_norms(const std::vector<double>& x, int64_t r, int64_t p) {
  std::vector<double> sq(at(p), 0.0);
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < p; ++j) sq[at(j)] += x[at(i * p + j)] * x[at(i * p + j)];
  for (auto& v : sq) v = std::sqrt(v) * (1 + gamma_float64(double(r) + 2));
  return sq;
}

// The power steps of the header on B = A (I - V_c V_c^T), with z_c = zh + zl = A V_c.
struct CompensatedChain {
  const std::vector<double>& v;  // V_c, row-major M x c
  const std::vector<double>& zh;
  const std::vector<double>& zl;  // T x c row-major
  int64_t t, m, c, p;
  int threads = 1;
  double a = 0, tiny = 0;
  std::vector<double> w, log_scale;  // w: M x p row-major, true probe = stored e^log_scale
  std::vector<std::vector<PowerTerm>> chain;

  // g = V_c^T w as hi + lo (c x p, row-major).
  void coefficients(std::vector<double>& gh, std::vector<double>& gl) const {
    gh.assign(at(c * p), 0.0);
    gl.assign(at(c * p), 0.0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < c; ++j)
        dot2_axpy(v[at(i * c + j)], w.data() + i * p, p, gh.data() + j * p, gl.data() + j * p);
    normalise(gh, gl);
  }

  // Rescales each probe by a power of two (exact) to a norm in [1, 2); returns the norms.
  std::vector<double> rescale() {
    auto n = row_major_norms(w, m, p);
    for (int64_t j = 0; j < p; ++j) {
      if (!(n[at(j)] > 0)) continue;
      const int e = std::ilogb(n[at(j)]);
      for (int64_t i = 0; i < m; ++i) w[at(i * p + j)] = std::ldexp(w[at(i * p + j)], -e);
      n[at(j)] = std::ldexp(n[at(j)], -e);
      log_scale[at(j)] += e * std::log(2.0);
    }
    return n;
  }

  // One pass: z = fl(B w) (T x p), then the next w = fl(B^T z); their norms into z_norm, y_norm.
  void step(const std::function<void(int64_t, int64_t, double*)>& read, int64_t block_rows,
            SpectrumTiming* timing, std::vector<double>& z_norm, std::vector<double>& y_norm) {
    std::vector<double> gh, gl;
    coefficients(gh, gl);
    std::vector<double> yp(at(m * p), 0.0), ys(at(m * p), 0.0), hp(at(c * p), 0.0),
        hs(at(c * p), 0.0), z_sq(at(p), 0.0), zb(at(block_rows * p));
    for_blocks(read, t, m, block_rows, timing, [&](const double* x, int64_t b, int64_t n) {
      // The block's rows of z = fl(B w), each one Dot2 chain (independent rows: split).
      parallel_for(n, threads, [&](int64_t r0, int64_t r1) {
        std::vector<double> zs(at(p));
        for (int64_t r = r0; r < r1; ++r) {
          const double* row = x + r * m;
          const int64_t tr = b + r;
          double* zp = zb.data() + r * p;
          std::fill(zp, zp + p, 0.0);
          std::fill(zs.begin(), zs.end(), 0.0);
          for (int64_t i = 0; i < m; ++i) dot2_axpy(row[i], w.data() + i * p, p, zp, zs.data());
          for (int64_t j = 0; j < c; ++j) {
            const double h = zh[at(tr * c + j)], l = zl[at(tr * c + j)];
            dot2_axpy(-h, gh.data() + j * p, p, zp, zs.data());
            dot2_axpy(-h, gl.data() + j * p, p, zp, zs.data());
            dot2_axpy(-l, gh.data() + j * p, p, zp, zs.data());
          }
          for (int64_t i = 0; i < p; ++i) zp[i] += zs[at(i)];
        }
      });
      for (int64_t r = 0; r < n; ++r)
        for (int64_t i = 0; i < p; ++i) z_sq[at(i)] += zb[at(r * p + i)] * zb[at(r * p + i)];
      // A^T z and Z_c^T z: accumulators split by column, rows added in order.
      parallel_for(m, threads, [&](int64_t i0, int64_t i1) {
        for (int64_t r = 0; r < n; ++r)
          for (int64_t i = i0; i < i1; ++i)
            dot2_axpy(x[r * m + i], zb.data() + r * p, p, yp.data() + i * p, ys.data() + i * p);
      });
      parallel_for(c, threads, [&](int64_t j0, int64_t j1) {
        for (int64_t r = 0; r < n; ++r) {
          const int64_t tr = b + r;
          for (int64_t j = j0; j < j1; ++j) {
            double* hpj = hp.data() + j * p;
            double* hsj = hs.data() + j * p;
            dot2_axpy(zh[at(tr * c + j)], zb.data() + r * p, p, hpj, hsj);
            dot2_axpy(zl[at(tr * c + j)], zb.data() + r * p, p, hpj, hsj);
          }
        }
      });
    });
    normalise(hp, hs);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < c; ++j) {
        dot2_axpy(-v[at(i * c + j)], hp.data() + j * p, p, yp.data() + i * p, ys.data() + i * p);
        dot2_axpy(-v[at(i * c + j)], hs.data() + j * p, p, yp.data() + i * p, ys.data() + i * p);
      }
    }
    for (size_t i = 0; i < yp.size(); ++i) yp[i] += ys[i];
    z_norm.resize(at(p));
    for (int64_t i = 0; i < p; ++i)
      z_norm[at(i)] = std::sqrt(z_sq[at(i)]) * (1 + gamma_float64(double(t) + 2));
    y_norm = row_major_norms(yp, m, p);
    w.swap(yp);
  }
};

}  // namespace

double compensated_finish_bytes(int64_t rows, int64_t cols, int64_t k, int probes) {
  const double t = double(rows), m = double(cols), kk = double(k), p = double(probes);
  return 8 * (4 * t * kk + 4 * m * kk + 4 * m * p + 2 * t * p + 2 * kk * kk) + 8 * 256 * m;
}

CompensatedFinishResult compensated_finish(
    const std::function<void(int64_t, int64_t, double*)>& read, int64_t rows, int64_t cols,
    std::vector<double> basis, int64_t k, const CompensatedFinishOptions& o, std::mt19937_64& rng,
    SpectrumTiming* timing,
    const std::function<void(const char*, const CompensatedFinishResult&)>& step_done) {
  CompensatedFinishResult out;
  const int64_t block_rows = std::max<int64_t>(1, std::min(o.block_rows, rows));
  auto done = [&](const char* kind) {
    if (step_done) step_done(kind, out);
  };
  std::vector<double> diag;
  for (int it = 0; it < std::max(o.iterations, 1); ++it) {
    diag = iterate(read, rows, cols, block_rows, basis, k, o.threads, timing);
    out.passes += 2;
    done("iterate");
  }
  const int64_t c = std::count_if(diag.begin(), diag.end(), [&](double r) { return r > o.tol; });
  out.count = c;
  if (c < 1 || c >= k) return out;
  // V_c: the first c columns of the refined basis (the larger directions first).
  std::vector<double> vc(basis.begin(), basis.begin() + cols * c);
  const double eta = sketch_detail::defect(vc.data(), cols, c);
  const auto v_rows = transposed(vc, cols, c, /*to_rows=*/true);
  std::vector<double> zh, zl;
  times_basis(read, rows, cols, block_rows, v_rows, c, o.threads, timing, zh, zl);
  ++out.passes;
  const double gm = gamma_float64(2 * double(cols)), big = double(std::max(rows, cols));
  const double tiny = (big + 3 * double(c)) * kTinyPerTerm * std::sqrt(big);
  const double eps_z = gm * gm * o.frobenius * std::sqrt(double(c) * (1 + eta)) + tiny;
  lower_bounds(zh, zl, rows, c, eps_z, eta, o.tol_hi, out);
  done("count");

  // The power steps on B = A (I - V_c V_c^T) (header, "Upper bound").
  double z_frob = 0;
  for (size_t i = 0; i < zh.size(); ++i) z_frob += zh[i] * zh[i] + zl[i] * zl[i];
  z_frob = std::sqrt(z_frob) * (1 + gamma_float64(double(zh.size()))) * (1 + kUnit);
  const double gn = gamma_float64(big + 3 * double(c)), root_eta = std::sqrt(1 + eta);
  CompensatedChain ch{v_rows, zh, zl, rows, cols, c, o.probes, o.threads, 0, 0, {}, {}, {}};
  ch.a = 8 * (gn * gn + kUnit * kUnit) * (o.frobenius + z_frob * std::sqrt(double(c) * (1 + eta))) *
             root_eta +
         eps_z * root_eta;
  ch.tiny = tiny;
  ch.w.resize(at(cols * o.probes));
  std::normal_distribution<double> normal(0.0, 1.0);
  for (auto& x : ch.w) x = normal(rng);
  ch.log_scale.assign(at(o.probes), 0.0);
  ch.chain.assign(at(o.probes), {});
  const double log_factor = std::log(probe_factor(o.probes)), hi = o.frobenius * (1 + eta);
  out.residual_bound = hi;
  std::vector<double> z_norm, y_norm;
  for (int step = 0; step < o.max_steps; ++step) {
    const auto w_norm = ch.rescale();
    ch.step(read, block_rows, timing, z_norm, y_norm);
    ++out.passes;
    ++out.power_steps;
    auto terms = ch.chain;
    double estimate = 0;
    for (size_t i = 0; i < terms.size(); ++i) {
      const double main = (1 + 2 * kUnit) * z_norm[i] + ch.a * w_norm[i] + tiny;
      terms[i].push_back({ch.log_scale[i] + log_or_minus_inf(main), 2 * step + 1});
      estimate = std::max(estimate, z_norm[i] / w_norm[i]);
    }
    out.residual_bound = std::min(out.residual_bound, power_bound_root(terms, log_factor, hi));
    ++out.checks;
    out.upper_certified = out.residual_bound < o.tol_lo;
    done("power");
    if (out.upper_certified) break;
    if (power_steps_done(out.residual_bound, estimate, o.tol_lo, step, o.max_steps)) break;
    for (size_t i = 0; i < ch.chain.size(); ++i) {
      const double d = 2 * kUnit * z_norm[i] + ch.a * w_norm[i] + tiny;
      const double e = 2 * kUnit * y_norm[i] + ch.a * z_norm[i] + tiny;
      ch.chain[i].push_back({ch.log_scale[i] + log_or_minus_inf(d), 2 * step + 1});
      ch.chain[i].push_back({ch.log_scale[i] + log_or_minus_inf(e), 2 * step + 2});
    }
  }
  return out;
}

}  // namespace sb::analysis
