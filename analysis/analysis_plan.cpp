// Planning an analysis: the cost and memory models, the choice of method and the plan's checks
// (analysis/analyse.h). Running the plan is analyse.cpp's.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "analysis/analyse.h"
#include "analysis/row_gram.h"
#include "analysis/sketch.h"
#include "common/byte_size.h"
#include "common/errors.h"
#include "common/head_spec.h"

namespace sb::analysis {
double gram_flops(int64_t rows, int64_t cols) {
  const double n = static_cast<double>(std::min(rows, cols));
  const double m = static_cast<double>(std::max(rows, cols));
  return n * n * m + 4 * n * n * n;
}

double sketch_flops(int64_t rows, int64_t cols, int64_t k) {
  return 12.0 * static_cast<double>(rows) * static_cast<double>(cols) * static_cast<double>(k);
}

bool cost_favours_sketch(int64_t rows, int64_t cols, int64_t k) {
  const double gram = gram_flops(rows, cols);
  return gram >= 1e10 && 2 * sketch_flops(rows, cols, k) < gram;
}

SvdMethod choose_method(int64_t rows, int64_t cols, double eps, const AnalyseOptions& o,
                        double limit_bytes, int64_t sketch_k, bool low_rank_expected) {
  if (o.method == "exact") return SvdMethod::exact;
  if (o.method == "gram") return SvdMethod::gram;
  if (o.method == "sketch") return SvdMethod::sketch;
  if (o.method != "auto")
    throw OptionError::for_setting("--method", "--method " + o.method,
                                   "exact, gram, sketch or auto");
  const double budget = o.budget_bytes.value_or(kDefaultBudgetBytes);
  const double tol_rel = 0.5 * std::sqrt(static_cast<double>(rows + cols + 1)) * eps;
  const bool gram_resolves = tol_rel > 10 * std::sqrt(kFloat64Eps);
  const double gram = method_bytes(SvdMethod::gram, rows, cols, o);
  const double exact = method_bytes(SvdMethod::exact, rows, cols, o);
  // The sketch resolves what the Gram path does (its H is a Gram matrix of A Q); its cost
  // follows k, so it pays where k is well below min(T, M).
  const bool sketch_pays = sketch_k > 0 && 2 * sketch_k <= std::min(rows, cols) && gram_resolves &&
                           method_bytes(SvdMethod::sketch, rows, cols, o, sketch_k) <= budget;
  if (o.verdict_only && sketch_pays) return SvdMethod::sketch;
  // By cost, where the whole spectrum is not asked for (--spectrum, --out: the curve's every
  // value).
  if (sketch_pays && low_rank_expected && !o.spectrum && cost_favours_sketch(rows, cols, sketch_k))
    return SvdMethod::sketch;
  if (gram_resolves && gram <= budget) return SvdMethod::gram;
  if (sketch_pays) return SvdMethod::sketch;
  if (exact <= budget) return SvdMethod::exact;
  if (limit_bytes > 0 && gram > limit_bytes && exact <= limit_bytes) return SvdMethod::exact;
  return SvdMethod::gram;
}

bool uses_row_gram(int64_t rows, int64_t cols, const AnalyseOptions& o) {
  if (o.gram != "auto" && o.gram != "rows" && o.gram != "columns")
    throw OptionError::for_setting("--gram", "--gram " + o.gram, "rows, columns or auto");
  if (o.gram == "rows" && o.backend.accumulate)
    throw OptionError::described("--gram",
                                 "--gram rows: the device's Gram path accumulates A^T A only");
  // Several processes split the rows, which A^T A adds up and A A^T does not.
  if (o.gram == "rows" && o.collective)
    throw OptionError::described(
        "--gram",
        "--gram rows with --mpi: the processes share the rows, and only A^T A is a sum over "
        "rows; use --gram columns or --method sketch");
  return o.gram == "rows" ||
         (o.gram == "auto" && rows < cols && !o.backend.accumulate && !o.collective);
}

double method_bytes(SvdMethod method, int64_t rows, int64_t cols, const AnalyseOptions& o,
                    int64_t sketch_k) {
  if (method == SvdMethod::exact) return exact_bytes(rows, cols, o.precision == "float64");
  if (method == SvdMethod::sketch)
    return sketch_bytes(rows, cols, std::max<int64_t>(sketch_k, 1), o.sketch.probes, o.block_rows);
  return uses_row_gram(rows, cols, o) ? row_gram_bytes(rows, cols)
                                      : gram_bytes(rows, cols, o.block_rows);
}

MemoryLimit memory_limit(const AnalyseOptions& options) {
  MemoryLimit limit = available_memory();
  if (options.budget_bytes && *options.budget_bytes < limit.bytes)
    limit = {*options.budget_bytes, "of --budget-gb"};
  return limit;
}

std::string OptionSpelling::name(const std::string& key) const {
  if (!command_line) return key;
  std::string option = "--" + key;
  for (char& c : option)
    if (c == '_') c = '-';
  return option;
}

std::string OptionSpelling::setting(const std::string& key, const std::string& value) const {
  return command_line ? name(key) + " " + value : key + "=" + value;
}

void check_front_end_options(const AnalyseOptions& o, std::optional<double> budget_gb,
                             std::optional<int> threads, const OptionSpelling& spell) {
  if (o.input != "logprobs" && o.input != "logits" && o.input != "auto")
    throw OptionError::for_setting(spell.name("input"), spell.setting("input", o.input),
                                   "logprobs, logits or auto");
  if (budget_gb && !(std::isfinite(*budget_gb) && *budget_gb > 0)) {
    char value[32];
    std::snprintf(value, sizeof value, "%g", *budget_gb);
    throw OptionError::for_setting(spell.name("budget_gb"), spell.setting("budget_gb", value),
                                   "a finite number of GiB > 0");
  }
  if (threads && *threads < 1)
    throw OptionError::for_setting(
        spell.name("threads"), spell.setting("threads", std::to_string(*threads)), "threads >= 1");
  check_model_facts(o.facts);
  check_options(o.sketch);
}

namespace {

/// The sketch's first k (above the bound) and its cap (min(T, M), --sketch-max-k, and the
/// largest k whose buffers fit the limit: sketch_bytes grows with k).
void plan_sketch(AnalysisPlan& plan, const AnalyseOptions& o, int64_t rows, int64_t cols,
                 int64_t bound, const MemoryLimit& limit) {
  const int64_t full = std::min(rows, cols);
  plan.sketch_k = std::clamp<int64_t>(bound + o.sketch.oversampling, 1, full);
  plan.sketch_cap = o.sketch.max_k > 0 ? std::min(o.sketch.max_k, full) : full;
  if (plan.sketch_cap < plan.sketch_k) plan.sketch_k = plan.sketch_cap;
  if (method_bytes(SvdMethod::sketch, rows, cols, o, plan.sketch_cap) <= limit.bytes) return;
  int64_t lo = plan.sketch_k, hi = plan.sketch_cap;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (method_bytes(SvdMethod::sketch, rows, cols, o, mid) <= limit.bytes)
      lo = mid;
    else
      hi = mid - 1;
  }
  plan.sketch_cap = lo;
}

/// The one line for a plan whose method does not fit the memory limit: what each method needs.
[[noreturn]] void refuse_memory(const std::string& path, const AnalysisPlan& plan,
                                const AnalyseOptions& options, const AnalyseOptions& o,
                                int64_t rows, int64_t cols, const MemoryLimit& limit) {
  if (plan.method == SvdMethod::sketch)
    throw InputError::described(
        path, "",
        path + ": --method sketch: k = " + std::to_string(plan.sketch_k) +
            " (the bound + oversampling, at most min(T, M)) needs " + format_bytes(plan.bytes) +
            " (8 M (2k + probes) bytes plus two row blocks and R's buffer), more than the " +
            format_bytes(limit.bytes) + " " + limit.what);
  const SvdMethod other = plan.method == SvdMethod::gram ? SvdMethod::exact : SvdMethod::gram;
  const double other_bytes = method_bytes(other, rows, cols, o);
  const bool rows_gram = uses_row_gram(rows, cols, o);
  auto needs = [&](SvdMethod m, double bytes) {
    const std::string mn = std::to_string(rows) + " x " + std::to_string(cols);
    if (m == SvdMethod::exact)
      return "the T x M = " + mn + " matrix in " + o.precision + " needs " + format_bytes(bytes) +
             " (with ?gesdd's workspace)";
    return rows_gram ? "the row Gram matrix A A^T of T = " + std::to_string(rows) + " needs " +
                           format_bytes(bytes) + " (8 T^2 bytes plus a column panel and workspace)"
                     : "the Gram matrix of M = " + std::to_string(cols) + " needs " +
                           format_bytes(bytes) + " (8 M^2 bytes plus workspace)";
  };
  const std::string over = ", more than the " + format_bytes(limit.bytes) + " " + limit.what;
  std::string why;
  if (options.method == "auto")
    why = "no method fits in memory: " +
          needs(SvdMethod::gram, method_bytes(SvdMethod::gram, rows, cols, o)) + ", " +
          needs(SvdMethod::exact, method_bytes(SvdMethod::exact, rows, cols, o)) +
          " and the sketch at k = " + std::to_string(plan.sketch_k) + " needs " +
          format_bytes(method_bytes(SvdMethod::sketch, rows, cols, o, plan.sketch_k)) + over;
  else
    why = "--method " + method_name(plan.method) + ": " + needs(plan.method, plan.bytes) + over +
          "; --method " + method_name(other) + " needs " + format_bytes(other_bytes) +
          (other_bytes <= limit.bytes ? "" : ", which does not fit either");
  throw InputError::described(path, "", path + ": " + why);
}

}  // namespace

