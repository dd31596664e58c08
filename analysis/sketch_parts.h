#pragma once
// The sketch's pieces shared by its two files: one pass's sums and its window (sketch.cpp), and
// the power steps on the count (sketch_power.cpp; sketch.h, "Power steps"). Not an interface:
// only analysis/sketch*.cpp include it, and compensated_finish.cpp for the certified defect.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "analysis/residual_power.h"
#include "analysis/sketch.h"
#include "analysis/sparse_sign.h"
#include "analysis/widen_rows.h"

namespace sb::analysis::sketch_detail {

// Rows gathered per factorisation of the streamed QR: c = 8k, at least 2048 (streamed_qr.h). Its
// backward error f = sum over the T / c steps of k gamma_(2 (k + c)) = k gamma_(2 T (1 + k / c))
// sets e_R, every Ritz value's error bar: c = 8k keeps f within 12.5% of one factorisation of all
// T rows (c = 2k: 50%). On sigsoftmax's WikiText-2 dump (k = 1792, ||AQ||_F = 1.17e6) that is
// e_R = 0.13 against 0.17, the difference between r < 4.2 and r < 3.8 closing the window at 1%
// around tol = 36.65. Cost: 2 T k^2 (1 + 2k / (3c)) flops a pass, below 2k's, against the
// products' 4 T M k; memory 8 (k + c) k bytes (231 MB at k = 1792), in the memory model.
inline int64_t qr_chunk_rows(int64_t k) { return std::max<int64_t>(int64_t{2048}, 8 * k); }

// One pass's accumulations (sketch.h): Y = A^T A Q, R (A Q = Q' R, streamed_qr.h), n_i =
// ||A w_i||^2, and on the first pass the finite scan, the signs and sum a_ij^2.
struct PassSums {
  int64_t k = 0;
  std::vector<double> y, r, probe_sq;
  double z_frobenius_sq = 0;  // ||fl(A Q)||_F^2
  double qr_factor = 0;       // the streamed QR's backward error factor f
  double frobenius_sq = 0;
  double ones_sq = 0;  // ||fl(A 1)||^2, the first pass's row sums squared
  bool positive = false, negative = false;
};

// The bounds of sketch.h from one pass's sums.
struct Window {
  std::vector<double> sigma, lower, upper;  // the Ritz values sigma_i(R), their certified bracket
  double residual = 0;                      // e
  int64_t residual_count = 0;               // > 0: e is the power steps' bound for Q_c
  double value_error = 0;                   // e_R + e_Z: how far a Ritz value may be off
  double residual_floor = 0;                // the part of e that is rounding: no pass lowers it
  double tol = 0, tol_lo = 0, tol_hi = 0;
  int64_t rank = 0, rank_min = 0, rank_max = 0;
  double rounding = 0;  // the bracket of sigma_1 less e (at least 0), for the report
};

/// The window of a full pass or check: the Ritz values' certified bracket from the streamed R, the
/// residual bound e from the probes (HMT lemma 4.1), tol's bracket and the count's window, every
/// rounding term of sketch.h included (sketch_bracket.cpp).
Window bracket(const PassSums& s, const std::vector<double>& probe_norm,
               const std::vector<double>& w_norm, const std::vector<double>& w_err, int64_t rows,
               int64_t cols, int64_t k, double eta, double frobenius, double eps);

/// ||Q||_2 <= sqrt(1 + eta) and 1 / sigma_min(Q) <= 1 / sqrt(1 - eta) for Q's defect eta (the
/// latter capped at sqrt(2)): the scalings of the brackets (sketch.h, "Upper").
inline double q_norm_bound(double eta) { return std::sqrt(1 + eta); }
inline double q_inverse_bound(double eta) { return 1 / std::sqrt(std::max(1 - eta, 0.5)); }

/// The window with e lowered to a bound on ||A (I - Q Q^T)||_2 for the pass's whole basis (the
/// power steps' basis route, sketch.h "Power steps"): every bracket recomputed, and past k no
/// value above tol_lo once e is below it. No change when e is not below the window's e.
void narrow_by_residual(Window& w, double e, double eta, int64_t rows, int64_t cols, int64_t k,
                        double eps);
/// The largest residual bound e under which the (j+1)-th value's upper end falls below tol_lo
/// (the window then ends at j at most); 0 where its Ritz value alone keeps it at or above tol_lo.
double residual_to_close(const Window& w, int64_t j, double eta);

/// The passes of a run by kind (sketch.h: the start, full passes, checks, power steps) and the
/// residual bounds evaluated (each wrong with probability <= 1e-12).
struct PassCounts {
  int passes = 0, checks = 0, check_passes = 0, power_passes = 0, start_nonzeros = 0;
  bool range_start = false;  ///< the range start ran (its one pass counted above)
  int range_probes = 0;      ///< its p
  int starts = 0;            ///< sparse starts (sketch.h, "Start"), counted in passes
};

/// The report from the last window (sketch_report.cpp): the Numerical Recipes rank of the Ritz
/// values with what they cannot resolve marked, the certified window, the largest certified gap,
/// the pass counts, the bound.
void fill_report(SketchResult& out, Window& w, const SketchOptions& o, int64_t rows, int64_t cols,
                 int64_t k, const PassCounts& n);

/// Whether to try the verdict start after the sparse start (sketch.h): verdict_only on a head
/// Theorem 2 bounds, the bound below k, power steps allowed (sketch_verdict.cpp).
bool verdict_start_wanted(const SketchOptions& o, int64_t k);
/// The verdict start's report: the start's nominal count, inside the certified window.
void set_nominal_rank(sb::contract::RankReport& r, int64_t nominal);

/// A window that answers what was asked: certified, or (verdict_only) on one side of the bound.
bool settled(const Window& w, const SketchOptions& o);
/// After power steps: settled, or the residual below tol and the window at most
/// o.window_fraction of its upper end wide (sketch.h, "Power steps").
bool narrow_enough(const Window& w, const SketchOptions& o);
/// rank_max - rank_min.
int64_t width(const Window& w);

/// The first count that reaches a basis of k columns: k - max(oversampling / 2, 1) (sketch.h,
/// "Adaptivity": the rank may lie at or past the subspace, so its Ritz values cannot settle it).
inline int64_t reach_of(const SketchOptions& o, int64_t k) {
  return k - std::max<int64_t>(o.oversampling / 2, 1);
}
/// Whether a count c reaches a basis of k columns (reach_of).
inline bool reaches_k(int64_t c, const SketchOptions& o, int64_t k) { return c >= reach_of(o, k); }

// The steering (sketch_steering.cpp; sketch.h, "Adaptivity", "Checks", "Start").

/// Whether the basis must widen for the count (the nominal count reaches k, or it is past 0.9 k
/// and one more iteration is not expected to close the window).
bool count_reaches(const Window& w, const SketchOptions& o, int64_t k, bool after_start);
/// The next k when the basis widens: min(cap, max(2k, count + oversampling)); 4k after a start
/// whose every Ritz value lies above tol.
int64_t widened_k(const Window& w, const SketchOptions& o, int64_t k, int64_t cap,
                  bool after_start);
/// When to stop iterating and when to widen the basis, from each pass's window
/// (sketch_steering.cpp).
struct Steering {
  int passes_at_k = 0, stalled = 0;
  /// What power steps on the basis, where they left the window open, decided for the next pass
  /// (basis_attempt): widen (the spectrum past k keeps r up), or iterate at k (Q's last Ritz
  /// value lies below what closes the window), whatever the probes' Frobenius bound (which sees
  /// the whole tail) did; none where they did not run.
  enum class BasisNext { none, widen, iterate } basis_next = BasisNext::none;
  int64_t last_width = -1;
  double last_residual = std::numeric_limits<double>::infinity();

