// The command line of rank_analysis (and of rank_analysis_torch, which adds a device backend):
// singular values and numerical rank of log-output matrices (the HDF5 contract of
// logprob_file.h, a plain HDF5 /log_probs, or a .npy array), with the Numerical Recipes
// threshold and Theorem 2's bound.

#include "analysis/rank_analysis_cli.h"

#include <cblas.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "analysis/analyse.h"
#include "analysis/estimate_d.h"
#include "analysis/numerical_rank.h"
#include "analysis/rank_table.h"
#include "common/blas_core.h"
#include "common/head_spec.h"

namespace sb::analysis {
namespace {

/// --list-heads: every registry head (common/head_spec.h, in declaration order) with its facts,
/// as one JSON object {"heads": {"<name>": {"<fact>": bool, ...}, ...}} or as a table. The
/// pipeline reads the JSON instead of keeping its own copy of these facts (docs/design.md).
void print_head_facts(bool json) {
  struct Fact {
    const char* name;
    bool (*of)(HeadKind);
  };
  // theorem2_bounded: the rank has a bound below min(M, T) (Theorem 2, or its adaptive extension).
  const Fact facts[] = {{"theorem2_bounded", [](HeadKind k) { return rank_bounded(k); }},
                        {"is_mixture", [](HeadKind k) { return is_mixture(k); }},
                        {"is_adaptive", [](HeadKind k) { return is_adaptive(k); }},
                        {"may_output_neg_inf", [](HeadKind k) { return may_output_neg_inf(k); }},
                        {"rank_defined", [](HeadKind k) { return rank_defined(k); }}};
  if (json) {
    nlohmann::ordered_json heads = nlohmann::ordered_json::object();
    for (const auto& name : head_names()) {
      auto& entry = heads[name] = nlohmann::ordered_json::object();
      for (const auto& f : facts) entry[f.name] = f.of(head_kind_from_name(name));
    }
    std::cout << nlohmann::ordered_json{{"heads", heads}}.dump() << "\n";
    return;
  }
  // One column per fact, as wide as its name; rows of yes / no.
  std::string header = "head       ";
  for (const auto& f : facts) header += std::string("  ") + f.name;
  std::printf("%s\n", header.c_str());
  for (const auto& name : head_names()) {
    std::string row = name + std::string(name.size() < 11 ? 11 - name.size() : 0, ' ');
    for (const auto& f : facts) {
      const std::string cell = f.of(head_kind_from_name(name)) ? "yes" : "no";
      row += "  " + cell + std::string(std::string(f.name).size() - cell.size(), ' ');
    }
    std::printf("%s\n", row.substr(0, row.find_last_not_of(' ') + 1).c_str());
  }
}

/// The first line of an exception's text: a message from a library (c10::Error carries a
/// backtrace after its first line) stays one line on stderr.
std::string one_line(const std::string& text) {
  const auto end = text.find('\n');
  return end == std::string::npos ? text : text.substr(0, end);
}

/// Where --out-dir writes the result of `input`: DIR/<input's stem>.rank.h5.
std::string result_path(const std::string& out_dir, const std::string& input) {
  return (std::filesystem::path(out_dir) /
          (std::filesystem::path(input).stem().string() + ".rank.h5"))
      .string();
}

/// What the command line gave, for check_options.
struct OptionFacts {
  const AnalyseOptions& opt;
  const std::vector<std::string>& files;
  const std::string& out;
  const std::string& out_dir;
  int threads;
  bool budget_given;
  double budget_gb;
  bool rank_only, no_overlap, precision_given, block_rows_given, gram_given, estimate_d;
  bool sketch_given;  ///< any --sketch-* option, or --verdict-only
};

/// Option values and combinations, checked before any file is opened. Throws
/// std::invalid_argument naming the option(s), the value and what is expected.
void check_options(const OptionFacts& o) {
  namespace fs = std::filesystem;
  if (o.threads < 1)
    throw std::invalid_argument("--threads " + std::to_string(o.threads) +
                                ": expected threads >= 1");
  if (o.budget_given && !(std::isfinite(o.budget_gb) && o.budget_gb > 0)) {
    char value[32];
    std::snprintf(value, sizeof value, "%g", o.budget_gb);
    throw std::invalid_argument(std::string("--budget-gb ") + value +
                                ": expected a finite number of GiB > 0");
  }
  if (o.opt.block_rows < 1)
    throw std::invalid_argument("--block-rows " + std::to_string(o.opt.block_rows) +
                                ": expected block rows >= 1");
  if (!o.opt.eps.empty()) parse_eps(o.opt.eps);
  check_sketch_options(o.opt);
  if (o.opt.input != "logprobs" && o.opt.input != "logits" && o.opt.input != "auto")
    throw std::invalid_argument("--input " + o.opt.input + ": expected logprobs, logits or auto");
  if (o.gram_given && o.opt.method == "exact")
    throw std::invalid_argument(
        "--gram with --method exact: --gram goes with --method gram or auto (which Gram matrix "
        "the gram method accumulates); --method exact reads the matrix whole: drop one");
  if (o.estimate_d && o.rank_only)
    throw std::invalid_argument(
        "--estimate-d with --rank-only: the estimate reads the gap between singular values, which "
        "--rank-only does not compute: drop one");
  const std::string& method = o.opt.method;
  // Options that only one method reads: with the other one named they would do nothing.
  if (o.rank_only && method == "exact")
    throw std::invalid_argument(
        "--rank-only with --method exact: --rank-only goes with --method gram or auto (which it "
        "turns to gram); --method exact always computes every singular value: drop one");
  if (o.precision_given && method == "gram")
    throw std::invalid_argument(
        "--precision " + o.opt.precision +
        " with --method gram: --precision goes with --method exact or auto (the exact SVD's "
        "precision); --method gram always accumulates in float64: drop one");
  if (o.no_overlap && method == "exact")
    throw std::invalid_argument(
        "--no-overlap with --method exact: --no-overlap goes with --method gram or auto (it "
        "orders the gram method's row reads); --method exact reads the matrix whole: drop one");
  if (o.block_rows_given && method == "exact")
    throw std::invalid_argument(
        "--block-rows with --method exact: --block-rows goes with --method gram or auto (the "
        "gram method's row blocks); --method exact reads the matrix whole: drop one");
  if (o.rank_only && method == "sketch")
    throw std::invalid_argument(
        "--rank-only with --method sketch: --rank-only is the gram method's inertia count; the "
        "sketch always has its Ritz values (--verdict-only stops it once the verdict is "
        "certain): drop one");
  if (o.sketch_given && (method == "exact" || method == "gram"))
    throw std::invalid_argument("--sketch-* / --verdict-only with --method " + method +
                                ": they go with --method sketch or auto: drop one");
  if (o.sketch_given && o.rank_only)
    throw std::invalid_argument(
        "--sketch-* / --verdict-only with --rank-only: --rank-only takes the gram method: drop "
        "one");
  if (o.rank_only && (!o.out.empty() || !o.out_dir.empty()))
    throw std::invalid_argument(
        "--rank-only computes no singular values, which --out / --out-dir write: drop one");
  if (o.files.empty()) throw std::invalid_argument("no input files (see --help)");
  std::error_code ec;
  if (!o.out.empty()) {
    if (o.files.size() != 1)
      throw std::invalid_argument("--out takes one input file, got " +
                                  std::to_string(o.files.size()) + "; use --out-dir DIR");
    const fs::path out = o.out;
    if (fs::is_directory(out, ec))
      throw std::invalid_argument("--out " + o.out + ": expected a file path, got a directory");
    const fs::path parent = out.parent_path();
    if (!parent.empty() && !fs::is_directory(parent, ec))
      throw std::invalid_argument("--out " + o.out + ": expected an existing directory, got '" +
                                  parent.string() + "'");
    if (fs::equivalent(out, o.files.front(), ec))
      throw std::invalid_argument("--out " + o.out +
                                  ": expected a path other than the input file's");
  }
  if (!o.out_dir.empty()) {
    if (fs::exists(o.out_dir, ec) && !fs::is_directory(o.out_dir, ec))
      throw std::invalid_argument("--out-dir " + o.out_dir +
                                  ": expected a directory, got another kind of file");
    std::vector<std::pair<std::string, std::string>> seen;  // result path, its input
    for (const auto& f : o.files) {
      const std::string result = result_path(o.out_dir, f);
      for (const auto& [path, input] : seen)
        if (path == result)
          throw std::invalid_argument("--out-dir " + o.out_dir + ": inputs " + input + " and " + f +
                                      " would both write " + result +
                                      ": expected inputs with different names");
      seen.emplace_back(result, f);
    }
  }
}

}  // namespace

int rank_analysis_main(int argc, char** argv, const DeviceChoice& devices, const MpiChoice& mpi) {
  CLI::App app{
      "Singular values and numerical rank of log-output matrices (T x M, rows = tokens).\n"
      "rank = #{sigma > tol}, tol = 0.5 sqrt(M + T + 1) sigma_max eps (Numerical Recipes);\n"
      "also numpy.linalg.matrix_rank's tol = sigma_max max(M, T) eps. Verdict against Theorem 2's\n"
      "bound d + 1 + bias.\n"
      "Inputs: HDF5 log-output files (/log_probs float32 or float64, with the attributes head, d,\n"
      "bias, ...); HDF5 files with only a 2-D /log_probs; .npy arrays (np.save, float32 or\n"
      "float64, C or Fortran order). For the last two, --head, --d and --bias supply what the\n"
      "verdict needs, and eps defaults to the data's dtype. The rows may be log-probabilities\n"
      "(bound d + 1 + bias) or logits (bound d + bias): --input, else the file's attribute\n"
      "'input', else detected from the rows' logsumexp.\n"
      "--estimate-d FILE: the model's hidden size d from the largest gap between singular values."};
  app.footer(
      "Examples:\n"
      "  # a trainer's dump (train_wordlm, synthetic_logprobs): everything from its attributes\n"
      "  rank_analysis results/ptb/softmax/logprobs.h5\n"
      "  rank_analysis --json --check --out rank.h5 logprobs.h5\n"
      "  # a matrix saved from PyTorch/JAX: np.save('lp.npy', log_probs) with shape (T, M)\n"
      "  # (for the paper's M x T matrix A_hat, np.save('lp.npy', A_hat.T): Fortran order, no "
      "copy)\n"
      "  rank_analysis --head softmax --d 400 --bias 1 lp.npy\n"
      "  # an HDF5 file holding only /log_probs (e.g. h5py: f['log_probs'] = log_probs)\n"
      "  rank_analysis --head softmax --d 400 --bias 1 plain.h5\n"
      "  # a synthetic matrix through any head, without training\n"
      "  synthetic_logprobs --head softmax --T 6000 --M 2000 --d 64 --out synth.h5\n"
      "  rank_analysis --check synth.h5\n"
      "  # the Gram path on a GPU (a build against a CUDA LibTorch: README, \"CUDA builds\")\n"
      "  rank_analysis --device cuda --rank-only logprobs.h5\n"
      "  # logits rather than log-probabilities (bound d + bias), and a model's hidden size\n"
      "  rank_analysis --input logits --head softmax --d 400 --bias 1 logits.npy\n"
      "  rank_analysis --estimate-d --bias 1 logits.npy\n"
      "  # a vocabulary of 50k-256k: the sketch, cost following the rank, certified\n"
      "  rank_analysis --method sketch --head softmax --d 768 --bias 1 gpt2_logprobs.npy\n"
      "  rank_analysis --verdict-only --head softmax --d 512 --bias 0 llama_logprobs.npy\n"
      "  # several processes (MPI), here or on a cluster\n"
      "  mpirun -n 4 rank_analysis --mpi --method gram logprobs.h5\n"
      "  srun -n 16 rank_analysis --mpi --method sketch --head softmax --d 4096 --bias 0 lp.npy\n"
      "  # every head and the facts the pipeline plans by (Theorem 2, mixture, -inf)\n"
      "  rank_analysis --list-heads --json\n"
      "  # which OpenBLAS kernels it runs (a generic core on a newer CPU restarts on a better one)\n"
      "  rank_analysis --blas\n"
      "Every input is opened and checked (header, shape, attributes, the facts given, the\n"
      "method's memory) before any is analysed, and results are written only once every input\n"
      "has been analysed: a bad input anywhere in the list writes nothing.\n"
      "Exit status: 0 done, 2 bad input or not enough memory (one line on stderr naming the file\n"
      "or option, the field and what is expected; no output file), 3 --check found a\n"
      "Theorem-2-bounded head above its bound.");

  std::vector<std::string> files;
  AnalyseOptions opt;
  std::string out, out_dir;
  bool json = false, check = false, quiet = false, want_spectrum = false, rank_only = false,
       no_overlap = false, list_heads = false, estimate = false, blas = false;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  double budget_gb = kDefaultBudgetBytes / double(1ull << 30);
  int64_t d = 0;
  int bias = 0;

  // No CLI::ExistingFile: a missing path is bad input like any other (exit 2, one line).
  app.add_option("files", files, "log-output files: HDF5 (.h5) or numpy (.npy)");
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
  auto* gram_option =
      app.add_option("--gram", opt.gram,
                     "gram: which Gram matrix, rows (A A^T, T x T), columns (A^T A, M x M) or "
                     "auto (the smaller: rows when T < M); not with --method exact")
          ->capture_default_str();
  // Checked by check_options, so that a bad value is one line naming the option (exit 2).
  app.add_option("--input", opt.input,
                 "what the rows hold: logprobs (bound d + 1 + bias; every row must normalise, "
                 "else exit 2), logits (bound d + bias) or auto: the file's attribute 'input', "
                 "else log-probabilities when every row's logsumexp is within 1e-3 of 0, else "
                 "logits")
      ->capture_default_str();
  app.add_flag("--estimate-d", estimate,
               "print the model's hidden size d per file: the index of the largest gap "
               "sigma_i / sigma_(i+1), minus 1 for log-probabilities (the normaliser) and 1 for a "
               "decoder bias (--bias 1 or the file's attribute); needs no --head or --d");
  app.add_option("--eps", opt.eps,
                 "machine epsilon of the threshold: float32, float64 or a number in (0, 1) "
                 "(default: the file's compute_dtype attribute, else the data's dtype)");
  auto* precision_option =
      app.add_option("--precision", opt.precision,
                     "exact: precision of the SVD, float32 or float64 (default: the file's "
                     "compute_dtype attribute, else the data's dtype); not with --method gram, "
                     "which accumulates in float64")
          ->check(CLI::IsMember({"float32", "float64"}));
  app.add_option("--head", opt.facts.head,
                 "head of a file without attributes (.npy, plain HDF5): registry name, e.g. "
                 "softmax, or a spelling with options (adaptive:cutoffs=2000,6000: the adaptive "
                 "bound counts the tail clusters); on a file with attributes it must agree");
  auto* d_option = app.add_option(
      "--d", d,
      "d of a file without attributes: the size of the vector the decoder multiplies, >= 1");
  auto* bias_option = app.add_option("--bias", bias, "bias of a file without attributes: 0 or 1");
  auto* block_rows_option =
      app.add_option("--block-rows", opt.block_rows, "gram: rows read per block, >= 1")
          ->capture_default_str();
  auto* budget_option =
      app.add_option("--budget-gb", budget_gb,
                     "memory budget in GiB, > 0: auto picks the method that fits it, and a "
                     "method that does not is refused (default: auto prefers what fits 8 GiB; "
                     "the limit is the memory available)")
          ->capture_default_str();
  app.add_flag("--json", json, "print one JSON object per line instead of the table");
  app.add_flag("--list-heads", list_heads,
               "print every head name with its facts (theorem2_bounded: the rank has a bound, "
               "is_mixture, is_adaptive, "
               "may_output_neg_inf, rank_defined) and exit; with --json one object "
               "{\"heads\": {name: {fact: bool}}}; takes no input files");
  app.add_flag("--blas", blas,
               "print the BLAS this process runs (library, kernel core, threads) and exit; "
               "every result records the same as blas_library, blas_core, blas_threads");
  app.add_flag("--check", check,
               "exit with status 3 when a head bounded by Theorem 2 exceeds its bound (a bug)");
  app.add_flag("--quiet", quiet,
               "no progress lines on stderr (default: one every 10 s while the matrix streams)");
  app.add_option("--threads", threads, "BLAS threads, >= 1 (default: cores)")
      ->capture_default_str();
  app.add_option("--out-dir", out_dir,
                 "write DIR/<input name>.rank.h5 for every input (the inputs' names must differ); "
                 "written only once every input has been analysed");
  // --spectrum / --rank-only (gram method): the eigenvalues, or only the count above tol^2.
  auto* spectrum = app.add_flag(
      "--spectrum", want_spectrum,
      "gram: compute every eigenvalue of A^T A (the singular values, rank_numpy, the gap at "
      "the bound); implied by --out / --out-dir, which write the singular values");
  app.add_flag("--rank-only", rank_only,
               "gram: count the singular values above tol by inertia (power iteration for "
               "sigma_max, then Cholesky / LDL^T of A^T A - tol^2 I) instead of computing them; "
               "the default without --out / --out-dir. No singular values: rank_np and gap@b "
               "are not computed, and --out / --out-dir are refused. With --method auto it "
               "takes gram; with --method exact (which always computes the singular values) "
               "it is refused")
      ->excludes(spectrum);
  auto* oversampling_option = app.add_option("--sketch-oversampling", opt.sketch_oversampling,
                                             "sketch: the first k is the bound + this, >= 0")
                                  ->capture_default_str();
  auto* max_k_option = app.add_option("--sketch-max-k", opt.sketch_max_k,
                                      "sketch: the cap on k, >= 1 (default: min(T, M), lowered "
                                      "to what the memory limit holds); at the cap an "
                                      "unresolved count reads 'rank >= n'");
  auto* probes_option =
      app.add_option("--sketch-probes", opt.sketch_probes,
                     "sketch: Gaussian probes of ||A (I - Q Q^T)|| per pass, 12 to 256: each check "
                     "fails with probability <= 1e-12 (the result states the total); more "
                     "probes, a tighter bound (its factor 10^(12/p) sqrt(2/pi): 1.6 at 40)")
          ->capture_default_str();
  auto* passes_option = app.add_option("--sketch-max-passes", opt.sketch_max_passes,
                                       "sketch: at most this many passes over the matrix, >= 2")
                            ->capture_default_str();
  app.add_option("--seed", opt.seed, "sketch: seed of its Gaussian draws (same seed, same result)")
      ->capture_default_str();
  bool mpi_flag = false;
  app.add_flag("--mpi", mpi_flag,
               "run as one of the processes of `mpirun -n N` or `srun -n N` (also when such a "
               "launch is detected): each streams its share of the rows, the partial Gram "
               "matrices (A^T A) or sketch products are added in float64, process 0 solves, "
               "prints and writes; gram (columns) and sketch only");
  auto* verdict_option = app.add_flag(
      "--verdict-only", opt.verdict_only,
      "sketch: stop once the verdict (within / exceeds the bound) is certain, which needs only "
      "k = bound + oversampling; with --method auto it takes the sketch");
  app.add_flag("--no-overlap", no_overlap,
               "gram: read the next row block after dsyrk instead of beside it (for timing); "
               "not with --method exact");
  std::string device = devices.choices.front();
  auto* device_option = app.add_option("--device", device, devices.help)->capture_default_str();
  // A binary with a configure step checks the name itself (cuda:1); the others take a choice.
  if (!devices.configure) device_option->check(CLI::IsMember(devices.choices));
  app.add_option("--out", out,
                 "write RESULT.h5 (/singular_values + the report as attributes); "
                 "one input file only");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help exits 0; every malformed command line exits 2 like any other bad input.
    return app.exit(e) == 0 ? 0 : 2;
  }
  // Every refusal is one line on stderr and exit status 2 (under MPI: every process returns 2,
  // process 0 prints the line).
  const bool root = !mpi.collective || mpi.collective->root();
  auto refuse = [root](const std::string& why) {
    if (root) std::fprintf(stderr, "rank_analysis: %s\n", one_line(why).c_str());
    return 2;
  };
  if (blas) {
    std::printf("%s\n", blas::blas_info().summary().c_str());
    return 0;
  }
  if (list_heads) {
    if (!files.empty())
      return refuse("--list-heads takes no input files, got " + std::to_string(files.size()) +
                    " (" + files.front() + (files.size() > 1 ? ", ..." : "") +
                    "): drop them or --list-heads");
    print_head_facts(json);
    return 0;
  }
  try {
    check_options(OptionFacts{opt, files, out, out_dir, threads, budget_option->count() > 0,
                              budget_gb, rank_only, no_overlap, precision_option->count() > 0,
                              block_rows_option->count() > 0, gram_option->count() > 0, estimate,
                              oversampling_option->count() + max_k_option->count() +
                                      probes_option->count() + passes_option->count() +
                                      verdict_option->count() >
                                  0});
  } catch (const std::exception& e) {
    return refuse(e.what());
  }
  if (mpi_flag && !mpi.built)
    return refuse(
        "--mpi: this rank_analysis was built without MPI (install libopenmpi-dev and rebuild: "
        "make deps build)");
  if (mpi.collective) {
    opt.collective = mpi.collective;
    if (!root) quiet = true;
  }
  if (d_option->count()) opt.facts.d = d;
  if (bias_option->count()) opt.facts.bias = bias;
  if (budget_option->count()) opt.budget_bytes = budget_gb * double(1ull << 30);
  // --rank-only is a gram route: auto takes gram rather than an exact SVD that computes them all.
  if (rank_only && opt.method == "auto") opt.method = "gram";
  // OpenBLAS's own setting: in the OpenMP build (our binaries' DT_RPATH, cmake/Dependencies.cmake)
  // it sets the OpenMP thread count, in the pthread build its pool's size.
  openblas_set_num_threads(threads);
  if (devices.configure) {
    try {
      devices.configure(device, threads, opt);
    } catch (const std::exception& e) {
      return refuse("--device " + device + ": " + e.what());
    }
  }
  opt.spectrum = want_spectrum || !out.empty() || !out_dir.empty() || estimate;
  opt.overlap_read = !no_overlap;

