// The command line of rank_analysis (and of rank_analysis_torch, which adds a device backend):
// singular values and numerical rank of log-output matrices (the HDF5 contract of
// logprob_file.h, a plain HDF5 /log_probs, or a .npy array), with the Numerical Recipes
// threshold and Theorem 2's bound.

#include "analysis/rank_analysis_cli.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "analysis/analyse.h"
#include "analysis/estimate_d.h"
#include "analysis/numerical_rank.h"
#include "analysis/rank_analysis_options.h"
#include "analysis/rank_table.h"
#include "common/blas_core.h"
#include "common/command_line.h"
#include "common/errors.h"
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

/// The description and the examples of --help.
void describe_app(CLI::App& app) {
  app.description(
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
      "--estimate-d FILE: the model's hidden size d from the largest gap between singular values.");
  app.footer(
      "Examples (each runs as written, in this order, in an empty folder; python3 with numpy\n"
      "and h5py):\n"
      "  # a log-output file: a trainer's dump, or synthetic_logprobs' (any head, no training)\n"
      "  synthetic_logprobs --head softmax --T 6000 --M 2000 --d 64 --out logprobs.h5\n"
      "  rank_analysis logprobs.h5\n"
      "  rank_analysis --json --check --out rank.h5 logprobs.h5\n"
      "  # a matrix saved from PyTorch/JAX, shape (T, M): np.save('lp.npy', log_probs), here from\n"
      "  # the file above (the paper's M x T matrix A_hat: np.save('lp.npy', A_hat.T), no copy)\n"
      "  python3 -c \"import h5py, numpy; numpy.save('lp.npy', "
      "h5py.File('logprobs.h5')['log_probs'][:])\"\n"
      "  rank_analysis --head softmax --d 64 --bias 1 lp.npy\n"
      "  # an HDF5 file holding only /log_probs (h5py: f['log_probs'] = log_probs)\n"
      "  python3 -c \"import h5py; h5py.File('plain.h5', 'w')['log_probs'] = "
      "h5py.File('logprobs.h5')['log_probs'][:]\"\n"
      "  rank_analysis --head softmax --d 64 --bias 1 plain.h5\n"
      "  # logits rather than log-probabilities (bound d + bias), and a model's hidden size\n"
      "  synthetic_logprobs --head softmax --logits --T 6000 --M 2000 --d 64 --out logits.h5\n"
      "  python3 -c \"import h5py, numpy; numpy.save('logits.npy', "
      "h5py.File('logits.h5')['log_probs'][:])\"\n"
      "  rank_analysis --input logits --head softmax --d 64 --bias 1 logits.npy\n"
      "  rank_analysis --estimate-d --bias 1 logits.npy\n"
      "  # a vocabulary of 50k-256k: the sketch, its cost following the rank, certified (a "
      "model's\n"
      "  # own facts: GPT-2 --d 768 --bias 1, Llama 3 --d 4096 --bias 0)\n"
      "  rank_analysis --method sketch --head softmax --d 64 --bias 1 lp.npy\n"
      "  rank_analysis --verdict-only --head softmax --d 64 --bias 1 lp.npy\n"
      "  # every head and the facts the pipeline plans by (Theorem 2, mixture, -inf)\n"
      "  rank_analysis --list-heads --json\n"
      "  # which OpenBLAS kernels it runs (a generic core on a newer CPU restarts on a better "
      "one)\n"
      "  rank_analysis --blas\n"
      "Where they need more (not run by the examples' test): several processes (MPI), and the\n"
      "Gram path on a GPU (a build against a CUDA LibTorch: docs/clusters-and-gpus.md)\n"
      "  mpirun -n 4 rank_analysis --mpi --method gram logprobs.h5\n"
      "  srun -n 16 rank_analysis --mpi --method sketch --head softmax --d 64 --bias 1 lp.npy\n"
      "  rank_analysis --device cuda --rank-only logprobs.h5\n"
      "Every input is opened and checked (header, shape, attributes, the facts given, the\n"
      "method's memory) before any is analysed, and results are written only once every input\n"
      "has been analysed: a bad input anywhere in the list writes nothing.\n" +
      sb::exit_statuses_text(
          {sb::kExitOk, sb::kExitBadInput, sb::kExitBoundExceeded, sb::kExitInternal}));
}

/// The files opened and checked, and the plan of each (nothing analysed yet).
struct Prepared {
  std::vector<std::unique_ptr<MatrixSource>> sources;
  std::vector<AnalysisPlan> plans;
  std::vector<std::string> bias_from;  ///< --estimate-d: where each file's bias came from
};

/// What the file being worked on is and what is being done to it, for an out-of-memory message.
struct Doing {
  std::string file, what;
};

/// Opens and checks every input (header, shape, attributes, the facts given, the method and its
/// memory) before any is analysed.
Prepared prepare(const InputOptions& in, const AnalyseOptions& opt, Doing& doing) {
  check_model_facts(opt.facts);
  const MemoryLimit limit = memory_limit(opt);
  Prepared p;
  for (const auto& f : in.files) {
    doing = {f, "while opening and validating it"};
    p.sources.push_back(open_matrix(f));
    AnalyseOptions o = opt;
    const bool plain = p.sources.back()->header() == nullptr;
    p.bias_from.push_back(in.bias_source(plain));
    // The estimate needs no model facts: a plain file gets stand-ins for the verdict it skips.
    if (in.estimate_d && plain) {
      if (o.facts.head.empty()) o.facts.head = "softmax";
      if (!o.facts.d) o.facts.d = 1;
      if (!o.facts.bias) o.facts.bias = 0;
    }
    p.plans.push_back(plan_analysis(*p.sources.back(), o, limit));
  }
  return p;
}

