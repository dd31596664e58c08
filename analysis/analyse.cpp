#include "analysis/analyse.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

#include "analysis/collective.h"
#include "analysis/rank_certificate.h"
#include "analysis/row_gram.h"
#include "analysis/sketch.h"
#include "common/blas_core.h"
#include "common/byte_size.h"
#include "common/duration.h"
#include "common/errors.h"
#include "common/head_spec.h"

namespace sb::analysis {
namespace {

// Relative resolution of each method: gram squares the spectrum, so float64 round-off in G
// (eps64 lambda_max) hides sigma below sqrt(eps64) sigma_max; a backward-stable SVD resolves
// down to about its precision's eps times sigma_max.
double resolution_rel(SvdMethod method, bool float64) {
  if (method == SvdMethod::gram) return std::sqrt(kFloat64Eps);
  return float64 ? kFloat64Eps : kFloat32Eps;
}

// Turns the spectrum's per-block callbacks into throttled progress lines for options.on_progress.
// order: the Gram matrix's (M, or T for the row Gram); cols: the matrix's M.
Progress progress_lines(const AnalyseOptions& o, SvdMethod method, bool float64, int64_t cols,
                        int64_t order) {
  if (!o.on_progress && !o.poll) return {};
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  return [&o, start, last = start, name = method_name(method), method, float64, cols, order](
             int64_t done, int64_t total) mutable {
    if (o.poll) o.poll();  // every block, and before the solve (done == total)
    if (!o.on_progress) return;
    const auto now = clock::now();
    const double elapsed = std::chrono::duration<double>(now - start).count();
    const bool final = done == total;
    if (!final && std::chrono::duration<double>(now - last).count() < o.progress_seconds) return;
    last = now;
    char line[160];
    std::snprintf(line, sizeof line, "%s: %lld / %lld rows (%.1f%%), %s", name.c_str(),
                  static_cast<long long>(done), static_cast<long long>(total),
                  100.0 * static_cast<double>(done) / static_cast<double>(total),
                  sb::format_duration(elapsed).c_str());
    std::string text = line;
    if (!final) {
      const double eta = elapsed * static_cast<double>(total - done) / static_cast<double>(done);
      text += ", ETA " + sb::format_duration(eta);
    }
    o.on_progress(text);
    if (!final) return;
    const std::string gram =
        " of the " + std::to_string(order) + " x " + std::to_string(order) + " Gram matrix";
    const std::string shape =
        method == SvdMethod::gram
            ? o.spectrum
                  ? "eigenvalues" + gram + " (one LAPACK call)"
                  : "sigma_max and inertia counts" + gram + " (power iteration, Cholesky / LDL^T)"
            : std::string(float64 ? "dgesdd" : "sgesdd") + " on the " + std::to_string(total) +
                  " x " + std::to_string(cols) + " matrix (one LAPACK call)";
    o.on_progress(name + ": " + shape + " ...");
  };
}

// The sketch's progress: per pass, rows read with an ETA for the pass, then the pass's window.
SketchProgress sketch_progress(const AnalyseOptions& o, int64_t rows) {
  if (!o.on_progress && !o.poll) return {};
  using clock = std::chrono::steady_clock;
  struct State {
    clock::time_point start, last;
    int pass = 0;
  };
  auto state = std::make_shared<State>();
  SketchProgress p;
  p.rows = [&o, state, rows](int pass, int64_t k, int64_t done, int64_t total) {
    if (o.poll) o.poll();
    if (!o.on_progress) return;
    const auto now = clock::now();
    if (pass != state->pass) *state = {now, now, pass};
    const double elapsed = std::chrono::duration<double>(now - state->start).count();
    if (done != total &&
        std::chrono::duration<double>(now - state->last).count() < o.progress_seconds)
      return;
    state->last = now;
    char line[200];
    std::snprintf(line, sizeof line, "sketch: pass %d (k = %lld): %lld / %lld rows (%.1f%%), %s",
                  pass, static_cast<long long>(k), static_cast<long long>(done),
                  static_cast<long long>(rows), 100.0 * double(done) / double(rows),
                  sb::format_duration(elapsed).c_str());
    std::string text = line;
    if (done != total)
      text += ", ETA " + sb::format_duration(elapsed * double(total - done) / double(done));
    o.on_progress(text);
  };
  p.note = [&o](const std::string& line) {
    if (o.on_progress) o.on_progress("sketch: " + line);
  };
  p.pass_done = [&o](const SketchPass& s) {
    if (!o.on_progress) return;
    char line[240], kind[64] = "";
    if (s.start) {
      std::snprintf(line, sizeof line,
                    "sketch: pass %d (k = %lld, sparse start) in %s: %s, nominal rank %lld (no "
                    "bounds from a start)",
                    s.pass, static_cast<long long>(s.k), sb::format_duration(s.seconds).c_str(),
                    s.range ? "A Omega and the probes' products kept" : "next basis formed",
                    static_cast<long long>(s.rank));
      o.on_progress(line);
      return;
    }
    if (s.finish && s.finish[0] == 'i')
      std::snprintf(kind, sizeof kind, ", float64 finish: one-sided iteration");
    else if (s.finish)
      std::snprintf(kind, sizeof kind, ", float64 finish: %s on c = %lld",
                    s.finish[0] == 'c' ? "lower bounds" : "power step",
                    static_cast<long long>(s.count));
    else if (s.power > 0 && s.count == s.k)
      std::snprintf(kind, sizeof kind, ", power step %d on the basis", s.power);
    else if (s.power > 0)
      std::snprintf(kind, sizeof kind, ", power step %d on c = %lld", s.power,
                    static_cast<long long>(s.count));
    else if (s.check)
      std::snprintf(kind, sizeof kind, s.range ? ", probes off the start's range" : ", check");
    std::snprintf(line, sizeof line,
                  "sketch: pass %d (k = %lld%s) in %s: rank %lld, window [%lld, %lld], "
                  "residual bound %.3g (tol %.3g)%s",
                  s.pass, static_cast<long long>(s.k), kind, sb::format_duration(s.seconds).c_str(),
                  static_cast<long long>(s.rank), static_cast<long long>(s.rank_min),
                  static_cast<long long>(s.rank_max), s.residual, s.tol,
                  s.rank_min == s.rank_max ? ": certified" : "");
    o.on_progress(line);
  };
  return p;
}

}  // namespace

contract::RankResult analyse_file(const std::string& path, const AnalyseOptions& options) {
  const auto source = open_matrix(path);
  return analyse(*source, plan_analysis(*source, options, memory_limit(options)), options);
}

namespace {

/// The sketch's settings from the plan and the options (analysis/sketch.h).
SketchOptions sketch_options(const AnalysisPlan& plan, const AnalyseOptions& options, int64_t rows,
                             int64_t row_offset) {
  SketchOptions so = options.sketch;  // the user's settings; the rest from the plan
  so.bound = rank_bound(plan.header, plan.input.value_or(InputKind::logprobs));
  so.theorem2_bounded = rank_bounded(head_kind_from_name(plan.header.head));
  so.eps = plan.eps;
  so.initial_k = plan.sketch_k;
  so.max_k = plan.sketch_cap;
  so.seed = options.seed;
  so.block_rows = options.block_rows;
  so.verdict_only = options.verdict_only;
  so.overlap = options.overlap_read;
  so.collective = options.collective;
  so.total_rows = rows;
  so.row_offset = row_offset;
  return so;
}

/// What one pass of the method over the rows leaves: the singular values (exact), the Gram
/// matrix (gram) or the sketch's result, with the finiteness scan and the timings.
struct Streamed {
  std::vector<double> sigma;
  GramMatrix gram;
  SketchResult sketched;
  FiniteScan scan;
  SpectrumTiming timing;
};

/// Streams the rows of `source` (this process's share) through the plan's method. Rows arrive
/// in the stored dtype: float64 data is never rounded to float32 on the way.
Streamed stream_rows(const MatrixSource& source, const AnalysisPlan& plan,
                     const AnalyseOptions& options, int64_t rows, int64_t row_offset) {
  Streamed st;
  const SvdMethod method = plan.method;
  const bool f64 = plan.precision == "float64";
  const int64_t local_rows = source.rows(), cols = source.cols();
  const Progress progress = progress_lines(options, method, f64, cols, plan.row_gram ? rows : cols);
  const SketchOptions so = sketch_options(plan, options, rows, row_offset);
  auto stream = [&](const auto& read) {
    if (method == SvdMethod::sketch)
      st.sketched = sketch_rank(read, local_rows, cols, so, &st.scan, &st.timing,
                                sketch_progress(options, rows));
    else if (method == SvdMethod::exact)
      st.sigma = singular_values_exact(read, local_rows, cols, f64, &st.scan, &st.timing, progress);
    else if (plan.row_gram)
      st.gram = accumulate_row_gram(read, local_rows, cols, options.panel_cols, &st.scan,
                                    &st.timing, progress);
    else
      st.gram = accumulate_gram(read, local_rows, cols, options.block_rows, &st.scan, &st.timing,
                                progress, options.overlap_read);
  };
  if (method == SvdMethod::gram && options.backend.accumulate)
    st.gram =
        options.backend.accumulate(source, options.block_rows, &st.scan, &st.timing, progress);
  else if (source.float64())
    stream(RowReader64(
        [&](int64_t begin, int64_t count, double* out) { source.read_rows(begin, count, out); }));
  else
    stream(RowReader(
        [&](int64_t begin, int64_t count, float* out) { source.read_rows(begin, count, out); }));
  return st;
}

/// The meeting point after the stream (collective.h): every process learns of a NaN or a
/// non-normalised row in any share (and all throw the same line), then the partial Gram
/// matrices are added on process 0.
void meet(Streamed& st, const AnalysisPlan& plan, const Collective& coll,
          NormalisationCheck& checked, const RowShare& share, int64_t rows) {
  if (plan.method != SvdMethod::sketch) reduce_scan(st.scan, coll, share.first());
  reduce_normalisation(checked, coll);
  if (plan.method != SvdMethod::gram || !st.scan.clean()) return;
  st.gram.rows = rows;
  st.gram.same_sign = reduce_same_sign(share.min_seen(), share.max_seen(), coll);
  const auto reduce_start = std::chrono::steady_clock::now();
  coll.reduce_sum_to_root(st.gram.g.data(), static_cast<int64_t>(st.gram.g.size()));
  // The processes' sum adds roundings in an order this process does not see: the certificate
  // falls back to the whole dot product's gamma (gram_block.h).
  if (coll.size > 1) st.gram.chain = 0;
  st.timing.reduce += seconds_since(reduce_start);
}

/// Throws the one line for a matrix that holds NaN or inf, naming why for -inf.
void refuse_non_finite(const FiniteScan& scan, const std::string& path,
                       const std::string& data_name, const std::string& head) {
  if (scan.clean()) return;
  std::string why = path + ": " + data_name + " holds " + scan.describe();
  if (scan.neg_inf > 0 && may_output_neg_inf(head_kind_from_name(head)))
    why += " (head '" + head +
           "' outputs -inf off its support, so the numerical rank of the log-output matrix is "
           "undefined)";
  else if (scan.neg_inf > 0)
    why += " (-inf log-probabilities make the rank undefined)";
  throw InputError::described(path, data_name, why);
}

/// The input kind the rows were read as, and, when it was detected, the note saying how.
InputChoice describe_input(contract::RankResult& res, const AnalysisPlan& plan,
                           const NormalisationCheck& checked) {
  const InputChoice input = settle_input(plan.input, plan.input_by, checked);
  res.input = input_kind_name(input.kind);
  res.input_from = input.from;
  if (input.from != "detected") return input;
  char text[200];
  if (checked.normalised())
    std::snprintf(text, sizeof text,
                  "every row's logsumexp is within %s of 0 (at most %.2g): read as "
                  "log-probabilities",
                  tolerance_text(checked.tolerance()).c_str(), checked.max_abs_logsumexp());
  else
    std::snprintf(text, sizeof text, "row %lld's logsumexp is %.4g, not 0: read as logits",
                  static_cast<long long>(checked.first_bad_row()), checked.first_bad_logsumexp());
  res.input_note = std::string(text) + " (no 'input' stated; --input overrides)";
  return input;
}

/// The report from what the stream left: the sketch's, the inertia counts of --rank-only, or the
/// Numerical Recipes rank of the singular values (the Gram path's certified from its spectrum).
void solve(contract::RankResult& res, Streamed& st, const AnalysisPlan& plan,
           const AnalyseOptions& options, int64_t bound, int64_t rows, int64_t cols) {
  const SvdMethod method = plan.method;
  const bool f64 = plan.precision == "float64",
             bounded = rank_bounded(head_kind_from_name(plan.header.head));
  const bool same_sign = st.gram.same_sign;
  // The Gram matrix's order and the length of its entries' dot products (rank_certificate.h):
  // M and T for A^T A, T and M for A A^T.
  const int64_t order = plan.row_gram ? rows : cols, inner = plan.row_gram ? cols : rows;
  const int64_t chain = st.gram.chain;  // gram_block.h; 0 (gamma of the whole inner product)
  if (method == SvdMethod::sketch) {
    res.precision = "float64";
    res.solver = "subspace_iteration+dsyevd";
    res.report = st.sketched.report;
    apply_bound(res.report, st.sketched, bound, rows, cols);
    res.singular_values = std::move(st.sketched.sigma);
    return;
  }
  if (method == SvdMethod::gram && !options.spectrum) {
    // --rank-only: inertia counts on G instead of its eigenvalues (rank_certificate.h).
    const auto solve_start = std::chrono::steady_clock::now();
    InertiaCounter counter(std::move(st.gram.g), order);
    res.report = rank_by_inertia(counter, inner, plan.eps, same_sign, bound, bounded, &res.solver,
                                 &st.timing.sigma_max, chain);
    st.timing.solve += seconds_since(solve_start);
    return;
  }
  // The host's eigensolver works on G's upper triangle while the counter keeps G in the lower
  // one, for the inertia counts that may narrow the spectrum's window (narrow_by_inertia).
  std::optional<InertiaCounter> counter;
  if (method == SvdMethod::gram) {
    if (options.backend.singular_values) {
      res.solver = options.backend.solver;
      st.sigma = options.backend.singular_values(std::move(st.gram), &st.timing);
    } else {
      res.solver = eigen_solver_name(EigenSolver::automatic, order);
      counter.emplace(std::move(st.gram.g), order);
      st.sigma = counter->with_upper([&](double* g, int64_t n) {
        return gram_singular_values(g, n, std::min(rows, cols), EigenSolver::automatic, &st.timing);
      });
    }
  } else {
    res.solver = f64 ? "dgesdd" : "sgesdd";
  }
  res.report =
      numerical_rank(st.sigma, rows, cols, plan.eps, bound, bounded, resolution_rel(method, f64));
  if (method == SvdMethod::gram) {
    certify_from_spectrum(res.report, st.sigma, inner, order, same_sign, chain);
    if (counter && !res.report.certified) {
      const auto start = std::chrono::steady_clock::now();
      const std::string routes = narrow_by_inertia(res.report, *counter, inner, same_sign, chain);
      if (!routes.empty()) res.solver += "+" + routes;
      st.timing.solve += seconds_since(start);
    }
  }
  res.singular_values = std::move(st.sigma);
}

/// A Gram window narrow enough to report as it is: rank_max - rank_min at most 1% of rank_max.
bool window_kept(const contract::RankReport& r) {
  return 100 * (r.rank_max - r.rank_min) <= r.rank_max;
}

/// auto's second try (AnalysisPlan::sketch_fallback): the sketch over the same source, its time
/// added to the Gram path's, and why in one line.
contract::RankResult sketch_after_gram(const MatrixSource& src, const AnalysisPlan& plan,
                                       const AnalyseOptions& options,
                                       const contract::RankResult& gram) {
  AnalysisPlan sketch = plan;
  sketch.method = SvdMethod::sketch;
  sketch.row_gram = false;
  sketch.sketch_fallback = false;
  const auto& g = gram.report;
  // The count is at most the Gram path's rank_max: the first basis starts above it, as
  // plan_sketch's starts above the bound (k0 = rank_max + oversampling), within the cap and half
  // of min(T, M) (choose_method's rule), never below the plan's k0. One doubling at most: past
  // 2 k0 no count is left to find (the window's upper end is the Gram path's), and a wider basis
  // only chases the residual of a flat tail below tol, which a 5000 x 10000 float32 dump of a
  // trained sigsoftmax LM kept at 3 to 7 tol up to k = 3592.
  const int64_t half = std::min(src.rows(), src.cols()) / 2;
  sketch.sketch_k = std::max(
      plan.sketch_k, std::min({g.rank_max + options.sketch.oversampling, plan.sketch_cap, half}));
  sketch.sketch_cap = std::max(sketch.sketch_k, std::min(plan.sketch_cap, 2 * sketch.sketch_k));
  sketch.bytes = method_bytes(SvdMethod::sketch, src.rows(), src.cols(), options, sketch.sketch_k);
  char why[300];
  std::snprintf(why, sizeof why,
                "auto: the Gram path left rank %lld..%lld in %.1f s (its rounding bound %.3g "
                "against tol %.3g): the sketch",
                static_cast<long long>(g.rank_min), static_cast<long long>(g.rank_max),
                gram.seconds, std::sqrt(std::max(g.gram_error + g.solver_error, 0.0)), g.tol);
  if (options.on_progress) options.on_progress(why);
  contract::RankResult res = analyse(src, sketch, options);
  res.seconds += gram.seconds;
  res.method_note = why;
  const auto s = res.report;
  if (narrow_window(res.report, g) &&
      (s.rank_min != res.report.rank_min || s.rank_max != res.report.rank_max)) {
    std::snprintf(why, sizeof why, "; the window is both's: sketch %lld..%lld, Gram %lld..%lld",
                  static_cast<long long>(s.rank_min), static_cast<long long>(s.rank_max),
                  static_cast<long long>(g.rank_min), static_cast<long long>(g.rank_max));
    res.method_note += why;
  }
  return res;
}

}  // namespace

contract::RankResult analyse(const MatrixSource& src, const AnalysisPlan& plan,
                             const AnalyseOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  // Every row's logsumexp as it streams past: declared log-probabilities must normalise, and
  // a file that says nothing is taken for log-probabilities when every row does (input_kind.h).
  NormalisationCheck checked(src, plan.input == InputKind::logprobs, plan.input_by,
                             normalised_tolerance(plan.eps));
  const MatrixSource* source = &checked;
  // Several processes (collective.h): this one streams its share of the rows.
  const Collective* coll = options.collective;
  std::optional<RowShare> share;
  if (coll) {
    const auto [first, count] = row_share(src.rows(), coll->rank, coll->size);
    share.emplace(checked, first, count);
    source = &*share;
    checked.defer_failure();
  }
  const int64_t rows = src.rows(), cols = src.cols();
  Streamed st = stream_rows(*source, plan, options, rows, share ? share->first() : 0);
  if (coll) meet(st, plan, *coll, checked, *share, rows);
  refuse_non_finite(st.scan, src.path(), source->data_name(), plan.header.head);

  contract::RankResult res;
  res.processes = coll ? coll->size : 1;
  // Process 0 alone solves and reports; the others' part ends with the reduction.
  if (coll && !coll->root() && plan.method == SvdMethod::gram) return res;
  res.source = src.path();
  res.header = plan.header;
  res.method = method_name(plan.method);
  res.precision = plan.method == SvdMethod::exact ? plan.precision : "float64";
  if (plan.method == SvdMethod::gram) res.gram = plan.row_gram ? "rows" : "columns";
  const InputChoice input = describe_input(res, plan, checked);
  solve(res, st, plan, options, rank_bound(plan.header, input.kind), rows, cols);
  limit_by_precision(res.report, res.singular_values);
  res.timing = st.timing;
  const auto blas = blas::blas_info();
  res.blas_threads = blas.threads;
  res.blas_library = blas.library;
  res.blas_core = blas.core;
  res.memory_estimate_mib = plan.bytes / double(1 << 20);
  res.peak_rss_mib = peak_rss_mib();
  res.seconds = seconds_since(start);
  // The sketch pays where its basis stays under half of min(T, M) (choose_method's rule); k grows
  // by doubling to about twice the count, so the count must lie under a quarter: a window at
  // 4000 or 9000 of 10000 stays the Gram path's (a pass at k = 8000 would cost 22 k^3 for R's SVD
  // alone, more than the whole Gram path).
  //
  // A window within 1% of its upper end is kept (window_kept): on a trained head's dump the
  // values inside it sit in a flat tail at tol, where the sketch's residual bound stays above tol
  // pass after pass (wt2-proxy's sigsoftmax, results/wt2-proxy: Gram left 311..312 in 4448 s;
  // in an earlier run 20 minutes of sketch passes after it did not narrow the window), so the
  // passes cost hours and buy at most 1%.
  if (plan.sketch_fallback && res.report.has_certificate && !res.report.certified &&
      4 * (res.report.rank_min + options.sketch.oversampling) <= std::min(rows, cols)) {
    if (window_kept(res.report)) {
      char why[200];
      std::snprintf(why, sizeof why,
                    "auto: the Gram path left rank %lld..%lld, within 1%% of its upper end: "
                    "kept, the sketch not tried",
                    static_cast<long long>(res.report.rank_min),
                    static_cast<long long>(res.report.rank_max));
      res.method_note = why;
      return res;
    }
    return sketch_after_gram(src, plan, options, res);
  }
  return res;
}

}  // namespace sb::analysis
