#include "analysis/inertia.h"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

#include "common/errors.h"

namespace sb::analysis {
namespace {

// Copies the strict upper triangle onto the strict lower one (to_lower) or back, in 64 x 64
// tiles so that the strided side stays in cache.
void mirror(double* a, int64_t n, bool to_lower) {
  constexpr int64_t tile = 64;
  for (int64_t j0 = 0; j0 < n; j0 += tile)
    for (int64_t i0 = 0; i0 <= j0; i0 += tile) {
      const int64_t j1 = std::min(j0 + tile, n);
      for (int64_t j = j0; j < j1; ++j) {
        const int64_t i1 = std::min(i0 + tile, j);
        for (int64_t i = i0; i < i1; ++i) {
          if (to_lower)
            a[j + i * n] = a[i + j * n];
          else
            a[i + j * n] = a[j + i * n];
        }
      }
    }
}

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A negative info: a NaN LAPACKE's check finds (a Gram matrix whose entries overflowed) or its
// workspace not allocated (-1010); the line for the InputError that reports it.
std::string lapack_error(const char* routine, int64_t n, lapack_int info) {
  return std::string(routine) + " failed on a " + std::to_string(n) + " x " + std::to_string(n) +
         " symmetric matrix: info = " + std::to_string(info);
}

}  // namespace

double gamma_float64(double k) {
  const double u = std::ldexp(1.0, -53);
  return k * u / (1 - k * u);
}

InertiaCounter::InertiaCounter(std::vector<double> g, int64_t n) : n_(n), a_(std::move(g)) {
  if (n < 1 || a_.size() != static_cast<size_t>(n) * static_cast<size_t>(n))
    throw OptionError("InertiaCounter: g, n",
                      "an n x n matrix with n = " + std::to_string(n) + " >= 1",
                      std::to_string(a_.size()) + " entries");
  diag_.resize(static_cast<size_t>(n));
  double f2 = 0;
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i <= j; ++i) {
      const double v = a_[static_cast<size_t>(i + j * n)];
      nonnegative_ = nonnegative_ && v >= 0;
      f2 += (i == j ? 1 : 2) * v * v;
    }
  frobenius_ = std::sqrt(f2);
  for (int64_t i = 0; i < n; ++i)
    diag_[static_cast<size_t>(i)] = a_[static_cast<size_t>(i + i * n)];
  mirror(a_.data(), n, /*to_lower=*/true);
}

double InertiaCounter::trace() const { return std::accumulate(diag_.begin(), diag_.end(), 0.0); }

double InertiaCounter::abs_norm() const {
  return nonnegative_ && lambda1_upper_ > 0 ? lambda1_upper_ : frobenius_;
}

void InertiaCounter::restore(double tau) {
  const auto start = std::chrono::steady_clock::now();
  if (!upper_clean_) mirror(a_.data(), n_, /*to_lower=*/false);
  for (int64_t i = 0; i < n_; ++i)
    a_[static_cast<size_t>(i + i * n_)] = diag_[static_cast<size_t>(i)] - tau;
  upper_clean_ = true;
  timing_.restore += since(start);
}

PowerIteration InertiaCounter::largest_eigenvalue(double rel_tol, int max_iterations) {
  restore(0.0);
  const int64_t n = n_;
  const auto un = static_cast<size_t>(n);
  std::vector<double> x(un, 1.0 / std::sqrt(static_cast<double>(n))), y(un);
  const double abs_g = frobenius_;  // >= || |G| ||_2
  // Rounding of x^T G x and of the residual: at most gamma_(2n+2) |x|^T |G| |x| <= gamma || |G| ||.
  const double round = gamma_float64(2.0 * static_cast<double>(n) + 2);
  PowerIteration p;
  for (int it = 1; it <= max_iterations; ++it) {
    cblas_dsymv(CblasColMajor, CblasUpper, static_cast<int>(n), 1.0, a_.data(), static_cast<int>(n),
                x.data(), 1, 0.0, y.data(), 1);
    const double xx = cblas_ddot(static_cast<int>(n), x.data(), 1, x.data(), 1);
    const double rho = cblas_ddot(static_cast<int>(n), x.data(), 1, y.data(), 1) / xx;
    p.iterations = it;
    p.rho = rho;
    const bool positive =
        nonnegative_ && std::all_of(x.begin(), x.end(), [](double v) { return v > 0; });
    double gap = 0;  // of the bracket, before rounding terms
    if (positive) {
      double ratio = 0;
      for (size_t i = 0; i < un; ++i) ratio = std::max(ratio, y[i] / x[i]);
      gap = ratio - rho;
      p.upper = ratio * (1 + 2 * gamma_float64(static_cast<double>(n)));
    } else {
      double r2 = 0;
      for (size_t i = 0; i < un; ++i) r2 += (y[i] - rho * x[i]) * (y[i] - rho * x[i]);
      gap = std::sqrt(r2 / xx);
      p.upper = rho + gap + round * abs_g;
    }
    p.rigorous = positive;
    p.lower = rho - round * (nonnegative_ ? rho : abs_g);
    const double ynorm = cblas_dnrm2(static_cast<int>(n), y.data(), 1);
    if (!(ynorm > 0) || gap <= rel_tol * rho) break;  // G x = 0: G = 0 on x's span
    for (size_t i = 0; i < un; ++i) x[i] = y[i] / ynorm;
  }
  p.lower = std::max(p.lower, 0.0);  // G is positive semidefinite up to rounding
  lambda1_upper_ = p.upper;
  return p;
}

