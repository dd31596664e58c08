#pragma once
// The sketch's count at the float64 eps: a finish whose products with A are formed in twice the
// working precision (compensated_dot.h), so that it resolves singular values down to a few
// u sigma_1 where the NR tolerance sits (tol = 0.5 sqrt(M + T + 1) eps sigma_1: 27 u sigma_1 at
// M + T = 3000).
//
// Why the sketch alone cannot. Its bounds carry the rounding of float64 products with A,
// gamma_M ||A||_F (M u ||A||_F a priori; about u ||A||_F in fact), at or above tol (sketch.h,
// "Rounding"); and its basis comes from A^T A Q, in which a direction with sigma_i below
// sqrt(u) sigma_1 drowns in the rounding u sigma_1^2, so values near tol have no Ritz vectors.
//
// The basis (not certified: the bounds below hold for any basis). From the sketch's Q (M x k),
// `iterations` rounds of one-sided subspace iteration (Halko, Martinsson & Tropp 2011, algorithm
// 4.4): Z = A Q, U = orth(Z) rotated by the SVD of Z's R (its columns in the order of the Ritz
// values), Y = A^T U, Q = orth(Y) by Householder QR in that order (the larger directions first, so
// each column loses its part along the larger ones: the contamination the rounding leaves). Every
// product is compensated (error about u |result|), so a direction with sigma_i a few u sigma_1
// keeps its signal. The count c = #{|r_jj| > tol} of Y's R (graded columns: |r_jj| ~ sigma_j),
// V_c = the first c columns of Q, eta >= ||V_c^T V_c - I||_F (certified, sketch.h).
//
// Lower bound, rank >= c. For any M x c matrix V_c and Z_c = A V_c, Courant-Fischer gives
// sigma_j(A) >= sigma_j(Z_c) / ||V_c||_2 >= sigma_j(Z_c) / sqrt(1 + eta). For any positive
// diagonal D, sigma_j(Z_c) = sigma_j(X D) >= sigma_min(X) sigma_j(D) with X = Z_c D^-1
// (||X D y|| >= sigma_min(X) ||D y||, then Courant-Fischer). Take D = diag(n_j), n_j the computed
// norms of Z_c's columns: sigma_j(D) is the j-th largest n_j, and X has nearly orthogonal columns
// of about unit norm when V_c holds A's right singular directions, so sigma_min(X) is near 1 while
// Z_c's own condition number is sigma_1 / (3 tol) ~ 1e13: the bound is relative, column by column,
// where a normwise one (Weyl) would lose u sigma_1 per value.
//   Z_c is formed by Dot2: zh + zl with |zh + zl - (A V_c)_tj| <= gamma_2M^2 sum_m |a_tm v_mj| per
//   entry (Dot2 is Sum2 on the 2M parts of the products: their proposition 4.5 before the final
//   rounding; gamma_2M^2 rather than their gamma_M^2, for margin), so ||(zh + zl) - Z_c||_F <=
//   eps_Z := gamma_2M^2 F sqrt(c (1 + eta)) (Cauchy-Schwarz per row, F >= ||A||_F, ||V_c||_F^2
//   <= c (1 + eta)). Then sigma_min(X) >= sigma_min(zh D^-1) - delta with
//   delta = sqrt(sum_j ((||zl_j|| + eps_Z) / n_j)^2) (an upper bound on ||(Z_c - zh) D^-1||_F).
//   sigma_min(zh D^-1)^2 = lambda_min(H), H = D^-1 zh^T zh D^-1, computed as fl(H) within
//   gamma_(T+2) per entry of the unit-diagonal scale (each entry a T-term dot product, then two
//   divisions): ||fl(H) - H||_2 <= c gamma_(T+2) (1 + ...). lambda_min(fl(H)) >= s is verified by
//   a Cholesky factorisation of fl(H) - s I that runs to the end: it is then the exact Cholesky
//   factorisation of fl(H) - s I + dH with |dH| <= gamma_(c+1) |R^T| |R| (Higham 2002, theorem
//   10.3), and || |R^T| |R| ||_2 <= c max_i (fl(H) - s I)_ii (1 + gamma_(c+1)), so
//   lambda_min(fl(H)) >= s - gamma_(c+1) c (1 + gamma_(c+1)) max_i H_ii. s = 0.9 times LAPACK's
//   estimate of lambda_min(fl(H)), halved until the factorisation runs through.
//   So lower_j = n_(j) (sqrt(lambda_lo) - delta) / sqrt(1 + eta), n_(j) the j-th largest norm
//   taken down by dnrm2's rounding, and rank_min = #{j : lower_j > tol_hi}.
//
// Upper bound, rank <= c. V_c V_c^T has rank <= c, so (Eckart-Young) sigma_(c+1)(A) <=
// ||B||_2 =: x with B = A (I - V_c V_c^T), whatever V_c's orthogonality. Power steps on B bound x
// as residual_power.h did before its block bound (HMT lemma 4.1 on C_j = B (B^T B)^j, single
// probes drawn after V_c is fixed: failure probability 1e-12 per step's bound), but each product is
// compensated and B is applied as
//   B w = A w - Z_c (V_c^T w),   B^T z = A^T z - V_c (Z_c^T z),
// every sum a Dot2 and the difference rounded once. Then fl(B w) = B w + d, fl(B^T z) = B^T z + e
// with
//   ||d|| <= 2u ||fl(B w)|| + a ||w||,   ||e|| <= 2u ||fl(B^T z)|| + a ||z||,
//   a = 8 (gamma_n^2 + u^2) (F + ||Z_c||_F sqrt(c (1 + eta))) sqrt(1 + eta) + eps_Z sqrt(1 + eta)
//       (+ the underflow terms), n = max(T, M) + 3c,
// each output a single Dot2 chain of at most 2n parts (A w's M products, then Z_c g's 3c with g =
// V_c^T w as hi + lo; A^T z's T, then V_c h's 2c with h = Z_c^T z, itself 2T products): 8 gamma_n^2
// covers gamma_2n^2 on the sums of |terms|, which Cauchy-Schwarz bounds by the norms in a; eps_Z
// is Z_c's own error times ||g||, ||V_c|| <= sqrt(1 + eta); the 2u is the final rounding of each
// entry (u) and of the norms taken.
// With the chain w_0 = omega, z_l = fl(B w_l), w_(l+1) = 2^-s_l fl(B^T z_l) (exact rescaling,
// carried in logarithms), R_l = W_l - (B^T B)^l omega for the unscaled W_l obeys R_(l+1) =
// B^T B R_l + B^T D_l + E_l, so, with x = ||B||,
//   ||C_j omega|| <= e^L_j ((1 + 2u) ||z_j|| + a ||w_j||) + sum_(l<j) (x^(2(j-l)-1) ||D_l||
//                    + x^(2(j-l)-2) ||E_l||),
// and x^(2j+1) <= factor max_i (that) is solved for the largest x by residual_power.h's bisection
// (power_bound_root). The rounding now scales with the quantities themselves, not with ||A||_F:
// at M + T = 3000 the terms are about 1e-30 sigma_1 against x ~ 1e-15 sigma_1.
//
// Cost. 2 iterations x 2 passes, one pass for Z_c and one per power step, each product a Dot2
// (about 25 flops per multiply-add against 2 for dgemm: 2 T M k multiply-adds per round of
// iteration, T M c for Z_c, 2 T M p per power step). Memory: T x k four times (Z's two parts, U,
// its rotation) and M x k four times (Y's accumulators, Q) in float64, T x c twice (zh, zl):
// compensated_finish_bytes. The sketch calls it for float64 rows at the float64 eps when its own
// window stays open (sketch.h, "Float64 finish") and that fits 8 GiB. Measured: a 1000 x 800
// float64 matrix whose count sits between 1.1 tol and 0.5 tol is certified in about a second;
// 900 x 700 with 500 equal values in about 9 s (k = 700).

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "analysis/spectrum.h"

