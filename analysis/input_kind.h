#pragma once
// What the rows of the matrix hold, and the rank bound that follows (--input).
//
//   logits:    Z = H W^T + 1 b^T (T x M; H the T x d decoder inputs, W the M x d decoder, b its
//              bias), so rank(Z) <= d + bias: d from H W^T, one more for the bias's 1 b^T.
//   logprobs:  L = Z - l 1^T with l_t = logsumexp(z_t) (log-softmax), so rank(L) <= d + 1 + bias:
//              the rows' normaliser adds the direction 1 (Theorem 2 of Kanai et al., "Sigsoftmax:
//              Reanalysis of the Softmax Bottleneck", NeurIPS 2018; Yang et al., "Breaking the
//              Softmax Bottleneck", ICLR 2018, for the d + 1 without a bias).
//
// Detection: a row of log-probabilities has logsumexp 0. The check computes each row's
// logsumexp in float64 from the stored values (max + log sum exp(x - max)), so its only error is
// the storage's: float32 rounds each log p_i by at most |log p_i| u32 (u32 = 2^-24), which moves
// p_i by a factor exp(+-|log p_i| u32), hence the sum by at most max_i |log p_i| u32 (first
// order) = 2e-6 for log p_i down to -30 (and terms below -30 weigh less than e^-30 each).
// kNormalisedTolerance = 1e-3 is far above that and far below the logsumexp of logits
// (|lse| < 1e-3 would need logits normalised to 1e-3 by chance). Rows with non-finite entries
// are left to the non-finite scan (analyse.h), which refuses them.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "analysis/matrix_source.h"

namespace sb::analysis {

enum class InputKind { logprobs, logits };
std::string input_kind_name(InputKind kind);  ///< "logprobs" | "logits"

inline constexpr double kNormalisedTolerance = 1e-3;

/// The tolerance for data stored at a coarser precision than float32 (the eps the analysis uses:
/// float16 2^-10, bfloat16 2^-7, as sbrank passes it). The same argument as above with u = eps / 2
/// in place of u32: the sum moves by at most max_i |log p_i| eps / 2 = 15 eps for log p_i down to
/// -30, so 64 eps holds it with room (bfloat16: 0.5; logits' logsumexp is ~ln M away from 0), and
/// never less than kNormalisedTolerance.
inline double normalised_tolerance(double eps) { return std::max(kNormalisedTolerance, 64 * eps); }
/// The tolerance as the messages print it: "1e-3" for the float32 one, else two digits.
std::string tolerance_text(double tolerance);

/// The bound on the rank of the header's head (common/head_spec.h, head_rank_bound, which derives
/// it): d + bias for logits, d + 1 + bias for log-probabilities, plus one per tail cluster for
/// the adaptive heads (their spelling: attribute 'head_spec', else the name's defaults); with a
/// final LayerNorm (attribute 'final_norm' or --final-norm) d - 1 in place of d and the bias
/// always counted: d + 1 for log-probabilities, d for logits.
int64_t rank_bound(const contract::LogProbHeader& h, InputKind kind);

/// --input (logprobs | logits | auto) against the file's attribute 'input': the declared kind,
/// or nullopt (auto on a file that says nothing: detect). Throws sb::OptionError for
/// another value ("--input X: expected logprobs, logits or auto") and sb::InputError
/// "<file>: --input X contradicts the file's attribute 'input' = Y" when they differ.
std::optional<InputKind> declared_input(const MatrixSource& source, const std::string& option);
/// Names where a declared kind came from: "--input" or "attribute 'input'".
std::string declared_by(const MatrixSource& source, const std::string& option);

/// A MatrixSource that computes each row's logsumexp as the rows stream past (rows are read in
/// order, once or in repeated passes; each row is checked the first time). With must_normalise
/// (the rows are declared log-probabilities), the first row whose |logsumexp| exceeds
/// kNormalisedTolerance throws sb::InputError "<file>: declared log-probabilities (<by>), but
/// row R has logsumexp X, not 0 (within 1e-3): ...".
class NormalisationCheck final : public ForwardingSource {
 public:
  NormalisationCheck(const MatrixSource& inner, bool must_normalise, std::string declared_by,
                     double tolerance = kNormalisedTolerance);
  double tolerance() const { return tolerance_; }
  void read_rows(int64_t begin, int64_t count, float* out) const override;
  void read_rows(int64_t begin, int64_t count, double* out) const override;

  /// Every row checked so far normalises (|logsumexp| <= tolerance()).
  bool normalised() const { return first_bad_row_ < 0; }
  int64_t rows_checked() const { return checked_; }
  int64_t first_bad_row() const { return first_bad_row_; }
  double first_bad_logsumexp() const { return first_bad_lse_; }
  double max_abs_logsumexp() const { return max_abs_lse_; }
  /// Other processes' findings (collective.h): the whole matrix's first non-normalised row (-1:
  /// none), its logsumexp, the largest |logsumexp|. Then throws as a check that read every row
  /// would have, when the rows must normalise and one does not.
  void merge(int64_t first_bad_row, double first_bad_lse, double max_abs_lse);
  /// Several processes: a bad row is only recorded while the rows stream, and merge() throws, so
  /// that no process leaves the others waiting at the next reduction.
  void defer_failure() { deferred_ = true; }

 private:
  [[noreturn]] void fail(int64_t row, double lse) const;
  template <class T>
  void check(const T* rows, int64_t begin, int64_t count) const;

  bool must_normalise_;
  bool deferred_ = false;
  std::string declared_by_;
  double tolerance_ = kNormalisedTolerance;
  // Rows are read by one thread at a time (the overlapped reader hands over through a future).
  mutable int64_t checked_ = 0, first_bad_row_ = -1;
  mutable double first_bad_lse_ = 0, max_abs_lse_ = 0;
};

/// What the analysis took the rows for, and why.
struct InputChoice {
  InputKind kind = InputKind::logprobs;
  std::string from;  ///< "--input", "attribute 'input'" or "detected"
};
/// The declared kind, else the detected one (log-probabilities when every row normalises).
InputChoice settle_input(const std::optional<InputKind>& declared, const std::string& by,
                         const NormalisationCheck& check);

}  // namespace sb::analysis