// Cholesky with diagonal pivoting of the upper triangle of P^T G P, in place, in the blocked form
// of LAPACK's dpstrf (panels of nb columns: rows of R by dgemv within a panel, the trailing matrix
// by one dsyrk per panel). Stops before pivot j when the trace of the Schur complement is below
// trace_stop, when no diagonal entry is positive, or at max_pivots; then applies the pending panel
// rows so that the trailing block A(j:, j:) holds the Schur complement S_G. Returns j.
int64_t InertiaCounter::pivoted_cholesky(double trace_stop, int64_t max_pivots) {
  const int64_t n = n_, nb = 64;
  auto at = [&](int64_t i, int64_t j) -> double& { return a_[static_cast<size_t>(i + j * n)]; };
  std::vector<double> dot(static_cast<size_t>(n));
  const int ni = static_cast<int>(n);
  // The O(n) and O(n nb) work of each pivot is plain loops: OpenMP BLAS calls that small cost more
  // in thread wake-ups than they save (and far more on a busy machine); the panel updates are
  // dsyrk.
  for (int64_t k0 = 0; k0 < n; k0 += nb) {
    const int64_t k1 = std::min(k0 + nb, n);
    std::fill(dot.begin() + k0, dot.end(), 0.0);  // squares of this panel's rows, per column
    for (int64_t j = k0; j < k1; ++j) {
      int64_t p = j;
      double best = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t i = j; i < n; ++i) {
        const double c = at(i, i) - dot[static_cast<size_t>(i)];  // diagonal of S_G
        sum += c;
        if (c > best) {
          best = c;
          p = i;
        }
      }
      if (!(best > 0) || sum < trace_stop || j >= max_pivots) {
        if (j > k0)
          cblas_dsyrk(CblasColMajor, CblasUpper, CblasTrans, static_cast<int>(n - j),
                      static_cast<int>(j - k0), -1.0, &at(k0, j), ni, 1.0, &at(j, j), ni);
        return j;
      }
      if (p != j) {  // symmetric interchange of j and p in the upper triangle (as dpstrf)
        at(p, p) = at(j, j);
        for (int64_t r = 0; r < j; ++r) std::swap(at(r, j), at(r, p));
        for (int64_t c = p + 1; c < n; ++c) std::swap(at(j, c), at(p, c));
        for (int64_t m = j + 1; m < p; ++m) std::swap(at(j, m), at(m, p));
        std::swap(dot[static_cast<size_t>(j)], dot[static_cast<size_t>(p)]);
      }
      const double ajj = std::sqrt(best);
      at(j, j) = ajj;
      // Row j of R: (A(j, c) - R(k0:j, j)^T R(k0:j, c)) / r_jj, and its squares into dot.
      const double* rj = &at(k0, j);
      const int64_t len = j - k0;
      for (int64_t c = j + 1; c < n; ++c) {
        const double* rc = &at(k0, c);
        double v = at(j, c);
        for (int64_t l = 0; l < len; ++l) v -= rc[l] * rj[l];
        v /= ajj;
        at(j, c) = v;
        dot[static_cast<size_t>(c)] += v * v;
      }
    }
    if (k1 < n)
      cblas_dsyrk(CblasColMajor, CblasUpper, CblasTrans, static_cast<int>(n - k1),
                  static_cast<int>(k1 - k0), -1.0, &at(k0, k1), ni, 1.0, &at(k1, k1), ni);
  }
  return n;
}