  /// After a pass at k: whether to stop, and (if not) the next k.
  bool stop(const Window& w, const SketchOptions& o, int64_t k, int64_t cap, int pass,
            bool after_start, int64_t* next_k);
};
/// After a full pass whose window is still open: whether one more iteration is expected to close
/// it, so that the next pass can be a check.
bool closes_next(const Window& w, const SketchOptions& o, int64_t k, bool after_start);
/// After a full pass whose count is certified from below (but for its last value) and clear of
/// k, only the residual keeping the window open: power steps follow, so the next pass can be a
/// check.
bool power_follows(const Window& w, const SketchOptions& o, int64_t k);
/// After a start again: its count leaves k / 4 of oversampling, so the next pass can be a check.
bool power_follows_restart(const Window& w, const SketchOptions& o, int64_t k);
/// Whether the pass after a start is a start again, at next_k.
bool restarts(const SketchOptions& o, bool starting, int64_t k, int64_t next_k, const Window& w);

/// The first k columns of y (M x k, column-major) replaced by an orthonormal basis of their span,
/// and the certified orthogonality defect eta of the result (sketch.h).
double orthonormalise(std::vector<double>& y, int64_t m, int64_t k);
/// The certified orthogonality defect eta >= ||Q^T Q - I||_F of the M x k matrix q as it is.
double defect(const double* q, int64_t m, int64_t k);

/// The sparse start (sketch.h, "Start"; sketch_start.cpp). Its window: the singular values of
/// R are those of A Omega, which bound nothing (Omega is not orthonormal) and steer alone: a
/// nominal count at the NR threshold of the largest, the window [0, min(T, M)], no residual
/// bound.
Window start_window(const PassSums& s, int64_t rows, int64_t cols, int64_t k, double eps);
/// The start's progress line: its nominal count, no bounds.
void report_start(const SketchProgress& progress, const Window& w, int pass, int64_t k,
                  double seconds, bool range = false);

/// When to try power steps (sketch.h, "Power steps"), and where they were last tried.
struct PowerAttempts {
  int64_t k = -1, c = -1;
  int pass = 0;
  int passes = 0;  ///< power steps so far, over all attempts

