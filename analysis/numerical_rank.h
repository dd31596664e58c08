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

}  // namespace sb::analysis
