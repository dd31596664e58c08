#pragma once
// Certifying a numerical rank computed through the float64 Gram matrix Gh = fl(A^T A), and the
// rank-only path that computes it from inertia counts.
//
// The true rank is r = #{lambda_i(A^T A) > tau}, tau = tol^2 = c lambda_1(A^T A) with
// c = (0.5 sqrt(M + T + 1) eps)^2 (Numerical Recipes). Two errors separate it from what we count:
//   gram_error:   ||Gh - A^T A||_2 <= gamma_T || |A|^T |A| ||_2 (each entry a T-term dot product,
//                 any summation order; Higham 2002, section 3.1). With every entry of A of one sign
//                 |A|^T |A| = A^T A, so the bound is gamma_T lambda_1 (log-probabilities are <= 0);
//                 otherwise gamma_T ||A||_F^2 = gamma_T trace. Summed block by block with one
//                 rounding per entry and block (gram_block.h), every term passes through at most
//                 L = b + n_blocks - 1 roundings and T becomes L (GramFacts::chain): 20x smaller
//                 on PTB's test matrix.
//   solver_error: the backward error of the factorisation (or eigensolver) run on Gh: the count is
//                 exact for Gh + F. Inertia counts bound ||F|| from their factors (inertia.h); for
//                 dsyevd we take the same first-order form gamma_(n+1) (|| |Gh| || + trace), an
//                 estimate (LAPACK's bound has an unspecified modest p(n)).
// With delta = gram_error + solver_error, Weyl's inequality gives
//   rank_max = #{lambda(Gh + F) > t_lo},  t_lo = c (lambda1_lower - gram_error) - delta,
//   rank_min = #{lambda(Gh + F) > t_hi},  t_hi = c (lambda1_upper + gram_error) + delta,
// and rank_min <= r <= rank_max: certified when they agree, i.e. no eigenvalue can lie within the
// errors of tol^2. [lambda1_lower, lambda1_upper] brackets lambda_1(Gh): the power iteration's
// bounds (inertia.h) or the eigensolver's largest eigenvalue +- solver_error.
//
// The row Gram Gh = fl(A A^T) (T x T, row_gram.h, for T < M) is certified by the same derivation
// with T and M swapped: its entries are dot products of M terms, so gram_error <= gamma_M
// || |A| |A|^T ||_2 (= gamma_M lambda_1 for one-signed A, else gamma_M trace), and the solver runs
// on a matrix of order n = T. tau = c lambda_1 is unchanged (c is symmetric in M and T, and A A^T
// has the same nonzero eigenvalues as A^T A). GramFacts therefore take the inner dimension and
// the order rather than T and M: (rows, cols) = (T, M) for A^T A and (M, T) for A A^T.

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/inertia.h"
#include "analysis/numerical_rank.h"

namespace sb::analysis {

/// What the error model needs about A and Gh.
struct GramFacts {
  int64_t rows = 0, cols = 0;  ///< the dot products' length and the order n: T, M for A^T A;
                               ///< M, T for A A^T
  bool same_sign = true;       ///< A's entries all <= 0 or all >= 0
  int64_t chain = 0;           ///< the n of gamma_n in gram_error (gram_block.h); 0: rows
  double trace = 0;            ///< trace(Gh)
  double lambda1_lower = 0, lambda1_upper = 0;
  double solver_error = 0;
};

/// gamma_L || |A|^T |A| ||_2 with L = chain (else rows), from the facts (solving
/// gamma_L (lambda_1(Gh) + err) for err).
double gram_rounding_bound(const GramFacts& f);

/// The a priori solver_error: gamma_(n+1) (|| |Gh| || + trace + (2n + 1) tau_max), doubled. The
/// inertia counts' measured backward error is about gamma_(n+1) (|| |Gh| || + trace + n tau).
double solver_error_estimate(const GramFacts& f, double eps);

/// [t_lo, t_hi] on eigenvalues of Gh (see above).
struct RankWindow {
  double t_lo = 0, t_hi = 0;
};
RankWindow rank_window(const GramFacts& f, double eps);

/// The gram + eigensolver path: fills report's certificate from the descending singular values.
/// rows, cols: as GramFacts (the inner dimension, then the Gram's order).
/// chain: GramMatrix::chain (0: rows).
void certify_from_spectrum(RankReport& report, const std::vector<double>& sigma, int64_t rows,
                           int64_t cols, bool same_sign, int64_t chain = 0);

/// Two certificates of one count: the true rank at tol lies in each window, so in their
/// intersection. auto's hand-over (analyse.h, AnalysisPlan::sketch_fallback) narrows the sketch's
/// window by the Gram path's: the sketch's lower end (its Ritz values, sketch.h) often rises past
/// the Gram path's, while its upper end stays open where a flat tail just below tol (float32
/// noise) keeps the probes' residual bound above tol, and the Gram path's upper end is a count of
/// eigenvalues of Gh. Both windows bracket the same threshold tol (sigma_1's bracket differs by
/// the methods' errors, each window covering its own), so rank_min = max, rank_max = min;
/// certified when they meet; the nominal rank is kept within the window; the verdict follows the
/// window as apply_bound's (sketch.h). Disjoint windows (one certificate wrong: the sketch's
/// failure probability, or the eigensolver's estimated backward error) leave `report` as it
/// was and return false.
bool narrow_window(RankReport& report, const RankReport& other);

/// The verdict of a window [rank_min, rank_max] against report.bound: exceeds when rank_min is
/// above it, within when rank_max is not, otherwise the nominal rank decides.
void judge_window(RankReport& report);

/// The rank-only path on the accumulated Gh (rows: the inner dimension; the order is the
/// counter's): lambda_1 by power iteration, then the window count
/// InertiaCounter::split; where it cannot conclude, LDL^T counts at t_lo and t_hi and, only when
/// they differ, at the nominal tol^2. The window first assumes half of solver_error_estimate (the
/// counts measure their own backward error); a count whose measured error exceeds the assumption
/// widens it to 1.25x the measured error and counts again (three tries; a count still above it
/// leaves the report uncertified). rank_numpy = -1, spectral_gap NaN. solver: the routes taken,
/// e.g. "power_iteration+pivoted_cholesky". chain: as certify_from_spectrum's.
RankReport rank_by_inertia(InertiaCounter& counter, int64_t rows, double eps, bool same_sign,
                           int64_t bound, bool theorem2_bounded, std::string* solver = nullptr,
                           double* power_seconds = nullptr, int64_t chain = 0);

/// The spectrum's window (certify_from_spectrum) narrowed by inertia counts of the same Gh:
/// rank_by_inertia on `counter`, which kept Gh beside the eigensolver's work
/// (InertiaCounter::with_upper). The spectrum's window takes the eigensolver's backward error as
/// the a priori estimate, doubled (LAPACK's p(n) is unspecified); the counts measure theirs from
/// their factors, about half of it, so their window is narrower where the solver term dominates
/// (PTB's test matrices: solver_error ~10x gram_error). Both bracket the rank at tol, so the
/// report keeps their intersection (narrow_window). Returns the counts' routes (e.g.
/// "power_iteration+dsytrf_rook"), or "" when the report was already certified or the windows
/// did not meet (then it is unchanged). rows, chain: as certify_from_spectrum's.
std::string narrow_by_inertia(RankReport& report, InertiaCounter& counter, int64_t rows,
                              bool same_sign, int64_t chain = 0);

}  // namespace sb::analysis