int64_t InertiaCounter::split(double t_lo, double t_hi, int64_t max_pivots) {
  const int64_t n = n_;
  auto at = [&](int64_t i, int64_t j) -> double& { return a_[static_cast<size_t>(i + j * n)]; };
  method_ = "pivoted_cholesky";
  if (!(t_lo > 0) || t_hi < t_lo) return -1;
  const auto start = std::chrono::steady_clock::now();
  restore(0.0);
  upper_clean_ = false;
  // 0.9: S_G's trace below t_lo leaves room for ||S_G||_F's rounding and F (both ~1e-13 t_lo
  // and smaller for log-output matrices, whose S_G is float32 noise ~1e-4 t_lo).
  const int64_t k = pivots_ = pivoted_cholesky(0.9 * t_lo, max_pivots);
  double r2 = 0, s2 = 0;  // ||R||_F^2 of the k rows; ||S_G||_F^2
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < std::min(k, j + 1); ++i) r2 += at(i, j) * at(i, j);
    for (int64_t i = k; i <= j; ++i) s2 += (i == j ? 1 : 2) * at(i, j) * at(i, j);
  }
  backward_error_ = gamma_float64(static_cast<double>(k) + 1) * (abs_norm() + r2);
  auto done = [&](int64_t result) {
    timing_.split += since(start);
    return result;
  };
  // lambda_max(S_G) <= ||S_G||_F (computed within a relative gamma_(n^2) of itself).
  const double s_norm = std::sqrt(s2) * (1 + gamma_float64(static_cast<double>(n * n)));
  if (!(s_norm < t_lo)) return done(-1);
  if (k == 0) return done(0);
  // lambda_k(R^T R) = lambda_min(C), C = R R^T (k x k) = R11 R11^T + R12 R12^T, above
  // t_hi + ||S_G||_F, from a Cholesky of C - s I. Weyl on G + F = R^T R + diag(0, S_G) then puts
  // k eigenvalues above t_hi and the rest below ||S_G||_F < t_lo. Forming C errs by at most
  // gamma_n ||R||_F^2, the Cholesky (Higham Thm 10.3) by gamma_(k+1) trace(C - s I) <= the same
  // with r2: both go into s. (A principal block G11 = R11^T R11 would do as well in exact
  // arithmetic when its lambda_min clears t_hi, but the pivots select columns, and the last
  // signal eigenvectors of a log-output Gram matrix are spread over all of them: lambda_min(G11)
  // falls ~M times below lambda_k, while lambda_min(R R^T) stays at lambda_k.)
  const auto uk = static_cast<size_t>(k);
  std::vector<double> c(uk * uk, 0.0), r11(uk * uk, 0.0);
  for (int64_t j = 0; j < k; ++j)
    for (int64_t i = 0; i <= j; ++i) r11[static_cast<size_t>(i + j * k)] = at(i, j);
  const int ik = static_cast<int>(k), ni = static_cast<int>(n);
  cblas_dsyrk(CblasColMajor, CblasUpper, CblasNoTrans, ik, ik, 1.0, r11.data(), ik, 0.0, c.data(),
              ik);
  if (k < n)
    cblas_dsyrk(CblasColMajor, CblasUpper, CblasNoTrans, ik, static_cast<int>(n - k), 1.0,
                &at(0, k), ni, 1.0, c.data(), ik);
  const double shift =
      (t_hi + s_norm) * (1 + gamma_float64(1)) +
      (gamma_float64(static_cast<double>(n)) + gamma_float64(static_cast<double>(k) + 1)) * r2;
  for (int64_t b = 0; b < k; ++b) c[static_cast<size_t>(b + b * k)] -= shift;
  const auto lk = static_cast<lapack_int>(k);
  const lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'U', lk, c.data(), lk);
  if (info < 0) throw InputError::described("", "", lapack_error("LAPACKE_dpotrf", k, info));
  return done(info == 0 ? k : -1);
}

int64_t InertiaCounter::count_above(double tau) {
  const int64_t n = n_;
  auto at = [&](int64_t i, int64_t j) -> double& { return a_[static_cast<size_t>(i + j * n)]; };
  restore(tau);
  upper_clean_ = false;
  method_ = "dsytrf_rook";
  pivots_ = 0;
  std::vector<lapack_int> ipiv(static_cast<size_t>(n));
  const auto ln = static_cast<lapack_int>(n);
  const auto start = std::chrono::steady_clock::now();
  const lapack_int info =
      LAPACKE_dsytrf_rook(LAPACK_COL_MAJOR, 'U', ln, a_.data(), ln, ipiv.data());
  timing_.ldlt += since(start);
  if (info < 0) throw InputError::described("", "", lapack_error("LAPACKE_dsytrf_rook", n, info));
  // info > 0: an exactly zero 1 x 1 block, a zero eigenvalue of G - tau I: not above tau.
  auto column_norm2 = [&](int64_t j, int64_t rows) {  // 1 + squares of the stored multipliers
    double s = 1;
    for (int64_t i = 0; i < rows; ++i) s += at(i, j) * at(i, j);
    return s;
  };
  int64_t above = 0;
  double growth = 0;  // trace of |U| |D| |U^T|, blockwise
  for (int64_t k = n - 1; k >= 0;) {
    if (ipiv[static_cast<size_t>(k)] > 0) {  // 1 x 1 block
      const double d = at(k, k);
      above += d > 0;
      growth += std::abs(d) * column_norm2(k, k);
      k -= 1;
    } else {  // 2 x 2 block D(k-1:k, k-1:k): eigenvalue signs from det and trace
      const double x = at(k - 1, k - 1), y = at(k - 1, k), z = at(k, k);
      const double det = x * z - y * y, mean = 0.5 * (x + z);
      above += det < 0 ? 1 : det > 0 ? (mean > 0 ? 2 : 0) : (mean > 0 ? 1 : 0);
      const double norm = std::abs(mean) + std::hypot(0.5 * (x - z), y);
      growth += norm * (column_norm2(k - 1, k - 1) + column_norm2(k, k - 1));
      k -= 2;
    }
  }
  backward_error_ =
      gamma_float64(static_cast<double>(n) + 1) * (abs_norm() + std::abs(tau) + growth);
  return above;
}

}  // namespace sb::analysis
