#pragma once
// The sketch's first test matrix (sketch.h, "Start"): a sparse sign embedding Omega (M x k) with
// zeta nonzeros in every row, each +-1 / sqrt(zeta), at zeta distinct columns drawn uniformly
// (Martinsson & Tropp, "Randomized numerical linear algebra: foundations and algorithms", Acta
// Numerica 29, 2020, section 9.2; Meng & Mahoney 2013; Nelson & Nguyen's OSNAP, 2013).
//
// Why it serves as well as a Gaussian there. The first pass only builds the next basis
// Y = A^T (A Omega); no bound is read from it (sketch.h). What Y needs from Omega is that the
// k x r matrix Omega^T V_r (V_r: A's top r right singular vectors) have full rank r <= k with
// its smallest singular value not tiny, so that A^T A Omega weights V_r by sigma_i^2 as a
// Gaussian Omega would. E[Omega Omega^T] = I_M (each row has zeta entries of square 1 / zeta, and
// distinct rows' supports are independent), and with zeta >= 4 and k >= r + 10 the embedding's
// distortion is within a small factor of a Gaussian's (Martinsson & Tropp, section 9.2: zeta = 8
// is their recommendation for robustness). A worse Omega costs iterations, never a wrong
// certificate: every bound comes from later passes with orthonormal Gaussian-started probes.
//
// Cost: X Omega for n rows of M columns is n M zeta multiply-adds (the dense A_b Q is 2 n M k
// flops: at k = 412, zeta = 8, 103x fewer), read from X once; the sums of each row go to a
// k-vector that stays in the L1 cache. Each row's products are summed in column order, one
// thread per share of rows, so the result is the same at any thread count.

#include <cstdint>
#include <random>
#include <vector>

namespace sb::analysis {

class SparseSign {
 public:
  /// Omega (m x k) with zeta = min(nonzeros, k) nonzeros per row, drawn from rng.
  SparseSign(int64_t m, int64_t k, int nonzeros, std::mt19937_64& rng);

  int64_t rows() const { return m_; }
  int64_t cols() const { return k_; }
  int nonzeros() const { return zeta_; }
  /// Row j's nonzeros: column columns()[j zeta + l] with sign signs()[j zeta + l] (+-1), each of
  /// size scale() = 1 / sqrt(zeta), for l < zeta (range_products.h reads them directly).
  const int32_t* columns() const { return column_.data(); }
  const int8_t* signs() const { return sign_.data(); }
  double scale() const { return scale_; }

  /// Z = X Omega: x row-major n x m, z column-major n x k with leading dimension ldz >= n.
  /// Splits the rows over `threads` threads (>= 1).
  void apply(const double* x, int64_t n, double* z, int64_t ldz, int threads) const;

  /// Omega x for a k-vector x: the m-vector whose entry j is row j's zeta terms, summed in order
  /// (each within gamma_zeta (|Omega| |x|)_j of the exact one).
  std::vector<double> times(const double* x) const;

  /// Omega as a dense column-major m x k matrix (tests).
  std::vector<double> dense() const;

 private:
  void apply_rows(const double* x, int64_t from, int64_t to, double* z, int64_t ldz) const;

  int64_t m_ = 0, k_ = 0;
  int zeta_ = 0;
  double scale_ = 1;
  std::vector<int32_t> column_;  // m x zeta: the columns of row j's nonzeros
  std::vector<int8_t> sign_;     // m x zeta: their signs, +-1
};

}  // namespace sb::analysis
