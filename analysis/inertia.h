#pragma once
// Counting the eigenvalues of a symmetric float64 matrix G above a threshold without computing
// them. Sylvester's law of inertia: for any factorisation P^T (G - t I) P = X^T D X with X
// nonsingular, #{lambda_i(G) > t} is the number of positive eigenvalues of D.
//
// split(t_lo, t_hi): one count valid for a whole window of thresholds, for the Gram matrices of
// log-outputs (a few hundred eigenvalues far above tol^2, the rest orders of magnitude below).
// Cholesky with diagonal pivoting of G itself (LAPACK dpstrf's algorithm, n^2 k flops in BLAS-3
// panels) stops after k pivots once the trace of the Schur complement S_G = G22 - G21 G11^-1 G12
// falls below t_lo. Then P^T (G + F) P = R^T R + diag(0, S_G) with R the k x n factor, and by
// Weyl's inequality k eigenvalues of G + F lie above lambda_min(R R^T) - ||S_G|| and the other
// n - k below ||S_G||. Both are checked: ||S_G||_F < t_lo, and a k x k Cholesky of
// R R^T - (t_hi + ||S_G||_F) I (with rounding margins, k^2 n flops to form). Then
// In(G + F - t I) = (k, n - k, 0) for every t in [t_lo, t_hi]: no n x n factorisation at all.
// (R R^T, not the pivoted principal block G11 = R11^T R11: lambda_min(G11) <= lambda_min(R R^T),
// and for delocalised eigenvectors it is far smaller, ~lambda_k / n.)
//
// count_above(t): the general count, an LDL^T with rook pivoting of G - t I (dsytrf_rook,
// n^3 / 3 flops), for spectra where split() cannot conclude.
//
// Both are backward stable: the count is exact for G + F with |F| <= gamma_(k+1) (|G| + |R^T| |R|)
// entrywise (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., Thm 10.3, applied to
// the partial factorisation), resp. <= p(n) u (|G - t I| + |L| |D| |L^T|) (ibid. Thm 11.3, p(n)
// taken as n + 1); backward_error() is the 2-norm bound gamma (|| |G| || + t + trace of the factor
// term), computed from the factors.
//
// Storage: the n x n column-major array holds G in its upper triangle (as dsyrk leaves it). The
// constructor copies the strict upper triangle into the strict lower one and keeps the diagonal
// aside: the pristine G lives there while each count factorises the upper triangle in place, so
// any number of thresholds costs no second n x n matrix.

#include <cstdint>
#include <string>
#include <vector>

namespace sb::analysis {

/// lambda_1(G) by power iteration, with a bracket [lower, upper].
struct PowerIteration {
  double rho = 0;    ///< the Rayleigh quotient x^T G x (unit x)
  double lower = 0;  ///< rho less its rounding: a lower bound on lambda_1
  double upper = 0;  ///< an upper bound on lambda_1, see rigorous
  /// true: Collatz-Wielandt, max_i (G x)_i / x_i for x > 0 when G >= 0 entrywise (a bound for every
  /// nonnegative matrix); false: rho + ||G x - rho x|| (Bauer-Fike: some eigenvalue lies within
  /// the residual of rho; a bound on lambda_1 when the iteration has found its eigenvector).
  bool rigorous = false;
  int iterations = 0;
  double relative_width() const { return (upper - lower) / lower; }
};

class InertiaCounter {
 public:
  /// g: n x n column-major, G in the upper triangle; the strict lower triangle is overwritten.
  InertiaCounter(std::vector<double> g, int64_t n);

  int64_t size() const { return n_; }
  double trace() const;
  /// G >= 0 entrywise (true for A^T A when all entries of A share a sign).
  bool nonnegative() const { return nonnegative_; }

  /// Hands G's upper triangle (column-major, leading dimension n, G - 0 I restored) to `solve`,
  /// which may overwrite that triangle and the diagonal but nothing else: an eigensolver called
  /// with uplo 'U' and jobz 'N', such as dsyevd (LAPACK overwrites only the triangle it is
  /// given). The pristine copy in the strict lower triangle stays, so counts may follow: G's
  /// spectrum and its inertia counts from one n x n array. Returns what `solve` returns.
  template <class Solve>
  auto with_upper(Solve&& solve) {
    restore(0.0);
    upper_clean_ = false;
    return solve(a_.data(), n_);
  }

  /// Power iteration from the all-ones vector (the Perron vector's direction for G >= 0) until
  /// (upper - lower) <= rel_tol lower or max_iterations.
  PowerIteration largest_eigenvalue(double rel_tol = 1e-12, int max_iterations = 100);

  /// The window count: k = #{lambda_i(G + F) > t} for every t in [t_lo, t_hi] (see above), or
  /// -1 when the pivoted Cholesky cannot show it within max_pivots pivots.
  int64_t split(double t_lo, double t_hi, int64_t max_pivots);
  /// #{lambda_i(G + F) > tau} by dsytrf_rook.
  int64_t count_above(double tau);
  /// Of the last split / count_above: the 2-norm bound on its backward error F, the pivots of
  /// split, and which route ran ("pivoted_cholesky" or "dsytrf_rook").
  double backward_error() const { return backward_error_; }
  int64_t pivots() const { return pivots_; }
  const std::string& method() const { return method_; }
  /// Seconds spent so far: restoring the upper triangle, split, LDL^T.
  struct Timing {
    double restore = 0, split = 0, ldlt = 0;
  };
  const Timing& timing() const { return timing_; }

  /// Bound on || |G| ||_2: lambda_1's upper bound when G >= 0 entrywise and largest_eigenvalue
  /// has run, else ||G||_F (= || |G| ||_F).
  double abs_norm() const;

 private:
  void restore(double tau);  // upper triangle := G - tau I from the pristine copy
  int64_t pivoted_cholesky(double trace_stop, int64_t max_pivots);

  int64_t n_;
  std::vector<double> a_;     // n x n: upper = work, strict lower = G
  std::vector<double> diag_;  // G's diagonal
  bool upper_clean_ = true;   // the upper triangle holds G (up to its diagonal shift)
  bool nonnegative_ = true;
  double frobenius_ = 0;
  double lambda1_upper_ = 0;  // from largest_eigenvalue, for abs_norm in the error bounds
  double backward_error_ = 0;
  int64_t pivots_ = 0;
  std::string method_;
  Timing timing_;
};

/// gamma_k = k u / (1 - k u), u = 2^-53: the rounding bound of a k-term sum of products.
double gamma_float64(double k);

}  // namespace sb::analysis
