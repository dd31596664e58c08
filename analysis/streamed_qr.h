#pragma once
// The R factor of a tall matrix Z (n x k, n >> k) that arrives in row blocks and is never held:
// a streamed Householder QR (the flat tree of TSQR; Demmel, Grigori, Hoemmen & Langou,
// "Communication-optimal parallel and sequential QR and LU factorizations", SIAM J. Sci. Comput.
// 34(1), 2012). The sketch (sketch.h) takes its Ritz values as the singular values of R, the
// one-sided finish: sigma_i(R) = sigma_i(Z) with an error of order u ||Z||, where the
// eigenvalues of Z^T Z carry u ||Z||^2 and so resolve singular values only down to sqrt(u) ||Z||.
//
// The stream. Rows are copied under the current R into a buffer of k + c rows (c = chunk rows);
// a full buffer (and finish()) is factored in place by dgeqrf, whose R replaces the top k rows:
//   S_0 = Z_1,  R_1 = qr(S_0);  S_j = [R_j; Z_(j+1)],  R_(j+1) = qr(S_j).
// Each step only rotates rows, so R_final^T R_final = Z^T Z in exact arithmetic.
//
// Rounding (Higham 2002, lemma 19.3 and theorem 19.4). Householder QR of an m x k matrix S in
// floating point is the exact QR of S + dS with ||ds_j||_2 <= k gamma~_m ||s_j||_2 for each
// column j, gamma~_m = c m u / (1 - c m u), a small constant c: we take c = 2 (as the Gram
// path's eigensolver estimate is doubled, rank_certificate.h), so ||dS||_F <= k gamma_(2m)
// ||S||_F. Step j's S_j holds, up to the earlier steps' errors, the rows of Z streamed so far,
// ||S_j||_F <= ||Z||_F (1 + the factor below), so by induction there is a dZ with
//   R_final^T R_final = (Z + dZ)^T (Z + dZ),  ||dZ||_F <= f ||Z||_F (1 + f),
//   f = sum over steps of k gamma_(2 m_j)   (m_j = the rows factored at step j: k + their rows)
// = backward_error(): about 2 n k u for c >> k (one step per c rows; n = 245570, k = 412:
// 2.2e-8, against sqrt(gamma_n) = 5.2e-6 for the eigenvalues of Z^T Z). Then by Weyl
// |sigma_i(R) - sigma_i(Z)| <= ||dZ||_2 <= f (1 + f) ||Z||_F.
// Several processes (collective.h) each stream their rows and stack their R's: one more step of
// k P rows, combine().

#include <cstdint>
#include <vector>

namespace sb::analysis {

class StreamedQr {
 public:
  /// k columns; c rows are gathered before each factorisation (at least 1). Memory:
  /// 8 (k + c) k bytes.
  StreamedQr(int64_t k, int64_t chunk_rows);

  /// Appends n rows of the column-major matrix z (leading dimension ld >= n): its first k
  /// columns.
  void add(const double* z, int64_t n, int64_t ld);

  /// Factors what is pending; R (k x k, column-major, zeros below the diagonal) from then on.
  const std::vector<double>& finish();

  /// Replaces R by the R of [R_0; ...; R_(P-1)], one per process: stacked is (P k) x k,
  /// column-major, process p's finished R in rows p k..p k + k - 1. The backward error of that
  /// step is added. Returns the new R.
  const std::vector<double>& combine(std::vector<double> stacked, int64_t processes);

  /// f of the header: ||dZ||_F <= f (1 + f) ||Z||_F.
  double backward_error() const { return factor_; }

  /// The largest factor of several processes' streams (the combine step's is then added on top).
  void set_backward_error(double f) { factor_ = f; }

  /// sum of the squares of every entry added (||Z||_F^2, accumulated in float64).
  double frobenius_sq() const { return frobenius_sq_; }

  int64_t cols() const { return k_; }

 private:
  void factor();  // QR of the top k + pending_ rows of buf_, R into the top k rows

  int64_t k_, chunk_;
  int64_t pending_ = 0;  // rows below R waiting for a factorisation
  bool have_r_ = false;  // false before the first factorisation (the top k rows are zero)
  std::vector<double> buf_, r_;
  double factor_ = 0, frobenius_sq_ = 0;
};

/// A LAPACK failure on the sketch's matrices (what the data put there: an overflow to inf, a NaN
/// LAPACKE's check finds, no convergence; or LAPACKE's workspace not allocated, -1010) as
/// sb::InputError naming the routine; info 0 passes.
void check_sketch_lapack(int64_t info, const char* routine, int64_t n);

/// Descending singular values of the k x k matrix r (column-major), by LAPACK's dgesvd (no
/// vectors). Throws sb::InputError when LAPACK fails on it (a non-finite entry).
std::vector<double> singular_values_descending(std::vector<double> r, int64_t k);

/// Householder QR of the column-major m x k matrix y (k <= m) in place: the first k columns of Q
/// in y (dgeqrf, then dorgqr; 4 m k^2 flops), and R (k x k column-major, upper triangular) into
/// *r when asked. Throws as singular_values_descending.
void householder_qr(double* y, int64_t m, int64_t k, std::vector<double>* r = nullptr);

/// U of the SVD of the k x k matrix r (column-major), k x k column-major, by LAPACK's dgesvd: its
/// columns are R's left singular vectors in descending order of their values. Throws as
/// singular_values_descending.
std::vector<double> left_singular_vectors(std::vector<double> r, int64_t k);

/// V^T of the SVD of the k x k matrix r (column-major), k x k column-major, by LAPACK's dgesvd:
/// its rows are R's right singular vectors in descending order of their values. Throws as
/// singular_values_descending.
std::vector<double> right_singular_vectors_t(std::vector<double> r, int64_t k);

/// The absolute error estimate of singular_values_descending on a k x k matrix of Frobenius norm
/// f: bidiagonalisation by 2k Householder reflections (backward error 2k gamma_(2k) ||R||_F, with
/// the constant doubled as above), then the bidiagonal's values to high relative accuracy
/// (Demmel & Kahan 1990).
double svd_error_estimate(int64_t k, double frobenius);

}  // namespace sb::analysis