namespace sb::analysis {

struct CompensatedFinishOptions {
  double tol = 0;                 ///< the NR tolerance's estimate: the count c counts above it
  double tol_lo = 0, tol_hi = 0;  ///< its certified bracket
  double frobenius = 0;           ///< F >= ||A||_F
  int iterations = 2;             ///< rounds of one-sided subspace iteration before the count
  int probes = 40;                ///< the power steps' p
  int max_steps = 24;             ///< power steps at most
  int64_t block_rows = 256;       ///< rows per block read
  /// threads for the compensated products (each output summed in the same order whatever the
  /// number: the result is the same to the bit)
  int threads = 1;
};

struct CompensatedFinishResult {
  int64_t count = 0;             ///< c, the nominal count of the refined basis
  int64_t rank_min = 0;          ///< certified: rank >= rank_min
  bool upper_certified = false;  ///< the power steps' bound fell below tol_lo: rank <= count
  double residual_bound = 0;     ///< x <= this (the last power step's), sigma_(c+1) <= x
  double sigma_min_scale = 0;    ///< sigma_min(Z_c D^-1)'s certified lower bound
  std::vector<double> lower;     ///< certified lower bounds on sigma_1 .. sigma_c
  std::vector<double> sigma;     ///< the norms n_(j), descending: the finish's Ritz estimates
  int passes = 0, checks = 0, power_steps = 0;
};

/// Peak bytes of the finish on a rows x cols matrix with k basis columns and p probes.
double compensated_finish_bytes(int64_t rows, int64_t cols, int64_t k, int probes);

/// The finish from basis (M x k, column-major, orthonormal up to rounding) over the float64 rows
/// of read (rows x cols). step_done: after each pass or pair of passes, its kind ("iterate",
/// "count", "power") and the result so far.
CompensatedFinishResult compensated_finish(
    const std::function<void(int64_t, int64_t, double*)>& read, int64_t rows, int64_t cols,
    std::vector<double> basis, int64_t k, const CompensatedFinishOptions& options,
    std::mt19937_64& rng, SpectrumTiming* timing = nullptr,
    const std::function<void(const char* kind, const CompensatedFinishResult& so_far)>& step_done =
        {});

}  // namespace sb::analysis
