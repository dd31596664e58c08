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
#include <nlohmann/json.hpp>
#include <thread>

#include "analysis/analyse.h"
#include "common/head_spec.h"

namespace sb::analysis {
namespace {

void print_table(const std::vector<contract::RankResult>& results) {
  std::printf("%-28s %-11s %6s %7s %5s %4s %6s %8s %8s %10s %9s %10s %9s %-13s %-6s %8s %s\n",
              "file", "head", "M", "T", "d", "bias", "bound", "rank_NR", "rank_np", "tol", "eps",
              "sigma_max", "gap@b", "verdict", "method", "seconds", "certificate");
  for (const auto& r : results) {
    const auto& h = r.header;
    const auto& p = r.report;
    std::string file = std::filesystem::path(r.source).filename().string();
    if (file.size() > 28) file = "..." + file.substr(file.size() - 25);
    const std::string rank_np = p.rank_numpy >= 0 ? std::to_string(p.rank_numpy) : "-";
    std::printf(
        "%-28s %-11s %6lld %7lld %5lld %4d %6lld %8lld %8s %10.3e %9.3e %10.4e %9.3g %-13s %-6s "
        "%8.2f %s\n",
        file.c_str(), h.head.c_str(), static_cast<long long>(h.M), static_cast<long long>(h.T),
        static_cast<long long>(h.d), h.bias ? 1 : 0, static_cast<long long>(p.bound),
        static_cast<long long>(p.rank), rank_np.c_str(), p.tol, p.eps, p.sigma_max, p.spectral_gap,
        p.verdict().c_str(), r.method.c_str(), r.seconds, p.certificate().c_str());
  }
  for (const auto& r : results) {
    const auto& p = r.report;
    if (p.theorem2_bounded && !p.within_bound)
      std::printf("! %s: head '%s' is bounded by Theorem 2 (rank <= %lld) but has rank %lld\n",
                  r.source.c_str(), r.header.head.c_str(), static_cast<long long>(p.bound),
                  static_cast<long long>(p.rank));
    if (!p.bound_binding)
      std::printf(
          "note: %s: the bound %lld is not below min(M, T) = %lld, so Theorem 2 does not "
          "constrain this matrix (any rank up to full is allowed): verdict bound_not_binding\n",
          r.source.c_str(), static_cast<long long>(p.bound),
          static_cast<long long>(std::min(r.header.M, r.header.T)));
    if (!p.resolvable)
      std::printf(
          "! %s: method '%s' resolves singular values only down to %.3e (%.1e sigma_max), "
          "above the tolerance %.3e: the rank may be underestimated; use --method exact "
          "--precision float64\n",
          r.source.c_str(), r.method.c_str(), p.resolution, p.resolution / p.sigma_max, p.tol);
    if (p.has_certificate && !p.certified)
      std::printf(
          "! %s: %lld singular value(s) may lie within the rounding of the float64 Gram matrix "
          "of tol (between %.4e and %.4e): the rank is %lld..%lld\n",
          r.source.c_str(), static_cast<long long>(p.rank_max - p.rank_min), p.tol_lo, p.tol_hi,
          static_cast<long long>(p.rank_min), static_cast<long long>(p.rank_max));
  }
}

/// --list-heads: every registry head (common/head_spec.h, in declaration order) with its facts,
/// as one JSON object {"heads": {"<name>": {"<fact>": bool, ...}, ...}} or as a table. The
/// pipeline reads the JSON instead of keeping its own copy of these facts (docs/design.md).
void print_head_facts(bool json) {
  struct Fact {
    const char* name;
    bool (*of)(HeadKind);
  };
  const Fact facts[] = {{"theorem2_bounded", [](HeadKind k) { return theorem2_bounded(k); }},
                        {"is_mixture", [](HeadKind k) { return is_mixture(k); }},
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

}  // namespace

int rank_analysis_main(int argc, char** argv, const DeviceChoice& devices) {
  CLI::App app{
      "Singular values and numerical rank of log-output matrices (T x M, rows = tokens).\n"
      "rank = #{sigma > tol}, tol = 0.5 sqrt(M + T + 1) sigma_max eps (Numerical Recipes);\n"
      "also numpy.linalg.matrix_rank's tol = sigma_max max(M, T) eps. Verdict against Theorem 2's\n"
      "bound d + 1 + bias.\n"
      "Inputs: HDF5 log-output files (/log_probs float32 or float64, with the attributes head, d,\n"
      "bias, ...); HDF5 files with only a 2-D /log_probs; .npy arrays (np.save, float32 or\n"
      "float64, C or Fortran order). For the last two, --head, --d and --bias supply what the\n"
      "verdict needs, and eps defaults to the data's dtype."};
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
      "  # every head and the facts the pipeline plans by (Theorem 2, mixture, -inf)\n"
      "  rank_analysis --list-heads --json\n"
      "Exit status: 0 done, 2 bad input (one line on stderr naming the file and the field; no\n"
      "output file), 3 --check found a Theorem-2-bounded head above its bound.");

  std::vector<std::string> files;
  AnalyseOptions opt;
  std::string out, out_dir;
  bool json = false, check = false, quiet = false, want_spectrum = false, rank_only = false,
       no_overlap = false, list_heads = false;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  double budget_gb = opt.budget_bytes / double(1ull << 30);

  // No CLI::ExistingFile: a missing path is bad input like any other (exit 2, one line).
  app.add_option("files", files, "log-output files: HDF5 (.h5) or numpy (.npy)");
  app.add_option("--method", opt.method,
                 "exact: LAPACK ?gesdd on the whole matrix; gram: float64 A^T A streamed in row "
                 "blocks, then ?syevd (memory independent of T, resolves sigma down to ~1.5e-8 "
                 "sigma_max); auto: gram for tall matrices when that resolves the tolerance and "
                 "fits the budget, else exact")
      ->check(CLI::IsMember({"exact", "gram", "auto"}))
      ->capture_default_str();
  app.add_option("--eps", opt.eps,
                 "machine epsilon of the threshold: float32, float64 or a number (default: the "
                 "file's compute_dtype attribute, else the data's dtype)");
  app.add_option("--precision", opt.precision,
                 "precision of the exact SVD: float32 or float64 (default: the file's "
                 "compute_dtype attribute, else the data's dtype)")
      ->check(CLI::IsMember({"float32", "float64"}));
  app.add_option("--head", opt.facts.head,
                 "head of a file without attributes (.npy, plain HDF5): registry name, e.g. "
                 "softmax; on a file with attributes it must agree");
  app.add_option("--d", opt.facts.d,
                 "d of a file without attributes: the size of the vector the decoder multiplies");
  app.add_option("--bias", opt.facts.bias, "bias of a file without attributes: 0 or 1");
  app.add_option("--block-rows", opt.block_rows, "gram: rows read per block")
      ->capture_default_str();
  app.add_option("--budget-gb", budget_gb, "auto: memory budget in GiB")->capture_default_str();
  app.add_flag("--json", json, "print one JSON object per line instead of the table");
  app.add_flag("--list-heads", list_heads,
               "print every head name with its facts (theorem2_bounded, is_mixture, "
               "may_output_neg_inf, rank_defined) and exit; with --json one object "
               "{\"heads\": {name: {fact: bool}}}");
  app.add_flag("--check", check,
               "exit with status 3 when a head bounded by Theorem 2 exceeds its bound (a bug)");
  app.add_flag("--quiet", quiet,
               "no progress lines on stderr (default: one every 10 s while the matrix streams)");
  app.add_option("--threads", threads, "BLAS threads (default: cores)")->capture_default_str();
  app.add_option("--out-dir", out_dir, "write DIR/<input name>.rank.h5 for every input");
  // --spectrum / --rank-only (gram method): the eigenvalues, or only the count above tol^2.
  auto* spectrum = app.add_flag(
      "--spectrum", want_spectrum,
      "gram: compute every eigenvalue of A^T A (the singular values, rank_numpy, the gap at "
      "the bound); implied by --out / --out-dir, which write the singular values");
  app.add_flag("--rank-only", rank_only,
               "gram: count the singular values above tol by inertia (power iteration for "
               "sigma_max, then Cholesky / LDL^T of A^T A - tol^2 I) instead of computing them; "
               "the default without --out / --out-dir. No singular values: rank_np and gap@b "
               "are not computed, and --out / --out-dir are refused. The exact method always "
               "computes the singular values")
      ->excludes(spectrum);
  app.add_flag("--no-overlap", no_overlap,
               "gram: read the next row block after dsyrk instead of beside it (for timing)");
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
  if (list_heads) {
    print_head_facts(json);
    return 0;
  }
  // OpenBLAS's own setting: in the OpenMP build (our binaries' DT_RPATH, cmake/Dependencies.cmake)
  // it sets the OpenMP thread count, in the pthread build its pool's size.
  openblas_set_num_threads(std::max(1, threads));
  if (devices.configure) {
    try {
      devices.configure(device, std::max(1, threads), opt);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank_analysis: --device %s: %s\n", device.c_str(), e.what());
      return 2;
    }
  }
  opt.budget_bytes = budget_gb * double(1ull << 30);

  try {
    check_model_facts(opt.facts);
    if (files.empty()) throw std::invalid_argument("no input files (see --help)");
    const bool writes_spectrum = !out.empty() || !out_dir.empty();
    if (rank_only && writes_spectrum)
      throw std::invalid_argument(
          "--rank-only computes no singular values, which --out / --out-dir write: drop one");
    opt.spectrum = want_spectrum || writes_spectrum;
    opt.overlap_read = !no_overlap;
    if (!out.empty() && files.size() != 1)
      throw std::invalid_argument("--out takes one input file; use --out-dir for " +
                                  std::to_string(files.size()));
    std::vector<contract::RankResult> results;
    for (const auto& f : files) {
      if (!quiet) {
        std::fprintf(stderr, "rank_analysis: analysing %s ...\n", f.c_str());
        opt.on_progress = [&f](const std::string& line) {
          std::fprintf(stderr, "rank_analysis: %s: %s\n", f.c_str(), line.c_str());
        };
      }
      results.push_back(analyse_file(f, opt));
      if (!out.empty()) contract::write_rank_result(out, results.back());
      if (!out_dir.empty()) {
        std::filesystem::create_directories(out_dir);
        const auto stem = std::filesystem::path(f).stem().string();
        contract::write_rank_result(out_dir + "/" + stem + ".rank.h5", results.back());
      }
    }
    if (json) {
      for (const auto& r : results) std::cout << contract::rank_result_json(r) << "\n";
    } else {
      print_table(results);
    }
    if (check)
      for (const auto& r : results)
        if (r.report.theorem2_bounded && !r.report.within_bound) return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank_analysis: %s\n", e.what());
    return 2;
  }
  return 0;
}

}  // namespace sb::analysis
