#pragma once
// One log-output file in, one RankResult (contract/rank_result.h) out: open and validate (HDF5 or
// .npy, matrix_source.h), complete the header from the given facts (model_facts.h), choose the
// method, stream the matrix (float32 or float64 rows, as stored), refuse non-finite entries,
// compute the spectrum and the rank report.

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/input_kind.h"
#include "analysis/matrix_source.h"
#include "analysis/model_facts.h"
#include "analysis/process_memory.h"
#include "analysis/sketch.h"
#include "analysis/spectrum.h"
#include "contract/rank_result.h"

namespace sb::analysis {

struct Collective;

/// The Gram path on another device (analysis/torch/gram_torch.h: a CUDA or CPU LibTorch device):
/// accumulate G = A^T A there from the source's row blocks (returned to the host for the
/// inertia count of --rank-only), and G's eigenvalues there. Empty: dsyrk and dsyevd here.
struct GramBackend {
  std::string device;  ///< "cuda:0", "cpu": the solver name says where it ran
  std::function<GramMatrix(const MatrixSource& source, int64_t block_rows, FiniteScan* scan,
                           SpectrumTiming* timing, const Progress& progress)>
      accumulate;
  /// Descending singular values sqrt(max(lambda, 0)) of G; consumes G.
  std::function<std::vector<double>(GramMatrix&& gram, SpectrumTiming* timing)> singular_values;
  std::string solver;  ///< names the eigensolver in the result, e.g. "torch eigvalsh (cuda:0)"
};

struct AnalyseOptions {
  std::string method = "auto";  ///< exact | gram | sketch | auto
  /// gram: which Gram matrix. auto: the smaller, A A^T (T x T, row_gram.h) when T < M, else
  /// A^T A (M x M); rows | columns force one (a device backend accumulates columns only).
  std::string gram = "auto";
  int64_t panel_cols = 0;  ///< the row Gram's columns per panel; <= 0: row_gram_panel_cols
  /// logprobs | logits | auto: what the rows hold (input_kind.h); auto takes the file's attribute
  /// 'input', else detects it from the rows' logsumexp.
  std::string input = "auto";
  std::string eps;        ///< float32 | float64 | number; empty: the file's compute_dtype (plain
                          ///< files: the data's dtype)
  std::string precision;  ///< exact path: float32 | float64; empty: as eps
  ModelFacts facts;       ///< head, d, bias for files without them (--head, --d, --bias)
  int64_t block_rows = 4096;  ///< gram: rows per block
  /// --budget-gb: the memory the analysis may use. auto picks the method that fits it, and a
  /// method that does not fit is refused before anything is allocated. Not given: auto prefers
  /// the method that fits kDefaultBudgetBytes, and the limit is the memory available.
  std::optional<double> budget_bytes;
  /// gram: true computes every eigenvalue of A^T A (the singular values); false (--rank-only)
  /// counts those above tol^2 by inertia instead (rank_certificate.h): no singular values,
  /// rank_numpy and spectral_gap not computed. The exact method always has the spectrum.
  bool spectrum = true;
  bool overlap_read = true;  ///< gram: read block k + 1 while dsyrk runs on block k
  /// Receives one progress line at a time ("gram: 40960 / 245570 rows (16.7%), 11m40s, ETA
  /// 58m10s", then the solver's start); empty: silent. A line at most every progress_seconds,
  /// and always the last block's and the solver's.
  std::function<void(const std::string& line)> on_progress;
  double progress_seconds = 10;
  /// Called after every block of every pass and before the dense solve that ends a pass (the
  /// eigen- or singular-value call), whether or not progress lines are wanted; it throws to stop
  /// the analysis there, which leaves nothing written (sbrank: Ctrl-C raises KeyboardInterrupt
  /// within a block or one LAPACK call). Empty: never asked.
  std::function<void()> poll;
  GramBackend backend;  ///< gram: where G is accumulated and solved; empty: here, by LAPACK
  /// The sketch's settings a user chooses (sketch.h; --sketch-*): oversampling (k starts at the
  /// bound + it), max_k (<= 0: min(T, M), lowered to what the memory limit holds), probes per
  /// check, max_passes, check_passes, power_steps. What the file decides (the bound, eps, the
  /// first k, the rows, the collective) the plan fills in; `seed`, `verdict_only`, `block_rows` and
  /// `overlap_read` below are the analysis's own and are copied in too.
  SketchOptions sketch;
  uint64_t seed = 0;
  /// Only the verdict (within / exceeds the bound) is asked: the sketch stops once it is certain,
  /// and auto takes the sketch.
  bool verdict_only = false;
  /// Several processes (rank_analysis --mpi; collective.h): each streams its share of the rows
  /// and the partial sums are added; the gram method (A^T A) and the sketch only. nullptr: one.
  const Collective* collective = nullptr;
};

/// auto's memory budget when --budget-gb is not given.
inline constexpr double kDefaultBudgetBytes = 8.0 * (1ull << 30);

/// The limit an analysis runs under: available_memory(), or --budget-gb when that is smaller.
MemoryLimit memory_limit(const AnalyseOptions& options);

/// Which method `auto` picks: the sketch when only the verdict is asked (and the bound binds);
/// the sketch by cost when the whole spectrum is not asked for (spectrum false: the command
/// line's default), the head's rank is bounded (`low_rank_expected`: Theorem 2) and its FLOP
/// model is below half the Gram path's (cost_favours_sketch); gram when its resolution
/// (sqrt(eps64) sigma_max) lies well below the NR tolerance and its Gram matrix (the smaller one
/// unless --gram says which: 8 min(T, M)^2 bytes) fits the budget; else the sketch when its
/// first k (`sketch_k`: bound + oversampling) is at most half of min(T, M) and fits the budget;
/// else exact when the matrix fits the budget; else whichever fits `limit_bytes` (gram first,
/// reported as not resolving the tolerance where it does not).
SvdMethod choose_method(int64_t rows, int64_t cols, double eps, const AnalyseOptions& options,
                        double limit_bytes = 0, int64_t sketch_k = 0,
                        bool low_rank_expected = false);

/// The FLOP models `auto` compares. The Gram path: n^2 m for the Gram matrix of the smaller side
/// n = min(T, M) over the larger m (dsyrk), plus ~4 n^3 for its eigendecomposition (dsyevd's
/// reduction and back-transformation). The sketch at k: 3 passes (the range, the power step, the
/// float64 check: what it took on every bounded matrix measured) of two products (A by an M x k
/// block, A^T by a T x k one), 2 T M k FLOP each: 12 T M k. Against measurements on a newer
/// Intel Xeon: PTB's test log-probs, 82429 x 10000 at k = 210: gram 1.2e13 FLOP in 70 s, sketch
/// 2.1e12 in 23 s (~100 GFLOP/s both); GPT-2's shape, 4000 x 50257 at k = 770: gram 1.1e12 in
/// 9.6 s, sketch 1.9e12 in 21 s: the model orders both pairs as measured. The sketch pays when
/// its model is below half the Gram path's (k may grow past its first value) and the Gram path
/// is not cheap anyway (>= 1e10 FLOP, ~0.1 s).
double gram_flops(int64_t rows, int64_t cols);
double sketch_flops(int64_t rows, int64_t cols, int64_t k);
bool cost_favours_sketch(int64_t rows, int64_t cols, int64_t k);

/// Whether the gram method accumulates A A^T (T x T) rather than A^T A under `options`.
bool uses_row_gram(int64_t rows, int64_t cols, const AnalyseOptions& options);

/// Peak bytes of `method` on a rows x cols matrix under `options` (exact_bytes, gram_bytes,
/// row_gram_bytes, or sketch_bytes at k = sketch_k).
double method_bytes(SvdMethod method, int64_t rows, int64_t cols, const AnalyseOptions& options,
                    int64_t sketch_k = 0);

/// What analysing one source takes, settled before anything large is allocated.
struct AnalysisPlan {
  contract::LogProbHeader header;  ///< the file's, or built from the given facts
  double eps = 0;
  std::string precision;  ///< float32 | float64 (the exact path's; gram accumulates in float64)
  SvdMethod method = SvdMethod::gram;
  bool row_gram = false;           ///< gram: A A^T (T x T) rather than A^T A (M x M)
  double bytes = 0;                ///< the method's peak estimate
  std::optional<InputKind> input;  ///< declared by --input or the file; nullopt: detect
  std::string input_by;            ///< "--input" | "attribute 'input'" | "" (detect)
  int64_t sketch_k = 0;    ///< sketch: the first k (bound + oversampling, at most min(T, M))
  int64_t sketch_cap = 0;  ///< sketch: the largest k, within min(T, M) and the memory limit
  /// --method auto took the Gram path and the sketch fits too: a Gram certificate that leaves a
  /// window (its rounding bound above tol's neighbours) hands over to the sketch, which resolves
  /// singular values to u ||A|| rather than sqrt(gamma_T) ||A||_F (sketch.h, residual_power.h),
  /// when the window's lower end plus the oversampling is at most a quarter of min(T, M) and the
  /// window is wider than 1% of its upper end (a narrower one is reported as it is, with a
  /// method_note saying so: the sketch's passes over a trained dump's flat tail at tol narrow it
  /// rarely and cost hours at WikiText-2's size)
  bool sketch_fallback = false;
};

/// How a front end spells an option in its messages: rank_analysis "--budget-gb 0", sbrank
/// "budget_gb=0". The key is the Python spelling (budget_gb); the command line's is --budget-gb.
struct OptionSpelling {
  bool command_line = true;
  std::string name(const std::string& key) const;
  std::string setting(const std::string& key, const std::string& value) const;
};

/// The checks both front ends make of what they were given, one function and one message per
/// check (throws sb::OptionError naming the option as `spell` spells it): input is logprobs,
/// logits or auto; budget_gb, when given, a finite number of GiB > 0; threads, when given, >= 1;
/// the model facts (check_model_facts) and the sketch's options (sketch.h, check_options).
void check_front_end_options(const AnalyseOptions& options, std::optional<double> budget_gb,
                             std::optional<int> threads, const OptionSpelling& spell);

/// Checks the options against `source` (facts, eps, precision, block rows) and picks the method;
/// refuses one whose memory estimate exceeds `limit` (a device backend's Gram path is not
/// counted against the host's memory), naming the bytes it needs, the limit and whether the
/// other method fits. Throws sb::OptionError / sb::InputError (common/errors.h), one line each.
AnalysisPlan plan_analysis(const MatrixSource& source, const AnalyseOptions& options,
                           const MemoryLimit& limit);

/// Streams the matrix and computes the report as `plan` says. Throws sb::InputError
/// "<file>: ..." for non-finite entries (with counts and the first position; -inf from a head
/// that outputs it makes the rank undefined).
contract::RankResult analyse(const MatrixSource& source, const AnalysisPlan& plan,
                             const AnalyseOptions& options);

/// open_matrix, plan_analysis under memory_limit(options), analyse. Throws sb::InputError
/// "<file>: ..." for invalid files (sb::FormatError: not an HDF5 / .npy matrix), missing facts of
/// a plain file, a method that does not fit in memory and non-finite entries; sb::OptionError for
/// an option out of range.
contract::RankResult analyse_file(const std::string& path, const AnalyseOptions& options);

}  // namespace sb::analysis
