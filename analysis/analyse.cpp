#include "analysis/analyse.h"

#include <cblas.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "analysis/rank_certificate.h"
#include "common/duration.h"
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
Progress progress_lines(const AnalyseOptions& o, SvdMethod method, bool float64, int64_t cols) {
  if (!o.on_progress) return {};
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  return [&o, start, last = start, name = method_name(method), method, float64, cols](
             int64_t done, int64_t total) mutable {
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
        " of the " + std::to_string(cols) + " x " + std::to_string(cols) + " Gram matrix";
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

}  // namespace

SvdMethod choose_method(int64_t rows, int64_t cols, double eps, const AnalyseOptions& o) {
  if (o.method == "exact") return SvdMethod::exact;
  if (o.method == "gram") return SvdMethod::gram;
  if (o.method != "auto")
    throw std::invalid_argument("--method: expected exact, gram or auto, got '" + o.method + "'");
  const double tol_rel = 0.5 * std::sqrt(static_cast<double>(rows + cols + 1)) * eps;
  const bool gram_resolves = tol_rel > 10 * std::sqrt(kFloat64Eps);
  const bool exact_fits = exact_bytes(rows, cols, o.precision == "float64") <= o.budget_bytes;
  if (rows >= cols && gram_resolves && gram_bytes(cols, o.block_rows) <= o.budget_bytes)
    return SvdMethod::gram;
  return exact_fits ? SvdMethod::exact : SvdMethod::gram;
}

contract::RankResult analyse_file(const std::string& path, const AnalyseOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const auto source = open_matrix(path);
  const contract::LogProbHeader h = resolve_header(*source, options.facts);
  const double eps = parse_eps(options.eps.empty() ? h.compute_dtype : options.eps);
  const std::string precision = options.precision.empty() ? h.compute_dtype : options.precision;
  if (precision != "float32" && precision != "float64")
    throw std::invalid_argument("--precision: expected float32 or float64, got '" + precision +
                                "'");
  if (options.block_rows < 1)
    throw std::invalid_argument("--block-rows: expected >= 1, got " +
                                std::to_string(options.block_rows));
  AnalyseOptions o = options;
  o.precision = precision;
  const int64_t rows = source->rows(), cols = source->cols();
  const SvdMethod method = choose_method(rows, cols, eps, o);

  FiniteScan scan;
  SpectrumTiming timing;
  const bool f64 = precision == "float64";
  const Progress progress = progress_lines(options, method, f64, cols);
  // Rows arrive in the stored dtype: float64 data is never rounded to float32 on the way.
  std::vector<double> sigma;
  GramMatrix gram;
  auto stream = [&](const auto& read) {
    if (method == SvdMethod::exact)
      sigma = singular_values_exact(read, rows, cols, f64, &scan, &timing, progress);
    else
      gram = accumulate_gram(read, rows, cols, options.block_rows, &scan, &timing, progress,
                             options.overlap_read);
  };
  if (method == SvdMethod::gram && options.backend.accumulate)
    gram = options.backend.accumulate(*source, options.block_rows, &scan, &timing, progress);
  else if (source->float64())
    stream(RowReader64(
        [&](int64_t begin, int64_t count, double* out) { source->read_rows(begin, count, out); }));
  else
    stream(RowReader(
        [&](int64_t begin, int64_t count, float* out) { source->read_rows(begin, count, out); }));
  if (!scan.clean()) {
    std::string why = path + ": " + source->data_name() + " holds " + scan.describe();
    if (scan.neg_inf > 0 && may_output_neg_inf(head_kind_from_name(h.head)))
      why += " (head '" + h.head +
             "' outputs -inf off its support, so the numerical rank of the "
             "log-output matrix is undefined)";
    else if (scan.neg_inf > 0)
      why += " (-inf log-probabilities make the rank undefined)";
    throw std::runtime_error(why);
  }

  contract::RankResult res;
  res.source = path;
  res.header = h;
  res.method = method_name(method);
  res.precision = method == SvdMethod::gram ? "float64" : precision;
  const auto kind = head_kind_from_name(h.head);
  const int64_t bound = theorem2_rank_bound(h.d, h.bias);
  const bool same_sign = gram.same_sign;
  if (method == SvdMethod::gram && !options.spectrum) {
    // --rank-only: inertia counts on G instead of its eigenvalues (rank_certificate.h).
    const auto solve_start = std::chrono::steady_clock::now();
    InertiaCounter counter(std::move(gram.g), cols);
    res.report = rank_by_inertia(counter, rows, eps, same_sign, bound, theorem2_bounded(kind),
                                 &res.solver, &timing.sigma_max);
    timing.solve +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - solve_start).count();
  } else {
    if (method == SvdMethod::gram) {
      if (options.backend.singular_values) {
        res.solver = options.backend.solver;
        sigma = options.backend.singular_values(std::move(gram), &timing);
      } else {
        res.solver = eigen_solver_name(EigenSolver::automatic, cols);
        sigma = gram_singular_values(std::move(gram), EigenSolver::automatic, &timing);
      }
    } else {
      res.solver = f64 ? "dgesdd" : "sgesdd";
    }
    res.report = numerical_rank(sigma, rows, cols, eps, bound, theorem2_bounded(kind),
                                resolution_rel(method, f64));
    if (method == SvdMethod::gram) certify_from_spectrum(res.report, sigma, rows, cols, same_sign);
    res.singular_values = std::move(sigma);
  }
  res.timing = timing;
  res.blas_threads = openblas_get_num_threads();
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

}  // namespace sb::analysis
