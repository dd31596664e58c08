#pragma once
// Numerical rank of a spectrum under the Numerical Recipes threshold (Press et al.; the paper's
// section 4.3), numpy.linalg.matrix_rank's default, and the verdict against Theorem 2's bound.

#include <cstdint>
#include <string>
#include <vector>

namespace sb::analysis {

inline constexpr double kFloat32Eps = 1.1920928955078125e-07;  // 2^-23
inline constexpr double kFloat64Eps = 2.220446049250313e-16;   // 2^-52

/// "float32" | "float64" | a positive number -> eps. Throws std::invalid_argument otherwise.
double parse_eps(const std::string& text);

struct RankReport {
  double sigma_max = 0;
  double eps = 0;
  double tol = 0;        ///< NR: 0.5 sqrt(M + T + 1) sigma_max eps
  int64_t rank = 0;      ///< #{sigma > tol}
  double tol_numpy = 0;  ///< numpy.linalg.matrix_rank: sigma_max max(M, T) eps
  int64_t rank_numpy = 0;
  int64_t bound = 0;        ///< Theorem 2: d + 1 + bias
  double spectral_gap = 0;  ///< sigma_b / sigma_(b+1) at the bound (NaN if out of range)
  bool theorem2_bounded = false;
  bool within_bound = false;
  bool resolvable = true;  ///< the method resolves singular values down to tol
  double resolution = 0;   ///< smallest sigma the method resolves, absolute
  std::string verdict() const { return within_bound ? "within_bound" : "exceeds_bound"; }
};

/// sigma: descending. resolution_rel: the method's relative resolution (gram: sqrt(eps64);
/// exact: a few eps of its precision).
RankReport numerical_rank(const std::vector<double>& sigma, int64_t rows, int64_t cols, double eps,
                          int64_t bound, bool theorem2_bounded, double resolution_rel);

}  // namespace sb::analysis
