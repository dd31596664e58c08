#include "analysis/input_kind.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "analysis/fast_exp.h"
#include "common/errors.h"
#include "common/head_spec.h"
#include "common/vector_clones.h"

namespace sb::analysis {

std::string input_kind_name(InputKind kind) {
  return kind == InputKind::logprobs ? "logprobs" : "logits";
}

int64_t rank_bound(const contract::LogProbHeader& h, InputKind kind) {
  const HeadSpec spec = HeadSpec::parse(h.head_spec.empty() ? h.head : h.head_spec);
  const FinalNorm norm =
      h.final_norm.empty() ? FinalNorm::none : final_norm_from_name(h.final_norm);
  return head_rank_bound(spec, h.d, h.bias, /*normaliser=*/kind == InputKind::logprobs, norm);
}

std::optional<InputKind> declared_input(const MatrixSource& source, const std::string& option) {
  if (option != "logprobs" && option != "logits" && option != "auto")
    throw OptionError::for_setting("--input", "--input " + option, "logprobs, logits or auto");
  const std::string attribute = source.declared_input();
  if (option != "auto" && !attribute.empty() && attribute != option)
    throw InputError::described(source.path(), "attribute 'input'",
                                source.path() + ": --input " + option +
                                    " contradicts the file's attribute 'input' = " + attribute);
  const std::string kind = option != "auto" ? option : attribute;
  if (kind.empty()) return std::nullopt;
  return kind == "logprobs" ? InputKind::logprobs : InputKind::logits;
}

std::string declared_by(const MatrixSource& source, const std::string& option) {
  if (option != "auto") return "--input";
  return source.declared_input().empty() ? "" : "attribute 'input'";
}

std::string tolerance_text(double tolerance) {
  if (tolerance == kNormalisedTolerance) return "1e-3";
  char text[32];
  std::snprintf(text, sizeof text, "%.2g", tolerance);
  return text;
}

NormalisationCheck::NormalisationCheck(const MatrixSource& inner, bool must_normalise,
                                       std::string declared_by, double tolerance)
    : ForwardingSource(inner),
      must_normalise_(must_normalise),
      declared_by_(std::move(declared_by)),
      tolerance_(tolerance) {}

namespace {

// The sum of exp(row[j] - top) for float rows: exp_nonpositive (fast_exp.h, relative error below
// 3e-7) in 8 float lanes over chunks of 256 entries, each chunk's lanes added into a double. A
// lane adds at most 32 terms, so the float sums are within 32 u_32 = 2e-6 (relative), and the
// logsumexp within about 2.3e-6 in all: far inside kNormalisedTolerance (1e-3).
SB_VECTOR_CLONES
double sum_exp(const float* row, int64_t m, float top) {
  constexpr int64_t kLanes = 8, kChunk = 256;
  double sum = 0;
  int64_t j = 0;
  for (; j + kChunk <= m; j += kChunk) {
    float e[kChunk], lane[kLanes] = {};
    for (int64_t i = 0; i < kChunk; ++i) e[i] = exp_nonpositive(row[j + i] - top);
    for (int64_t i = 0; i < kChunk; i += kLanes)
      for (int64_t l = 0; l < kLanes; ++l) lane[l] += e[i + l];
    for (const float v : lane) sum += static_cast<double>(v);
  }
  for (; j < m; ++j) sum += static_cast<double>(exp_nonpositive(row[j] - top));
  return sum;
}

double sum_exp(const double* row, int64_t m, double top) {
  double sum = 0;
  for (int64_t j = 0; j < m; ++j) sum += std::exp(row[j] - top);
  return sum;
}

// A float row's largest entry, in 16 lanes (a plain max reduction does not vectorise without
// -ffast-math); false when an entry is NaN or +-inf (exponent bits all set).
SB_VECTOR_CLONES
bool row_top(const float* row, int64_t m, float* top) {
  constexpr int64_t kLanes = 16;
  float hi[kLanes];
  int32_t special[kLanes] = {};
  std::fill(hi, hi + kLanes, -std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + kLanes <= m; j += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) {
      const float v = row[j + l];
      int32_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      special[l] |= static_cast<int32_t>((bits & 0x7f800000) == 0x7f800000);
      hi[l] = hi[l] > v ? hi[l] : v;
    }
  bool finite = true;
  float best = -std::numeric_limits<float>::infinity();
  for (int64_t l = 0; l < kLanes; ++l) {
    finite &= special[l] == 0;
    best = std::max(best, hi[l]);
  }
  for (; j < m; ++j) {
    finite &= std::isfinite(row[j]);
    best = std::max(best, row[j]);
  }
  *top = best;
  return finite;
}

bool row_top(const double* row, int64_t m, double* top) {
  double best = -std::numeric_limits<double>::infinity();
  bool finite = true;
  for (int64_t j = 0; j < m; ++j) {
    finite &= std::isfinite(row[j]);
    best = std::max(best, row[j]);
  }
  *top = best;
  return finite;
}

// One row's logsumexp; NaN when the row holds a non-finite entry (the finite scan refuses those).
template <class T>
double row_logsumexp(const T* row, int64_t m) {
  T top;
  if (!row_top(row, m, &top)) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(top) + std::log(sum_exp(row, m, top));
}

// Blocks this large are shared with a second thread: the check is the first pass's largest
// cost beside the read (an exponential per entry).
constexpr int64_t kSplitEntries = int64_t{1} << 20;

}  // namespace

template <class T>
void NormalisationCheck::check(const T* rows, int64_t begin, int64_t count) const {
  const int64_t m = cols();
  // Only rows not seen before: the row Gram reads every row once per column panel.
  const int64_t first = std::max(begin, checked_), n = begin + count - first;
  if (n <= 0) return;
  std::vector<double> lse(static_cast<size_t>(n));
  auto compute = [&](int64_t from, int64_t to) {
    for (int64_t r = from; r < to; ++r)
      lse[static_cast<size_t>(r)] = row_logsumexp(rows + (first - begin + r) * m, m);
  };
  if (n >= 2 && n * m >= kSplitEntries && std::thread::hardware_concurrency() > 1) {
    std::thread half(compute, n / 2, n);
    compute(0, n / 2);
    half.join();
  } else {
    compute(0, n);
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = first + i;
    const double value = lse[static_cast<size_t>(i)];
    checked_ = r + 1;
    if (std::isnan(value)) continue;  // the non-finite scan refuses the file
    max_abs_lse_ = std::max(max_abs_lse_, std::abs(value));
    if (std::abs(value) <= tolerance_ || first_bad_row_ >= 0) continue;
    first_bad_row_ = r;
    first_bad_lse_ = value;
    if (must_normalise_ && !deferred_) fail(r, value);
  }
}

void NormalisationCheck::fail(int64_t row, double lse) const {
  char text[64];
  std::snprintf(text, sizeof text, "%.6g", lse);
  const std::string tol = tolerance_text(tolerance_);
  throw InputError::described(path(), data_name(),
                              path() + ": declared log-probabilities (" + declared_by_ +
                                  "), but row " + std::to_string(row) + " has logsumexp " + text +
                                  ", not 0 (within " + tol +
                                  "): the rows are not normalised; for logits "
                                  "use --input logits");
}

void NormalisationCheck::merge(int64_t first_bad_row, double first_bad_lse, double max_abs_lse) {
  first_bad_row_ = first_bad_row;
  first_bad_lse_ = first_bad_lse;
  max_abs_lse_ = max_abs_lse;
  if (must_normalise_ && first_bad_row_ >= 0) fail(first_bad_row_, first_bad_lse_);
}

void NormalisationCheck::read_rows(int64_t begin, int64_t count, float* out) const {
  inner().read_rows(begin, count, out);
  check(out, begin, count);
}

void NormalisationCheck::read_rows(int64_t begin, int64_t count, double* out) const {
  inner().read_rows(begin, count, out);
  check(out, begin, count);
}

InputChoice settle_input(const std::optional<InputKind>& declared, const std::string& by,
                         const NormalisationCheck& check) {
  if (declared) return {*declared, by};
  return {check.normalised() ? InputKind::logprobs : InputKind::logits, "detected"};
}

}  // namespace sb::analysis
