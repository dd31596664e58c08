#pragma once
// The sketch's count certified through a 2-norm bound: ||A (I - Q_c Q_c^T)||_2 for the c top Ritz
// vectors Q_c, bounded by power steps on Gaussian probes (Halko, Martinsson & Tropp, SIAM Review
// 53(2), 2011, lemma 4.1, applied to powers of the residual as in their section 4.5).
//
// Why. The sketch's own residual bound (sketch.h) applies lemma 4.1 to single probes: it sees about
// the residual's Frobenius norm, so a tail of L singular values just below tol inflates it by
// about sqrt(L). A trained non-softmax head has such a tail (thousands of values at a fraction of
// tol at WikiText-2's size), and no basis far smaller than M closed the window.
//
// The count. For any c orthonormal columns Q_c, A Q_c Q_c^T has rank <= c, so (Eckart-Young)
//   sigma_(c+1)(A) <= ||A - A Q_c Q_c^T||_2 = ||A P||_2 =: x,   P = I - Q_c Q_c^T.
// x < tol_lo gives rank <= c; the sketch's certified lower bounds give rank >= c when c Ritz values
// clear tol_hi: then the count is c, certified, and sigma_i <= x for every i > c. Tail values that
// the basis holds (Ritz values below tol) no longer count against the window: only x must fall
// below tol, and with Q_c the top Ritz vectors x is about sigma_(c+1).
//
// The bound on x (the block bound). Q_c is fixed before the probes Omega = [omega_1..omega_p]
// (standard Gaussian) are drawn, so B = A P and C_j = B (B^T B)^j = U S V^T are fixed matrices.
// With u_1, v_1 the top singular pair, ||C_j Omega||_2 >= ||u_1^T C_j Omega|| = x^(2j+1)
// ||v_1^T Omega||, and v_1^T Omega is a standard Gaussian p-vector: its squared norm is chi^2_p,
// whose lower tail is P(chi^2_p < c) = int_0^c t^(p/2-1) e^(-t/2) dt / (2^(p/2) Gamma(p/2)) <=
// (c/2)^(p/2) / Gamma(p/2 + 1). With c_p the c that makes this 1e-12,
//   x^(2j+1) <= ||C_j Omega||_2 / sqrt(c_p)      except with probability 1e-12
// (p = 40: sqrt(c_p) = 2.04; p = 20: 0.92). HMT's lemma 4.1 on single probes (x^(2j+1) <= alpha
// sqrt(2/pi) max_i ||C_j omega_i||, alpha = 10^(12/p), the sketch's own residual bound) sees a
// tail of L values at x as sqrt(L) x^(2j+1) in each probe; the block sees it as about (sqrt(L) +
// sqrt(p)) x^(2j+1) in all p together, and divides by 2.04 where the lemma multiplies by 1.59:
// L = 100, p = 40: 8.0 against 17.6 (a 0.9 tol tail of 2000 values crossed tol at j = 9 against
// j = 12, simulated). ||C_j Omega||_2 comes from the p x p Gram matrix of the computed z_j, summed
// with the products (p^2 n flops a block of n rows against 4 n M p); its largest eigenvalue
// (dsyev) is widened by the Gram's rounding gamma_T ||z_i|| ||z_j|| per entry, the probes'
// power-of-two scales (D, rounded up: ||Z D|| grows in each d_i) and dsyev's backward error,
// together (gamma_T + 4u + 2p gamma_p) sum_i d_i^2 ||z_i||^2. Every step's bound is a check (the
// union bound adds 1e-12 to the failure probability); the smallest is kept.
//
// The chain. w_0 = P omega, w_(j+1) = P A^T A w_j, so C_j omega = A w_j. One pass over A per step:
// per row block, z_b = A_b w_j and y += A_b^T z_b (4 T M p flops: p = 40 is a tenth of a sketch
// pass at k = 400). P is applied twice ("twice is enough": Giraud, Langou, Rozloznik & van den
// Eshof, Numer. Math. 101, 2005): after one projection of y = A^T A w, whose part in range(Q_c) is
// up to sigma_1 x ||w||, the rounding leaves a part of order gamma_M sigma_1 x ||w|| there, which
// the next product with A would multiply by sigma_1 instead of x; the second projection brings it
// down to the rounding of the (small) projected vector itself.
//
// Rounding (u = 2^-53, gamma_n = n u / (1 - n u); Higham 2002, sections 3.1 and 3.5). Exact
// quantities: Q^ = an orthonormal basis of range(Q_c), P_e = I - Q^ Q^^T (the P of the count),
// G = P_e A^T A P_e, x = ||A P_e||. eta >= ||Q_c^T Q_c - I||_2 (computed, certified as sketch.h),
// so P~ = I - Q_c Q_c^T = P_e - E with E = Q^ (Q_c^T Q_c - I) Q^^T, ||E|| <= eta, P~^2 = P_e + E^2.
// N >= || |A| ||_2: ||A||_F in general, sigma_1's upper bound when every entry has one sign. s1 >=
// sigma_1. f = 2 gamma_M sqrt(c) (1 + eta)^(3/2) + 3u: one computed projection
// fl(P~ v) = P~ v + d, ||d|| <= f ||v|| (sketch.h, the probes). In step l, from the computed w_l:
//   z_l = fl(A w_l) = A w_l + dz,          ||dz|| <= gamma_M N ||w_l||;
//   y_l = fl(A^T z_l) = A^T z_l + dy,      ||dy|| <= gamma_T N ||z_l||   (any summation order);
//   v_l = fl(P~ y_l), w_(l+1) = fl(P~ v_l) = P~^2 y_l + P~ d1 + d2.
// With P_e A^T A w_l = G w_l + P_e A^T A Q^ Q^^T w_l and ||P_e A^T|| = ||A P_e|| = x:
//   ||w_(l+1) - G w_l|| <= mu_l = x (s1 q_l + gamma_M N ||w_l||) + gamma_T N ||z_l||
//                                 + (eta^2 + (1 + eta) f) ||y_l|| + f ||v_l||,
// q_l >= ||Q^^T w_l|| = ||(Q_c^T Q_c)^(-1/2) Q_c^T w_l||, from the computed Q_c^T w_l widened by
// its rounding gamma_M sqrt(c (1 + eta)) ||w_l||, over sqrt(1 - eta). The start: w_0 = fl(P~ fl(P~
// omega)), ||w_0 - P_e omega|| <= mu_-1 = (eta^2 + (1 + eta) f) ||omega|| + f ||v_-1||. With
// r_j = w_j - G^j P_e omega, r_(l+1) = (w_(l+1) - G w_l) + G r_l and ||G|| = x^2, so
//   ||r_j|| <= x^(2j) mu_-1 + sum_(l<j) x^(2(j-1-l)) mu_l,
//   ||C_j omega|| = ||A P_e G^j P_e omega|| <= ||z_j|| + gamma_M N ||w_j|| + s1 q_j + x ||r_j||.
// As vectors, C_j omega_i = z_j + e_i with ||e_i|| <= gamma_M N ||w_j|| + s1 q_j + x ||r_j|| (the
// terms above but ||z_j||), so ||C_j Omega||_2 <= ||Z D||_2 + sqrt(sum_i d_i^2 ||e_i||^2), and the
// true x satisfies sqrt(c_p) x^(2j+1) <= that right side: divided by x^(2j+1) every term decreases
// in x, so the largest x that satisfies it, found by bisection on log x, is the bound. Norms are
// evaluated in float64 and widened by their own rounding (1 + n u), the observed ||z_l|| by
// gamma_T. Vectors are rescaled by powers of two between steps (exact), and the terms are evaluated
// in logarithms (x^(2j+1) underflows for j of a few tens). Size of the terms at WikiText-2's shape
// (float32 data, s1 = sigma_1, N = 2 sigma_1, x ~ tol = 3e-5 sigma_1): gamma_M N / x = 2.5e-7,
// gamma_T N ||z|| / (x^2 ||w||) = 2e-6, s1 q / x with q ~ gamma_M sqrt(c) ~ 1e-10 (after the second
// projection) = 4e-6: all far below the slack the probes' factor leaves. At the float64 eps (tol ~
// 1e-14 sigma_1) gamma_M N / x exceeds 1, and no bound below tol results (as for the sketch's own
// residual).
//
// Stopping. After each step: the bound below tol_lo -> certified. The probes' Rayleigh quotients
// max_i ||z_j|| / ||w_j|| (a lower estimate of x) at or above tol_lo -> no bound can certify c (a
// singular value at or above tol lies outside Q_c, or x is not far below tol): stop. The bound's
// ratio to that estimate, raised to 2j+1, predicts the steps still needed
// (ratio^((2j+1)/(2q+1)) for q steps); more than max_steps -> stop.

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "analysis/spectrum.h"