AnalysisPlan plan_analysis(const MatrixSource& source, const AnalyseOptions& options,
                           const MemoryLimit& limit) {
  AnalysisPlan plan;
  plan.header = resolve_header(source, options.facts);
  plan.eps = parse_eps(options.eps.empty() ? plan.header.compute_dtype : options.eps);
  plan.precision = options.precision.empty() ? plan.header.compute_dtype : options.precision;
  if (plan.precision != "float32" && plan.precision != "float64")
    throw OptionError::for_setting("--precision", "--precision " + plan.precision,
                                   "float32 or float64");
  if (options.block_rows < 1)
    throw OptionError::for_setting(
        "--block-rows", "--block-rows " + std::to_string(options.block_rows), "block rows >= 1");
  AnalyseOptions o = options;
  o.precision = plan.precision;
  const int64_t rows = source.rows(), cols = source.cols();
  plan.input = declared_input(source, options.input);
  plan.input_by = declared_by(source, options.input);
  plan.row_gram = uses_row_gram(rows, cols, o);
  check_options(o.sketch);
  // The sketch starts above the larger bound (log-probabilities') when the input is not declared.
  const int64_t bound = rank_bound(plan.header, plan.input.value_or(InputKind::logprobs));
  plan_sketch(plan, o, rows, cols, bound, limit);
  // A head whose rank Theorem 2 bounds below min(T, M): the sketch's first k is likely its last.
  bool low_rank_expected = false;
  try {
    low_rank_expected = !plan.header.head.empty() &&
                        rank_bounded(head_kind_from_name(plan.header.head)) &&
                        bound + o.sketch.oversampling < std::min(rows, cols);
  } catch (const std::exception&) {  // a head name the registry does not know: no expectation
  }
  plan.method =
      choose_method(rows, cols, plan.eps, o, limit.bytes, plan.sketch_k, low_rank_expected);
  if (o.collective && plan.method == SvdMethod::exact) {
    // The exact SVD needs the whole matrix in one process.
    if (o.method == "exact")
      throw OptionError::described(
          "--method",
          "--method exact with --mpi: the exact SVD holds the whole matrix in one process; use "
          "--method gram or sketch");
    plan.method = method_bytes(SvdMethod::sketch, rows, cols, o, plan.sketch_k) <= limit.bytes
                      ? SvdMethod::sketch
                      : SvdMethod::gram;
  }
  plan.row_gram = plan.row_gram && plan.method == SvdMethod::gram;
  plan.bytes = method_bytes(plan.method, rows, cols, o, plan.sketch_k);
  plan.sketch_fallback =
      o.method == "auto" && plan.method == SvdMethod::gram && !o.collective &&
      !options.backend.accumulate && plan.sketch_k > 0 &&
      method_bytes(SvdMethod::sketch, rows, cols, o, plan.sketch_k) <= limit.bytes;
  // A device backend accumulates and solves G there: the host holds one block at a time.
  const bool on_host = !(plan.method == SvdMethod::gram && options.backend.accumulate);
  if (on_host && plan.bytes > limit.bytes)
    refuse_memory(source.path(), plan, options, o, rows, cols, limit);
  return plan;
}

}  // namespace sb::analysis