/// Analyses every prepared input in turn, with progress lines on stderr unless quiet.
std::vector<contract::RankResult> analyse_all(const std::vector<std::string>& files, Prepared& p,
                                              AnalyseOptions& opt, bool quiet, Doing& doing) {
  std::vector<contract::RankResult> results;
  for (size_t i = 0; i < files.size(); ++i) {
    const auto& f = files[i];
    doing = {f, "while analysing it (method " + method_name(p.plans[i].method) + ")"};
    if (!quiet) {
      std::fprintf(stderr, "rank_analysis: analysing %s ...\n", f.c_str());
      opt.on_progress = [&f](const std::string& line) {
        std::fprintf(stderr, "rank_analysis: %s: %s\n", f.c_str(), line.c_str());
      };
    }
    results.push_back(analyse(*p.sources[i], p.plans[i], opt));
    p.sources[i].reset();  // closes the file, unmaps the .npy
  }
  doing = {};
  return results;
}

/// Prints (and with --out / --out-dir writes) the results; the exit status: 3 when --check finds
/// a Theorem-2-bounded head above its bound, else 0.
int report(const ReportOptions& rep, const InputOptions& in, const Prepared& p,
           const std::vector<contract::RankResult>& results) {
  if (in.estimate_d) {
    for (size_t i = 0; i < results.size(); ++i) {
      const DEstimate e = estimate_d(results[i], p.bias_from[i]);
      std::cout << (rep.json ? estimate_json(e)
                             : (in.files.size() > 1 ? e.source + ": " : "") + describe(e))
                << "\n";
    }
    return sb::kExitOk;
  }
  if (!rep.out.empty()) contract::write_rank_result(rep.out, results.front());
  if (!rep.out_dir.empty()) {
    std::filesystem::create_directories(rep.out_dir);
    for (const auto& r : results)
      contract::write_rank_result(result_path(rep.out_dir, r.source), r);
  }
  if (rep.json) {
    for (const auto& r : results) std::cout << contract::rank_result_json(r) << "\n";
  } else {
    print_table(results);
  }
  if (rep.check_bound)
    for (const auto& r : results)
      if (r.report.theorem2_bounded && !r.report.within_bound) return sb::kExitBoundExceeded;
  return sb::kExitOk;
}

/// --blas and --list-heads, which analyse nothing: their exit status, or -1 to go on.
int listing(const ReportOptions& rep, const InputOptions& in,
            const std::function<int(const std::string&)>& refuse) {
  if (rep.blas) {
    std::printf("%s\n", blas::blas_info().summary().c_str());
    return sb::kExitOk;
  }
  if (!rep.list_heads) return -1;
  if (!in.files.empty())
    return refuse("--list-heads takes no input files, got " + std::to_string(in.files.size()) +
                  " (" + in.files.front() + (in.files.size() > 1 ? ", ..." : "") +
                  "): drop them or --list-heads");
  print_head_facts(rep.json);
  return sb::kExitOk;
}

}  // namespace

int rank_analysis_main(int argc, char** argv, const DeviceChoice& devices, const MpiChoice& mpi) {
  CLI::App app;
  describe_app(app);
  AnalyseOptions opt;
  InputOptions in;
  MethodOptions method;
  ReportOptions rep;
  MpiOptions mpi_options;
  in.add_to(app, opt);
  method.add_to(app, opt, devices);
  rep.add_to(app);
  mpi_options.add_to(app);
  if (const int status = sb::parse_or_exit(app, argc, argv); status >= 0) return status;
  // Every refusal is one line on stderr and exit status 2 (under MPI: every process returns 2,
  // process 0 prints the line).
  const bool root = !mpi.collective || mpi.collective->root();
  auto refuse = [root](const std::string& why) {
    // The first line only: a library's message (c10::Error) can carry a backtrace after it.
    if (root) std::fprintf(stderr, "rank_analysis: %s\n", first_line(why).c_str());
    return sb::kExitBadInput;
  };
  if (const int status = listing(rep, in, refuse); status >= 0) return status;
  Doing doing;
  try {
    method.check(opt, in.estimate_d, rep.writes_spectrum());
    in.check(opt);
    rep.check(in.files);
    mpi_options.check(mpi);
    if (mpi.collective) {
      opt.collective = mpi.collective;
      if (!root) rep.quiet = true;
    }
    in.apply(opt);
    method.apply(opt, devices, rep.writes_spectrum() || in.estimate_d);
    // Every input is opened and checked before any is analysed, and every result is written
    // only once all have been analysed: a bad input anywhere in the list writes nothing.
    Prepared prepared = prepare(in, opt, doing);
    const auto results = analyse_all(in.files, prepared, opt, rep.quiet, doing);
    if (!root) return sb::kExitOk;  // process 0 prints and writes
    return report(rep, in, prepared, results);
  } catch (...) {
    // The one mapping (common/errors.h). The estimates of plan_analysis count the large buffers;
    // anything else running out ends here rather than as an uncaught std::bad_alloc, its line
    // naming the file being worked on.
    ErrorReport error = error_report(std::current_exception());
    if (error.kind == ErrorReport::Kind::memory && !doing.file.empty())
      error.line = doing.file + ": out of memory (std::bad_alloc) " + doing.what +
                   ": the process could not allocate what it needs";
    refuse(error.line);
    return error.status;
  }
}

}  // namespace sb::analysis
