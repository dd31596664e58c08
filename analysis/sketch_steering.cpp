// The sketch's steering (sketch.h, "Adaptivity", "Checks", "Start"): from each pass's window,
// whether to stop, whether to widen the basis, whether the next pass can be a check, and whether
// a start is followed by a start again.

#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis/residual_power.h"
#include "analysis/sketch_parts.h"

namespace sb::analysis::sketch_detail {

/// Whether the basis must widen for the count: the nominal count reaches k - oversampling / 2
/// (the rank may lie at or past the subspace), or it is past 0.9 k and one more iteration at k
/// is not expected to close the window (closes_next: no gap below the count). The Ritz values
/// near the end of a basis converge last and from below (they interlace A's), so a count that
/// still climbs at 0.9 k is climbing towards k: on results/bench/rank_wt2_count.md's rank-1000
/// matrix the pass at k = 824 counted 783, and the next at 824 counted 824 before k doubled. A
/// softmax head's count at d + 2 sits above a cliff and closes: it does not grow.
bool count_reaches(const Window& w, const SketchOptions& o, int64_t k, bool after_start) {
  if (reaches_k(w.rank, o, k)) return true;
  return 10 * w.rank >= 9 * k && !closes_next(w, o, k, after_start);
}

/// The next k when the basis widens: min(cap, max(2k, count + oversampling)); after a start
/// whose every Ritz value lies above tol, 4k. Such a start says only that the spectrum goes on
/// past k: a doubling from there is a pass at 2k that the count will outgrow (results/bench/
/// rank_wt2_count.md: a start at 412 counted 412, passes followed at 824, 824 and 1648 for a
/// rank of 1000), while a 4k basis costs at most twice the pass it replaces.
int64_t widened_k(const Window& w, const SketchOptions& o, int64_t k, int64_t cap,
                  bool after_start) {
  const int64_t factor = after_start && w.rank >= k ? 4 : 2;
  return std::min(cap, std::max(factor * k, w.rank + o.oversampling));
}

/// After a full pass whose window is still open: whether one more iteration is expected to
/// close it, so that the next pass can be a check. Subspace iteration shrinks the
/// residual by about rho = (s_(c+1) / s_c)^2 per pass (c the nominal count; Halko, Martinsson &
/// Tropp 2011, section 4.5), so the prediction is e rho < tol / 2, with the count clear of k.
/// After the sparse start (sketch.h, "Start") there is no residual bound yet: a tail of A Omega
/// at level s_(c+1) is taken as A's tail at that level over up to k directions (E[Omega Omega^T]
/// = I: sparse_sign.h), so e = factor * s_(c+1) sqrt(k) with the probes' factor, and the next
/// basis A^T A Omega is one power step.
/// Only a prediction: a check that does not certify costs a pass without Y, and the passes after
/// it are full.
bool closes_next(const Window& w, const SketchOptions& o, int64_t k, bool after_start) {
  const int64_t c = w.rank;
  if (c < 1 || reaches_k(c, o, k)) return false;
  const double above = w.sigma[static_cast<size_t>(c - 1)], below = w.sigma[static_cast<size_t>(c)];
  if (!(above > 0)) return false;
  const double rho = (below / above) * (below / above);
  const double e =
      after_start ? probe_factor(o.probes) * below * std::sqrt(static_cast<double>(k)) : w.residual;
  return e * rho < 0.5 * w.tol;
}

/// After a full pass whose count c is certified from below (or all but its last value: one more
/// iteration raises the Ritz values' lower bounds) and clear of k, with only the residual bound
/// keeping the window open (above the rounding floor): power steps on Q_c follow the next pass
/// (sketch.h, "Power steps"), and they need no next basis, so that pass can be a check.
/// Measured on the tail matrix of results/bench/rank_tail.md (T = 30000, M = 6000, count 1200):
/// the second pass at k = 1792 formed a Y that nothing used, after a first that certified
/// 1199 or 1200 from below by the draw. A check that leaves c uncertified from below costs its
/// A Q, and a full pass follows.
bool power_follows(const Window& w, const SketchOptions& o, int64_t k) {
  return o.power_steps > 0 && w.rank >= 1 && w.rank_min + 1 >= w.rank && w.rank_max > w.rank &&
         !reaches_k(w.rank, o, k) && w.residual >= w.tol_lo && w.residual_floor < w.tol_lo;
}

/// After a start again at a widened k (restarts): its count c clear of k by a quarter of k. The
/// next basis is then A^T A Omega with at least k / 4 columns of oversampling, one power step on
/// every column, so its Ritz values certify c from below as a full pass on it would, and what
/// keeps the window open is the residual (a tail below tol), which power steps on Q_c close
/// without a next basis: that pass can be a check (2 T M (k + p) flops instead of 2 T M (2k + p)).
/// Measured: a rank-300 matrix of WikiText-2's width (T = 30000, 600 tail values in [0.2, 0.9]
/// tol; results/bench/power_lanes.md) restarted at k = 448 from 112 and the full pass on that
/// basis certified 300 from below; the rank-1000 matrix at WikiText-2's size did so at k = 1648
/// (results/bench/rank_wt2_count.md). A check that does not is followed by a full pass on the
/// same basis (its A Q spent).
bool power_follows_restart(const Window& w, const SketchOptions& o, int64_t k) {
  return o.power_steps > 0 && w.rank >= 1 && 4 * w.rank <= 3 * k;
}

bool Steering::stop(const Window& w, const SketchOptions& o, int64_t k, int64_t cap, int pass,
                    bool after_start, int64_t* next_k) {
  const bool reaches = count_reaches(w, o, k, after_start);
  // The residual bound is what stands between rank_min and rank_max, and iterating at this k
  // no longer halves it: the tail past k is too heavy (the probes see its Frobenius norm), so
  // the basis must widen.
  // Unless the rounding alone keeps e at or above tol (the float64 eps, sketch.h): then no
  // basis can close the window, and the Ritz values need only converge.
  const bool floor_blocks = w.residual_floor >= w.tol_lo;
  // Power steps on the basis bound the 2-norm and decide instead where they ran (basis_next).
  const bool residual_stuck = !floor_blocks && basis_next != BasisNext::iterate &&
                              passes_at_k > 1 && w.residual >= w.tol_lo &&
                              w.residual > 0.5 * last_residual;
  // A window that stops narrowing while the residual is below tol: a singular value sits
  // within the rounding of tol, and no pass can settle it.
  const int64_t width = w.rank_max - w.rank_min;
  stalled = (passes_at_k > 1 && last_width >= 0 && width >= last_width) ? stalled + 1 : 0;
  last_width = width;
  last_residual = w.residual;
  const bool grow = (reaches || residual_stuck || basis_next == BasisNext::widen) && k < cap;
  basis_next = BasisNext::none;
  if (settled(w, o) || pass >= o.max_passes || (!grow && stalled >= 2) ||
      (k == cap && (reaches || residual_stuck) && passes_at_k >= 2) ||
      (floor_blocks && !grow && passes_at_k >= 2))
    return true;
  *next_k = grow ? widened_k(w, o, k, cap, after_start) : k;
  if (*next_k != k) {
    passes_at_k = 0;
    last_width = -1;
    stalled = 0;
  }
  return false;
}

/// Whether the pass after a start is a start again, at next_k (sketch.h, "Start"): the start's
/// every Ritz value lay above tol, so k grows fourfold, and a pass on Y beside 3k fresh
/// Gaussian columns would hold three quarters of its basis unconverged: its bounds certify
/// nothing (the residual still holds the spectrum past k), and it would cost 2 T M (2 next_k +
/// p) flops for what a start at next_k gives for 2 T M next_k + T M zeta: the next basis, one
/// power step on every column. Measured at WikiText-2's size (results/bench/rank_wt2_count.md,
/// rank 1000): k = 412 counted 412, and the pass at 1648 that followed took 11m54s.
bool restarts(const SketchOptions& o, bool starting, int64_t k, int64_t next_k, const Window& w) {
  return starting && o.start_nonzeros > 0 && !o.verdict_only && w.rank >= k && next_k > k;
}

}  // namespace sb::analysis::sketch_detail