  bool wanted(const Window& w, const SketchOptions& o, int64_t k_now, int passes_at_k, bool check,
              int pass_now) const;
  /// An attempt at (k_now, c_now) after pass pass_now: wanted() does not repeat it too soon.
  void start(int64_t k_now, int64_t c_now, int pass_now) {
    k = k_now;
    c = c_now;
    pass = pass_now;
  }
};

/// The power steps' options (residual_power.h) from the sketch's: stop below target, with
/// sigma1_upper >= sigma_1 and abs_norm >= || |A| ||_2.
ResidualPowerOptions power_options(const SketchOptions& o, double target, double sigma1_upper,
                                   double abs_norm, int64_t rows, int64_t block_rows);

/// Power steps on c (the count w.rank, or power_route's U) with the top c Ritz vectors of the pass
/// (residual_power.h) whose basis Q is basis's first k columns and whose R is sums.r; a bound
/// below tol_lo ends the window at c. Returns the passes they took; the bounds evaluated are
/// added to *checks.
template <class In>
int power_attempt(const std::function<void(int64_t, int64_t, In*)>& read, int64_t local_rows,
                  int64_t cols, const std::vector<double>& basis, const PassSums& sums, Window& w,
                  const SketchOptions& o, int64_t k, int64_t rows, double frobenius, bool same_sign,
                  int64_t block_rows, int pass_before, std::mt19937_64& rng, SpectrumTiming* timing,
                  const SketchProgress& progress, int* checks, int64_t c);

/// Whether the power steps bound the residual of the whole basis (basis_attempt) rather than of
/// the count's Ritz vectors (power_attempt): the count's next Ritz value lies within 5% of tol, so
/// a bound on ||A (I - Q_c Q_c^T)||_2, which is at least that value, would have to tell it from
/// tol.
bool basis_route(const Window& w, double eta);
/// The basis route's target: the r that certifies the count, or, where that lies below half the
/// r of a window window_fraction wide, that window's; 0 where no r closes either (a Ritz value's
/// bracket, +- e_R + e_Z, reaches tol: residual_to_close).
double basis_target(const Window& w, const SketchOptions& o, double eta);
/// U = floor(rank_min / (1 - window_fraction)): the largest upper end of a window narrow enough
/// to end on (narrow_enough).
int64_t widest_upper(const Window& w, const SketchOptions& o);
/// Where an attempt's power steps go (sketch.h, "Power steps"): the basis with its target
/// (basis_route and a target above 0); else the top c Ritz vectors, c the count. Where the basis
/// route cannot close (basis_target 0; on MoSS's WikiText-2 dump at k = 3584, e_R = 0.68 against
/// tol 38.3 put the 888th and 891st values' brackets at tol), c = U, clamped clear of k, and
/// basis_closed is set; where U falls below the count, the basis attempt (no step) stays.
struct PowerRoute {
  bool basis = false;
  bool basis_closed = false;  ///< the basis could not close: Q_U in its place
  double target = 0;          ///< the basis route's target residual
  int64_t c = 0;              ///< the Q_c route's c
};
PowerRoute power_route(const Window& w, const SketchOptions& o, double eta, int64_t k);
/// progress.note's line for a basis attempt that made no step (past_k: the basis widens).
void note_no_step(const SketchProgress& progress, const Window& w, const SketchOptions& o,
                  int64_t k, bool past_k);
/// progress.note's line for power steps on the top u Ritz vectors in place of the basis.
void note_closed(const SketchProgress& progress, const Window& w, int64_t k, int64_t u);

/// Power steps on the residual of the pass's whole basis Q (basis's first k columns, defect
/// eta): a bound r on ||A (I - Q Q^T)||_2, narrow_by_residual then brackets every value by
/// hypot(s_i, r). Its target is the r that certifies the count, or, where that lies below half
/// the r of a window 1% wide, that window's. Returns the passes taken; checks counted; *past_k
/// whether the basis must widen when the window stays open (sketch.h, "The basis route"): Q has
/// been iterated at k (passes_at_k >= 2) and its last Ritz value s_k, about sigma_k >=
/// sigma_(k+1), is at or above the target (what keeps r up is then the spectrum past k, which
/// no pass at k lowers), or Q has been iterated three times; else another pass at k, a quarter
/// of the two at 2k, takes in the values Q has not converged to.
template <class In>
int basis_attempt(const std::function<void(int64_t, int64_t, In*)>& read, int64_t local_rows,
                  int64_t cols, const std::vector<double>& basis, double eta, Window& w,
                  const SketchOptions& o, int64_t k, int64_t rows, double frobenius, bool same_sign,
                  int64_t block_rows, int pass_before, std::mt19937_64& rng, SpectrumTiming* timing,
                  const SketchProgress& progress, int* checks, int passes_at_k, bool* past_k);

/// sigma_1(A) >= ||A Omega x|| / ||Omega x|| for x the first right singular vector of the start's
/// R, with every rounding term of sketch.h ("Verdict start") taken off: a certified lower bound.
double sigma1_lower_from_start(const PassSums& sums, const SparseSign& omega, int64_t rows,
                               int64_t cols, double frobenius);

/// The verdict start's outcome: certified, the window [rank_min, bound] with the power steps'
/// residual bound; else the passes it took, and the sketch goes on as without it.
struct VerdictStart {
  bool certified = false;
  Window window;
  int steps = 0, checks = 0;
};

/// The range start (sketch.h, "Verdict start"): the verdict start with the sparse start's range
/// A Omega kept (T x k, column-major) instead of its next basis, when it fits kRangeStartBytes and
/// one process holds every row.
inline constexpr double kRangeStartBytes = double(int64_t{8} << 30);
bool range_start_wanted(const SketchOptions& o, int64_t k, int64_t rows);

/// The first pass's row sums (widen_rows.h) into the pass's sums.
inline void add_row_sums(PassSums& sums, const RowSums& facts) {
  sums.frobenius_sq += facts.frobenius_sq;
  sums.ones_sq += facts.ones_sq;
  sums.positive |= facts.positive;
  sums.negative |= facts.negative;
}

/// A float64 buffer whose elements are left uninitialised on resize: the range start's T x k
/// products are written whole by their pass, and zeroing them first touched 0.8 GB (WikiText-2's
/// T, k = 412) before the pass began; their pages now come in as the pass writes them, while it
/// also waits for the disk.
template <class T>
struct NoInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = NoInitAllocator<U>;
  };
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    if constexpr (sizeof...(Args) == 0)
      ::new (static_cast<void*>(p)) U;
    else
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using Products = std::vector<double, NoInitAllocator<double>>;