  // Every input is opened and checked (header, shape, attributes, the facts given, the method
  // and its memory) before any is analysed, and every result is written only once all have been
  // analysed: a bad input anywhere in the list exits 2 with nothing written.
  std::string current, doing;  // the file being worked on and how, for an out-of-memory message
  try {
    check_model_facts(opt.facts);
    const MemoryLimit limit = memory_limit(opt);
    std::vector<std::unique_ptr<MatrixSource>> sources;
    std::vector<AnalysisPlan> plans;
    std::vector<std::string> bias_from;  // --estimate-d: where each file's bias came from
    for (const auto& f : files) {
      current = f;
      doing = "while opening and validating it";
      sources.push_back(open_matrix(f));
      AnalyseOptions o = opt;
      const bool plain = sources.back()->header() == nullptr;
      bias_from.push_back(!plain ? "attribute 'bias'" : bias_option->count() > 0 ? "--bias" : "");
      // The estimate needs no model facts: a plain file gets stand-ins for the verdict it skips.
      if (estimate && plain) {
        if (o.facts.head.empty()) o.facts.head = "softmax";
        if (!o.facts.d) o.facts.d = 1;
        if (!o.facts.bias) o.facts.bias = 0;
      }
      plans.push_back(plan_analysis(*sources.back(), o, limit));
    }
    std::vector<contract::RankResult> results;
    for (size_t i = 0; i < files.size(); ++i) {
      const auto& f = files[i];
      current = f;
      doing = "while analysing it (method " + method_name(plans[i].method) + ")";
      if (!quiet) {
        std::fprintf(stderr, "rank_analysis: analysing %s ...\n", f.c_str());
        opt.on_progress = [&f](const std::string& line) {
          std::fprintf(stderr, "rank_analysis: %s: %s\n", f.c_str(), line.c_str());
        };
      }
      results.push_back(analyse(*sources[i], plans[i], opt));
      sources[i].reset();  // closes the file, unmaps the .npy
    }
    current.clear();
    if (!root) return 0;  // process 0 prints and writes
    if (estimate) {
      std::vector<DEstimate> estimates;
      for (size_t i = 0; i < results.size(); ++i)
        estimates.push_back(estimate_d(results[i], bias_from[i]));
      for (const auto& e : estimates)
        std::cout << (json ? estimate_json(e)
                           : (files.size() > 1 ? e.source + ": " : "") + describe(e))
                  << "\n";
      return 0;
    }
    if (!out.empty()) contract::write_rank_result(out, results.front());
    if (!out_dir.empty()) {
      std::filesystem::create_directories(out_dir);
      for (const auto& r : results) contract::write_rank_result(result_path(out_dir, r.source), r);
    }
    if (json) {
      for (const auto& r : results) std::cout << contract::rank_result_json(r) << "\n";
    } else {
      print_table(results);
    }
    if (check)
      for (const auto& r : results)
        if (r.report.theorem2_bounded && !r.report.within_bound) return 3;
  } catch (const std::bad_alloc&) {
    // The estimates of plan_analysis count the large buffers; anything else running out ends
    // here rather than as an uncaught std::bad_alloc.
    return refuse(current.empty() ? "out of memory (std::bad_alloc)"
                                  : current + ": out of memory (std::bad_alloc) " + doing +
                                        ": the process could not allocate what it needs");
  } catch (const std::exception& e) {
    return refuse(e.what());
  }
  return 0;
}

}  // namespace sb::analysis
