#include "analysis/rank_analysis_options.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <utility>

#include "analysis/numerical_rank.h"
#include "common/errors.h"

namespace sb::analysis {

std::string result_path(const std::string& out_dir, const std::string& input) {
  return (std::filesystem::path(out_dir) /
          (std::filesystem::path(input).stem().string() + ".rank.h5"))
      .string();
}

// ---- input

void InputOptions::add_to(CLI::App& app, AnalyseOptions& opt) {
  // No CLI::ExistingFile: a missing path is bad input like any other (exit 2, one line).
  app.add_option("files", files, "log-output files: HDF5 (.h5) or numpy (.npy)");
  // Checked by check(), so that a bad value is one line naming the option (exit 2).
  app.add_option("--input", opt.input,
                 "what the rows hold: logprobs (bound d + 1 + bias; every row must normalise, "
                 "else exit 2), logits (bound d + bias) or auto: the file's attribute 'input', "
                 "else log-probabilities when every row's logsumexp is within 1e-3 of 0, else "
                 "logits")
      ->capture_default_str();
  app.add_flag("--estimate-d", estimate_d,
               "print the model's hidden size d per file: the index of the largest gap "
               "sigma_i / sigma_(i+1), minus 1 for log-probabilities (the normaliser) and 1 for a "
               "decoder bias (--bias 1 or the file's attribute); needs no --head or --d");
  app.add_option("--eps", opt.eps,
                 "machine epsilon of the threshold: float32, float64 or a number in (0, 1) "
                 "(default: the file's compute_dtype attribute, else the data's dtype)");
  app.add_option("--head", opt.facts.head,
                 "head of a file without attributes (.npy, plain HDF5): registry name, e.g. "
                 "softmax, or a spelling with options (adaptive:cutoffs=2000,6000: the adaptive "
                 "bound counts the tail clusters); on a file with attributes it must agree");
  d_option_ = app.add_option(
      "--d", d,
      "d of a file without attributes: the size of the vector the decoder multiplies, >= 1");
  bias_option_ = app.add_option("--bias", bias, "bias of a file without attributes: 0 or 1");
  app.add_option("--final-norm", opt.facts.final_norm,
                 "the model's normalisation of the decoder's input: none, layernorm (a "
                 "Transformer's final LayerNorm: bound d + 1 for log-probabilities whatever the "
                 "bias, d for logits) or rmsnorm (bound as none); default: the file's attribute "
                 "'final_norm', else none");
}

void InputOptions::check(const AnalyseOptions& opt) const {
  if (!opt.eps.empty()) parse_eps(opt.eps);
  if (files.empty()) throw OptionError::described("files", "no input files (see --help)");
}

void InputOptions::apply(AnalyseOptions& opt) const {
  if (d_option_->count()) opt.facts.d = d;
  if (bias_option_->count()) opt.facts.bias = bias;
}

std::string InputOptions::bias_source(bool plain_file) const {
  if (!plain_file) return "attribute 'bias'";
  return bias_option_->count() > 0 ? "--bias" : "";
}

// ---- method

void MethodOptions::add_sketch_options(CLI::App& app, AnalyseOptions& opt) {
  sketch_.push_back(app.add_option("--sketch-oversampling", opt.sketch.oversampling,
                                   "sketch: the first k is the bound + this, >= 0")
                        ->capture_default_str());
  sketch_.push_back(app.add_option("--sketch-max-k", opt.sketch.max_k,
                                   "sketch: the cap on k, >= 1 (default: min(T, M), lowered to "
                                   "what the memory limit holds); at the cap an unresolved "
                                   "count reads 'rank >= n'"));
  sketch_.push_back(
      app.add_option("--sketch-probes", opt.sketch.probes,
                     "sketch: Gaussian probes of ||A (I - Q Q^T)|| per pass, 12 to 256: each check "
                     "fails with probability <= 1e-12 (the result states the total); more "
                     "probes, a tighter bound (its factor 10^(12/p) sqrt(2/pi): 1.6 at 40)")
          ->capture_default_str());
  sketch_.push_back(
      app.add_option("--sketch-range-probes", opt.sketch.range_probes,
                     "sketch: Gaussian probes of the range start (--verdict-only), 12 to 256: "
                     "its one check fails with probability <= 1e-12 (factor 3.2 at 20); each "
                     "probe costs 2 T M flops in its pass")
          ->capture_default_str());
  sketch_.push_back(app.add_option("--sketch-max-passes", opt.sketch.max_passes,
                                   "sketch: at most this many passes over the matrix, >= 2")
                        ->capture_default_str());
  sketch_.push_back(
      app.add_option("--sketch-power-steps", opt.sketch.power_steps,
                     "sketch: power steps on the probes alone (one pass each) that bound "
                     "||A (I - Q_c Q_c^T)||_2 for the c top Ritz vectors, which certifies a count "
                     "with a long tail of values just below tol; at most this many per attempt, "
                     "0 to 64 (0: never)")
          ->capture_default_str());
  sketch_.push_back(
      app.add_option("--sketch-power-lanes", opt.sketch.power_lanes,
                     "sketch: row streams of the power steps, each multiplying its blocks with "
                     "one BLAS thread while the others read, 0 to 4 (0: one per BLAS thread; 1: "
                     "one stream with every BLAS thread)")
          ->capture_default_str());
  sketch_.push_back(
      app.add_option("--sketch-start-nonzeros", opt.sketch.start_nonzeros,
                     "sketch: nonzeros per row of the first pass's sparse sign test matrix, 0 to "
                     "64: that pass forms A^T A Omega at T M zeta + 2 T M k flops instead of "
                     "4 T M k and bounds nothing; 0: a full first pass on a Gaussian basis")
          ->capture_default_str());
  sketch_.push_back(app.add_flag(
      "--sketch-no-check", no_check,
      "sketch: every pass also forms the next basis, even one predicted to certify (for timing)"));
  sketch_.push_back(app.add_flag(
      "--sketch-no-range-start", no_range_start,
      "sketch: the verdict start from the start's next basis and power steps instead of its range "
      "(A Omega and the probes' products kept in memory, T (k + p) float64, at most 8 GiB; one "
      "pass) (for timing)"));
  sketch_.push_back(app.add_flag(
      "--sketch-no-float64-finish", no_float64_finish,
      "sketch: on float64 data at the float64 eps, leave the window as the passes left it instead "
      "of the float64 finish (compensated products: one-sided iteration, relative lower bounds, "
      "power steps; about 25 flops per multiply-add)"));
  app.add_option("--seed", opt.seed, "sketch: seed of its Gaussian draws (same seed, same result)")
      ->capture_default_str();
  sketch_.push_back(app.add_flag(
      "--verdict-only", opt.verdict_only,
      "sketch: stop once the verdict (within / exceeds the bound) is certain, which needs only "
      "k = bound + oversampling; for a softmax-family head, within is certified from one pass: "
      "the sparse start and probes on its range, no pass forming A Q (the verdict start); with "
      "--method auto it takes the sketch"));
}

void MethodOptions::add_to(CLI::App& app, AnalyseOptions& opt, const DeviceChoice& devices) {
  threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  budget_gb = kDefaultBudgetBytes / double(1ull << 30);
  app.add_option("--method", opt.method,
                 "exact: LAPACK ?gesdd on the whole matrix; gram: float64 A^T A streamed in "
                 "row blocks, then ?syevd (memory independent of T, resolves sigma down to "
                 "~1.5e-8 sigma_max); auto: gram for tall matrices when that resolves the "
                 "tolerance and fits the budget, else exact. A method whose memory estimate "
                 "exceeds the memory available (or --budget-gb) is refused before anything "
                 "is allocated, naming what each method needs. sketch: randomized subspace "
                 "iteration on A^T A without forming it (k starts at the bound + "
                 "--sketch-oversampling and grows; memory 8 M (2k + probes) bytes; cost about "
                 "4 T M k flops a pass), the rank certified with a stated failure probability, "
                 "or 'rank >= n' at the cap on k. The verdict alone needs only k = bound + "
                 "oversampling (--verdict-only); auto takes the sketch when neither Gram fits "
                 "the budget or only the verdict is asked")
      ->check(CLI::IsMember({"exact", "gram", "sketch", "auto"}))
      ->capture_default_str();
  gram_ = app.add_option("--gram", opt.gram,
                         "gram: which Gram matrix, rows (A A^T, T x T), columns (A^T A, M x M) "
                         "or auto (the smaller: rows when T < M); not with --method exact")
              ->capture_default_str();
  precision_ = app.add_option("--precision", opt.precision,
                              "exact: precision of the SVD, float32 or float64 (default: the "
                              "file's compute_dtype attribute, else the data's dtype); not with "
                              "--method gram, which accumulates in float64")
                   ->check(CLI::IsMember({"float32", "float64"}));
  block_rows_ = app.add_option("--block-rows", opt.block_rows, "gram: rows read per block, >= 1")
                    ->capture_default_str();
  budget_ = app.add_option("--budget-gb", budget_gb,
                           "memory budget in GiB, > 0: auto picks the method that fits it, and "
                           "a method that does not is refused (default: auto prefers what fits "
                           "8 GiB; the limit is the memory available)")
                ->capture_default_str();
  app.add_option("--threads", threads, "BLAS threads, >= 1 (default: cores)")
      ->capture_default_str();
  // --spectrum / --rank-only (gram method): the eigenvalues, or only the count above tol^2.
  auto* spectrum_flag = app.add_flag(
      "--spectrum", spectrum,
      "gram: compute every eigenvalue of A^T A (the singular values, rank_numpy, the gap at "
      "the bound); implied by --out / --out-dir, which write the singular values");
  app.add_flag("--rank-only", rank_only,
               "gram: count the singular values above tol by inertia (power iteration for "
               "sigma_max, then Cholesky / LDL^T of A^T A - tol^2 I) instead of computing them; "
               "the default without --out / --out-dir. No singular values: rank_np and gap@b "
               "are not computed, and --out / --out-dir are refused. With --method auto it "
               "takes gram; with --method exact (which always computes the singular values) "
               "it is refused")
      ->excludes(spectrum_flag);
  add_sketch_options(app, opt);
  app.add_flag("--no-overlap", no_overlap,
               "gram: read the next row block after dsyrk instead of beside it (for timing); "
               "not with --method exact");
  device = devices.choices.front();
  auto* device_option = app.add_option("--device", device, devices.help)->capture_default_str();
  // A binary with a configure step checks the name itself (cuda:1); the others take a choice.
  if (!devices.configure) device_option->check(CLI::IsMember(devices.choices));
}

bool MethodOptions::sketch_given() const {
  return std::any_of(sketch_.begin(), sketch_.end(), [](auto* o) { return o->count() > 0; });
}

namespace {

/// Throws for an option that only another method reads: `what` names it (its first word) and
/// says so.
void refuse_if(bool given, const std::string& what) {
  if (given) throw OptionError::described(what.substr(0, what.find(' ')), what);
}

}  // namespace

void MethodOptions::check(const AnalyseOptions& opt, bool estimate_d, bool writes_spectrum) const {
  check_front_end_options(opt,
                          budget_->count() > 0 ? std::optional<double>(budget_gb) : std::nullopt,
                          threads, OptionSpelling{/*command_line=*/true});
  if (opt.block_rows < 1)
    throw OptionError::for_setting("--block-rows", "--block-rows " + std::to_string(opt.block_rows),
                                   "block rows >= 1");
  const std::string& method = opt.method;
  const bool exact = method == "exact";
  refuse_if(gram_->count() > 0 && exact,
            "--gram with --method exact: --gram goes with --method gram or auto (which Gram "
            "matrix the gram method accumulates); --method exact reads the matrix whole: drop "
            "one");
  refuse_if(estimate_d && rank_only,
            "--estimate-d with --rank-only: the estimate reads the gap between singular values, "
            "which --rank-only does not compute: drop one");
  // Options that only one method reads: with the other one named they would do nothing.
  refuse_if(rank_only && exact,
            "--rank-only with --method exact: --rank-only goes with --method gram or auto (which "
            "it turns to gram); --method exact always computes every singular value: drop one");
  refuse_if(precision_->count() > 0 && method == "gram",
            "--precision " + opt.precision +
                " with --method gram: --precision goes with --method exact or auto (the exact "
                "SVD's precision); --method gram always accumulates in float64: drop one");
  refuse_if(no_overlap && exact,
            "--no-overlap with --method exact: --no-overlap goes with --method gram or auto (it "
            "orders the gram method's row reads); --method exact reads the matrix whole: drop "
            "one");
  refuse_if(block_rows_->count() > 0 && exact,
            "--block-rows with --method exact: --block-rows goes with --method gram or auto (the "
            "gram method's row blocks); --method exact reads the matrix whole: drop one");
  refuse_if(rank_only && method == "sketch",
            "--rank-only with --method sketch: --rank-only is the gram method's inertia count; "
            "the sketch always has its Ritz values (--verdict-only stops it once the verdict is "
            "certain): drop one");
  refuse_if(sketch_given() && (exact || method == "gram"),
            "--sketch-* / --verdict-only with --method " + method +
                ": they go with --method sketch or auto: drop one");
  refuse_if(sketch_given() && rank_only,
            "--sketch-* / --verdict-only with --rank-only: --rank-only takes the gram method: "
            "drop one");
  refuse_if(rank_only && writes_spectrum,
            "--rank-only computes no singular values, which --out / --out-dir write: drop one");
}

void MethodOptions::apply(AnalyseOptions& opt, const DeviceChoice& devices,
                          bool needs_spectrum) const {
  if (budget_->count()) opt.budget_bytes = budget_gb * double(1ull << 30);
  // --rank-only is a gram route: auto takes gram rather than an exact SVD that computes them all.
  if (rank_only && opt.method == "auto") opt.method = "gram";
  // OpenBLAS's own setting: in the OpenMP build (our binaries' DT_RPATH, cmake/Dependencies.cmake)
  // it sets the OpenMP thread count, in the pthread build its pool's size.
  openblas_set_num_threads(threads);
  if (devices.configure) {
    try {
      devices.configure(device, threads, opt);
    } catch (const std::exception& e) {
      throw OptionError::described("--device", "--device " + device + ": " + e.what());
    }
  }
  opt.spectrum = spectrum || needs_spectrum;
  opt.overlap_read = !no_overlap;
  opt.sketch.check_passes = !no_check;
  opt.sketch.range_start = !no_range_start;
  opt.sketch.float64_finish = !no_float64_finish;
}

// ---- report

void ReportOptions::add_to(CLI::App& app) {
  app.add_flag("--json", json, "print one JSON object per line instead of the table");
  app.add_flag("--list-heads", list_heads,
               "print every head name with its facts (theorem2_bounded: the rank has a bound, "
               "is_mixture, is_adaptive, "
               "may_output_neg_inf, rank_defined) and exit; with --json one object "
               "{\"heads\": {name: {fact: bool}}}; takes no input files");
  app.add_flag("--blas", blas,
               "print the BLAS this process runs (library, kernel core, threads) and exit; "
               "every result records the same as blas_library, blas_core, blas_threads");
  app.add_flag("--check", check_bound,
               "exit with status 3 when a head bounded by Theorem 2 exceeds its bound (a bug)");
  app.add_flag("--quiet", quiet,
               "no progress lines on stderr (default: one every 10 s while the matrix streams)");
  app.add_option("--out-dir", out_dir,
                 "write DIR/<input name>.rank.h5 for every input (the inputs' names must differ); "
                 "written only once every input has been analysed");
  app.add_option("--out", out,
                 "write RESULT.h5 (/singular_values + the report as attributes); "
                 "one input file only");
}

void ReportOptions::check(const std::vector<std::string>& files) const {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!out.empty()) {
    if (files.size() != 1)
      throw OptionError::described("--out", "--out takes one input file, got " +
                                                std::to_string(files.size()) +
                                                "; use --out-dir DIR");
    const fs::path path = out;
    if (fs::is_directory(path, ec))
      throw OptionError::described(
          "--out", "--out " + out + ": expected a file path, got a directory", "a file path");
    const fs::path parent = path.parent_path();
    if (!parent.empty() && !fs::is_directory(parent, ec))
      throw OptionError::described(
          "--out",
          "--out " + out + ": expected an existing directory, got '" + parent.string() + "'",
          "an existing directory");
    if (fs::equivalent(path, files.front(), ec))
      throw OptionError::for_setting("--out", "--out " + out, "a path other than the input file's");
  }
  if (out_dir.empty()) return;
  if (fs::exists(out_dir, ec) && !fs::is_directory(out_dir, ec))
    throw OptionError::described(
        "--out-dir", "--out-dir " + out_dir + ": expected a directory, got another kind of file",
        "a directory");
  std::vector<std::pair<std::string, std::string>> seen;  // result path, its input
  for (const auto& f : files) {
    const std::string result = result_path(out_dir, f);
    for (const auto& [path, input] : seen)
      if (path == result)
        throw OptionError::for_setting("--out-dir",
                                       "--out-dir " + out_dir + ": inputs " + input + " and " + f +
                                           " would both write " + result,
                                       "inputs with different names");
    seen.emplace_back(result, f);
  }
}

// ---- MPI

void MpiOptions::add_to(CLI::App& app) {
  app.add_flag("--mpi", flag,
               "run as one of the processes of `mpirun -n N` or `srun -n N` (also when such a "
               "launch is detected): each streams its share of the rows, the partial Gram "
               "matrices (A^T A) or sketch products are added in float64, process 0 solves, "
               "prints and writes; gram (columns) and sketch only");
}

void MpiOptions::check(const MpiChoice& mpi) const {
  if (flag && !mpi.built)
    throw OptionError::described(
        "--mpi",
        "--mpi: this rank_analysis was built without MPI (install libopenmpi-dev and rebuild: "
        "make deps build)");
}

}  // namespace sb::analysis