namespace sb::analysis {

struct Collective;

/// Lanes. A power step multiplies each row block by p = 40 probes twice: 10 flops per float64
/// byte of the block, so a multi-threaded GEMM spends its time streaming the block, and the
/// thread that reads and widens the next block (the overlap of block_stream.h) takes a core from
/// it. At WikiText-2's full shape (245570 x 33278 float32, 2 cores) a step took 88 s against 17 s
/// of GEMM FLOPs at the wide dgemm rate; at its width (30000 rows, bench/bench_power_lanes.py)
/// one stream took 7-8 s a step, two lanes 4 s. Instead L lanes each take every L-th block: read it
/// (one lane at a time: the reader need not be thread-safe), widen it and multiply it with one
/// BLAS thread, while the other lanes multiply theirs; each lane sums its own y = A^T z and the
/// lanes' sums are added in lane order (the same rows and lanes give the same bits). The lanes
/// share the two blocks' memory of the overlapped stream (2 block_rows / L rows each). The
/// rounding bound is the same: gamma_T covers any order of the sum over rows.
inline constexpr int kMaxPowerLanes = 4;

/// Order. A step needs every row once, in any order (gamma_T covers any order of the sums), so
/// the steps alternate: the first streams the rows last to first, the next first to last, and so
/// on. A file larger than the page cache is evicted in the order it was read: a pass in the same
/// order as the last meets none of it cached, a pass in the opposite order starts with what the
/// last one read. At WikiText-2's size (32.7 GB of float32 against 21 GB of page cache, 2 cores)
/// forward steps read 300-500 MB/s from disk with the cores a third idle, 71-94 s a step
/// (results/bench/rank_wt2_count.md). The same rows, lanes and step give the same bits.

struct ResidualPowerOptions {
  int probes = 40;     ///< p: the bound's factor 10^(12/p) sqrt(2/pi)
  int max_steps = 24;  ///< power steps (passes over A) at most
  double target = 0;   ///< stop once the bound is below this (the sketch's tol_lo); 0: every step
  double sigma1_upper = 0;  ///< s1 >= sigma_1(A)
  double abs_norm = 0;      ///< N >= || |A| ||_2
  int64_t total_rows = 0;   ///< T of the whole matrix (several processes: more than streamed)
  int64_t block_rows = 0;   ///< rows per block (> 0)
  bool overlap = true;      ///< one lane: read block b + 1 while block b is multiplied
  /// Row streams run side by side, each multiplying its blocks with one BLAS thread (Lanes,
  /// below); 0: as many as the BLAS has threads, at most kMaxPowerLanes.
  int lanes = 0;
  const Collective* collective = nullptr;
};

struct ResidualPowerResult {
  double bound = 0;     ///< x <= bound except with probability checks * 1e-12
  double estimate = 0;  ///< the probes' largest Rayleigh quotient after the last step
  int steps = 0;        ///< passes over A
  int checks = 0;       ///< bounds evaluated
};

/// One step's outcome, for progress lines.
struct ResidualPowerStep {
  int step = 0;  ///< 1-based
  double bound = 0, estimate = 0, seconds = 0;
};

/// The bound on ||A (I - Q_c Q_c^T)||_2 by power steps, Q_c (M x c, column-major, orthonormal up
/// to eta) fixed by the caller; the probes come from rng. rows_done: progress within a step.
template <class In>
ResidualPowerResult residual_power_bound(
    const std::function<void(int64_t, int64_t, In*)>& read, int64_t local_rows, int64_t cols,
    const std::vector<double>& q_c, int64_t c, double eta, const ResidualPowerOptions& options,
    std::mt19937_64& rng, SpectrumTiming* timing,
    const std::function<void(const ResidualPowerStep&)>& step_done = {},
    const std::function<void(int64_t rows_done)>& rows_done = {});

/// A term of the bound's inequality divided by x^(2j+1): log(coef) over x^power.
struct PowerTerm {
  double log_coef;
  int power;
};

/// The largest x in (0, hi] with e^log_factor sum_terms coef / x^power >= 1 for some probe (each
/// probe's sum decreases in x), by bisection on log x; hi when even hi satisfies it (lemma 4.1 on
/// single probes: the float64 finish's power steps, compensated_finish.h).
double power_bound_root(const std::vector<std::vector<PowerTerm>>& probes, double log_factor,
                        double hi);

/// log sqrt(c_p): P(chi^2_p < c_p) <= (c_p / 2)^(p/2) / Gamma(p/2 + 1) = 1e-12 (the block bound).
double block_chi_log(int probes);

/// The block bound's root: the largest x in (0, hi] with
///   e^log_gram / x^power + sqrt(sum_i (sum_terms coef / x^t.power)^2) >= e^log_chi,
/// log_gram an upper bound on log ||Z D||_2, errors each probe's error terms; by bisection on log
/// x, hi when even hi satisfies it.
double block_bound_root(double log_gram, int power,
                        const std::vector<std::vector<PowerTerm>>& errors, double log_chi,
                        double hi);

/// Whether to stop after power step `step` (0-based): the bound below the target, or the probes'
/// estimate at it (a value above the target lies outside Q_c), or more steps predicted than are
/// left. The steps a bound below the target still needs, from the bound's ratio to the estimate:
/// ratio^(2j+1) = K, and K^(1/(2q+1)) estimate < target for 2q + 1 > ln K / ln(target / est).
/// target <= 0: never (every step runs).
bool power_steps_done(double bound, double estimate, double target, int step, int max_steps);

/// HMT lemma 4.1's factor with alpha = 10^(12 / p): ||B|| <= alpha sqrt(2 / pi) max_i
/// ||B omega_i|| except with probability alpha^-p = 1e-12, whatever p (p = 12: 8.0, p = 40: 1.6,
/// p = 64: 1.24). The sketch's single-probe bound and the power steps' both use it.
double probe_factor(int probes);

/// Upper bounds on the 2-norms of the p columns of the column-major M x p matrix v (dnrm2 widened
/// by its rounding, (1 + 2 M u)).
std::vector<double> column_norms(const double* v, int64_t m, int64_t p);

/// ||fl(P v) - P v|| / ||v|| for P = I - Q Q^T with k columns of orthonormality defect eta on M
/// rows: f = 2 gamma_M sqrt(k) (1 + eta)^(3/2) + 3u (Q^T v, then Q (Q^T v), then the difference).
double projection_error(int64_t m, int64_t k, double eta);

}  // namespace sb::analysis
