#pragma once
// The report of one rank analysis as plain data: what rank.h5 and rank.json carry
// (contract/rank_result.h writes them). The analysis fills it (analysis/numerical_rank.h,
// analysis/rank_certificate.h); anything that reads results can use it without the analysis.

#include <array>
#include <cstdint>
#include <limits>
#include <string>

namespace sb::contract {

struct RankReport {
  double sigma_max = 0;
  double eps = 0;
  double tol = 0;        ///< NR: 0.5 sqrt(M + T + 1) sigma_max eps
  int64_t rank = 0;      ///< #{sigma > tol}
  double tol_numpy = 0;  ///< numpy.linalg.matrix_rank: sigma_max max(M, T) eps
  int64_t rank_numpy = 0;
  int64_t bound = 0;        ///< Theorem 2: d + 1 + bias
  double spectral_gap = 0;  ///< sigma_b / sigma_(b+1) at the bound (NaN if out of range)
  /// The rank at tol x 10^j for j = -2..2 (the middle one is `rank`): how far the rank is from
  /// moving. Every entry -1 when not computed (--rank-only).
  std::array<int64_t, 5> rank_sweep{-1, -1, -1, -1, -1};
  /// The largest sigma_i / sigma_(i+1) over i with sigma_(i+1) above the method's resolution
  /// (below it the ratios are round-off's) and, at the first sigma_(i+1) at or below it, the
  /// lower bound sigma_i / (sigma_(i+1) + resolution) of that ratio; its i, 1-based: the rank
  /// the gap suggests. NaN and -1 when there is no such i (a single singular value,
  /// --rank-only).
  double largest_gap = std::numeric_limits<double>::quiet_NaN();
  int64_t largest_gap_index = -1;
  bool theorem2_bounded = false;
  bool within_bound = false;
  bool resolvable = true;  ///< the method resolves singular values down to tol
  double resolution = 0;   ///< smallest sigma the method resolves, absolute
  /// The bound is below min(M, T), so Theorem 2 can constrain the rank. When it is not (e.g. a
  /// character-level LM with M = 50 symbols and d = 128), every rank up to full is allowed:
  /// within_bound holds trivially and the verdict says bound_not_binding.
  bool bound_binding = true;
  /// The count lies below the bound because of the data's precision, not its structure (tol cuts
  /// a spectrum that goes on, or the storage is coarser than float32): at this eps the data
  /// cannot show whether the matrix stays within the bound (analysis/numerical_rank.h,
  /// limit_by_precision). The verdict is then unresolved_at_precision, never within_bound.
  bool precision_limited = false;
  /// precision_limited: the eps at which tol would fall to sigma_(rank+1) (a dtype with a
  /// smaller eps, e.g. float32 for float16 data, resolves further); NaN otherwise.
  double eps_to_resolve = std::numeric_limits<double>::quiet_NaN();
  std::string verdict() const {
    if (!bound_binding) return "bound_not_binding";
    if (within_bound && precision_limited) return "unresolved_at_precision";
    return within_bound ? "within_bound" : "exceeds_bound";
  }

  /// false: the rank came from inertia counts (--rank-only); no singular values, so rank_numpy is
  /// -1 and spectral_gap NaN (not computed).
  bool spectrum = true;
  /// The certificate of the gram paths (rank_certificate.h): the true rank of A lies in
  /// [rank_min, rank_max]; certified when they agree. Absent (has_certificate false) for exact.
  bool has_certificate = false;
  bool certified = false;
  int64_t rank_min = -1, rank_max = -1;
  int64_t uncertain = 0;  ///< max(rank - rank_min, rank_max - rank)
  double tol_lo = 0,
         tol_hi = 0;             ///< sigma thresholds of the window: rank_max counts sigma > tol_lo
  double gram_error = 0;         ///< bound on ||fl(A^T A) - A^T A||_2
  double solver_error = 0;       ///< bound on the factorisation's / eigensolver's backward error
  int sigma_max_iterations = 0;  ///< rank-only: power iteration steps
  double sigma_max_rel_error = 0;  ///< rank-only: relative width of lambda_1's bracket
  /// The sketch (analysis/sketch.h): its final k, the passes over A, the a posteriori bound e on
  /// ||A (I - Q Q^T)||_2 and the probability that e (and so the certificate) is wrong. 0, 0,
  /// NaN, 0 for the other methods.
  int64_t sketch_k = 0;
  int sketch_passes = 0;
  int sketch_check_passes = 0;  ///< of sketch_passes: checks, which form no next basis
  /// > 0: the first pass was the sparse start with this many nonzeros per row of its test
  /// matrix (analysis/sparse_sign.h), which bounds nothing; 0: a full pass
  int sketch_start_nonzeros = 0;
  /// of sketch_passes: sparse starts, which bound nothing: 1, or more when a start's every Ritz
  /// value lay above tol and the sketch started again at 4k (analysis/sketch.h, "Start")
  int sketch_starts = 0;
  /// the verdict's range start ran (analysis/sketch.h, "Verdict start"): its one pass kept
  /// A Omega instead of forming a next basis, and formed A omega_i for sketch_range_probes probes
  bool sketch_range_start = false;
  int sketch_range_probes = 0;
  /// of sketch_passes: power steps on the probes alone (analysis/residual_power.h); when they
  /// certified the count, residual_bound bounds ||A (I - Q_c Q_c^T)||_2 for the c top Ritz vectors
  int sketch_power_passes = 0;
  /// > 0: residual_bound is the power steps' bound on ||A (I - Q_c Q_c^T)||_2 with c = this;
  /// 0: the probes' bound on ||A (I - Q Q^T)||_2 for the whole basis (k columns)
  int64_t residual_count = 0;
  double residual_bound = std::numeric_limits<double>::quiet_NaN();
  double failure_probability = 0;
  /// "certified", "uncertain +-3", or "-" without a certificate.
  std::string certificate() const;
};

/// Where the time went (seconds): reading + conversion, BLAS accumulation (gram: dsyrk), and the
/// LAPACK solver (gesdd / syevd).
struct SpectrumTiming {
  double read = 0, accumulate = 0, solve = 0;
  double sigma_max = 0;  ///< rank-only: power iteration for sigma_max (part of solve)
  double reduce = 0;     ///< several processes (--mpi): adding the partial sums
};

}  // namespace sb::contract