/// The range start's one pass (sketch.h, "Verdict start"): a_omega (T x k) = A Omega and zp
/// (T x p) = A W, both column-major at leading dimension T, for W = omega_p (M x p, column-major),
/// by range_products on blocks of the reader's own type; the first pass's sums and finite scan.
/// False when the data held non-finite entries.
template <class In>
bool range_pass(const std::function<void(int64_t, int64_t, In*)>& read, int64_t rows, int64_t cols,
                const SparseSign& omega, const std::vector<double>& omega_p, int64_t p,
                bool overlap, FiniteScan* scan, SpectrumTiming* timing, PassSums& sums,
                const std::function<void(int64_t)>& on_rows, double* a_omega, double* zp);

/// The range start's basis: U_b (T x b), the top b left singular vectors of A Omega (T x k,
/// column-major, factored in place: Householder QR, then the SVD of its k x k factor), *eta its
/// certified defect; sums gets the start's R, ||A Omega||_F^2 and the QR's backward error factor
/// (no streamed QR in that pass).
Products range_basis(Products a_omega, int64_t rows, int64_t k, int64_t b, PassSums& sums,
                     double* eta);

/// The range start's bound on ||(I - U_b U_b^T) A||_2 from zp = fl(A omega_i) (T x p, column-major,
/// the probes omega_p (M x p) drawn apart from Omega) against tol_lo = c_NR times
/// sigma1_lower_from_start (HMT lemma 4.1, every rounding term): certified "within", or not.
/// seconds: the pass's time so far, for the progress line.
VerdictStart range_start(Products zp, const std::vector<double>& omega_p, const Products& u_b,
                         double eta, const PassSums& sums, const SparseSign& omega,
                         const Window& start, const SketchOptions& o, int64_t rows, int64_t cols,
                         double frobenius, const SketchProgress& progress, double seconds);

