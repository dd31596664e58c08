#pragma once
// Numerical rank of a spectrum under the Numerical Recipes threshold (Press et al.; the paper's
// section 4.3), numpy.linalg.matrix_rank's default, and the verdict against Theorem 2's bound.

#include <cstdint>
#include <string>
#include <vector>

#include "contract/rank_report.h"

namespace sb::analysis {

inline constexpr double kFloat32Eps = 1.1920928955078125e-07;  // 2^-23
inline constexpr double kFloat64Eps = 2.220446049250313e-16;   // 2^-52

/// "float32" | "float64" | a number in (0, 1) -> eps. Throws sb::OptionError "--eps X:
/// expected ..." otherwise.
double parse_eps(const std::string& text);

using contract::RankReport;  // the report is part of the result file (contract/rank_report.h)

/// sigma: descending. Also the sweep (the rank at tol x 10^j, j = -2..2) and the largest ratio
/// sigma_i / sigma_(i+1) among the singular values above the resolution. resolution_rel: the
/// method's relative resolution (gram: sqrt(eps64); exact: a few eps of its precision).
RankReport numerical_rank(const std::vector<double>& sigma, int64_t rows, int64_t cols, double eps,
                          int64_t bound, bool theorem2_bounded, double resolution_rel);

/// A count below the bound is a verdict only when the spectrum is resolved past it. At a coarse
/// eps (float16: tol = 0.5 sqrt(M + T + 1) sigma_max 2^-10 = 0.038 sigma_max at T = 4000,
/// M = 2000; bfloat16 2^-7: 0.30 sigma_max) tol cuts a spectrum that goes on: a trained
/// sigsoftmax matrix of float32 rank 2000 counts 1 in either, "within" a bound of 66, because a
/// log-probability matrix's first direction (the rows' mean) carries most of its norm and the
/// model's other directions lie a few percent below it. The rule, when the bound binds and
/// rank < bound (a softmax matrix that attains its bound, rank = bound, is never marked):
///  - the spectrum goes on across tol: the first value not counted, sigma_(rank+1), lies within
///    kPrecisionDecade below tol (no gap at the cut), and the count at tol / kPrecisionDecade^2
///    exceeds the bound or the method does not resolve that far (a final-LayerNorm softmax dump
///    at d = 128 has its 129th value, d + 1 = the bound, at tol / 3 and then a gap of 162x: 128
///    counted, 129 two decades below tol, within either way: the count stands); or
///  - the data's eps is coarser than float32's (float16, bfloat16): at NR's tol for such an eps
///    a count below the bound says how coarse the storage is, not how low the rank is.
/// Either marks precision_limited: verdict unresolved_at_precision, never within_bound, with
/// eps_to_resolve = min(float32's eps, eps sigma_(rank+1) / tol), the eps at which the next value
/// would count (float32's when it is unknown: the sketch's basis, --rank-only).
inline constexpr double kPrecisionDecade = 10.0;
void limit_by_precision(RankReport& r, const std::vector<double>& sigma);

}  // namespace sb::analysis