/// The verdict start (sketch.h): Q_b, the top `bound` left singular vectors of the start's Y,
/// and power steps on ||A (I - Q_b Q_b^T)||_2 against tol_lo = c_NR times sigma1_lower_from_start.
template <class In>
VerdictStart verdict_start(const std::function<void(int64_t, int64_t, In*)>& read,
                           int64_t local_rows, int64_t cols, const PassSums& sums,
                           const SparseSign& omega, const Window& start, const SketchOptions& o,
                           int64_t rows, double frobenius, int64_t block_rows, int pass_before,
                           std::mt19937_64& rng, SpectrumTiming* timing,
                           const SketchProgress& progress);

/// Whether the float64 finish (compensated_finish.h) runs after the sketch's passes: its window
/// open with the rounding part of e at or above tol_lo (the float64 eps), one process, the
/// finish's memory within kRangeStartBytes.
bool finish_wanted(const Window& w, const SketchOptions& o, int64_t rows, int64_t cols, int64_t k);
/// The float64 finish from the last pass's basis (its first k columns), where finish_wanted and
/// the rows are float64 (float rows: nothing, 0): the window narrowed by its certified bounds.
/// Returns its passes but the power steps, which go to *power_passes; its bounds evaluated go to
/// *checks.
template <class In>
int float64_finish(const std::function<void(int64_t, int64_t, In*)>& read, int64_t rows,
                   int64_t cols, const std::vector<double>& basis, int64_t k, Window& w,
                   const SketchOptions& o, double frobenius, int pass_before, std::mt19937_64& rng,
                   SpectrumTiming* timing, const SketchProgress& progress, int* checks,
                   int* power_passes);

}  // namespace sb::analysis::sketch_detail
