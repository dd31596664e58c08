#pragma once
// rank_analysis's options, one struct per concern, as the trainers' key tables are: what is read
// (InputOptions), how the spectrum is computed (MethodOptions), what is printed and written
// (ReportOptions), and whether the process is one of several (MpiOptions). Each adds its options
// to the app (add_to), checks their values and combinations before any file is opened (check:
// sb::OptionError naming the option, the value and what is expected) and puts them into
// the AnalyseOptions the analysis reads (apply).

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "analysis/analyse.h"
#include "analysis/rank_analysis_cli.h"

namespace sb::analysis {

/// The input files, what their rows hold, and the model facts of a file without attributes.
struct InputOptions {
  std::vector<std::string> files;
  int64_t d = 0;
  int bias = 0;
  bool estimate_d = false;  ///< --estimate-d: print d from the largest gap instead of a verdict

  void add_to(CLI::App& app, AnalyseOptions& opt);
  /// --input's value, --eps, at least one file.
  void check(const AnalyseOptions& opt) const;
  /// --d and --bias where given.
  void apply(AnalyseOptions& opt) const;
  /// Where a file's bias comes from, for --estimate-d ("" when neither the file nor --bias says).
  std::string bias_source(bool plain_file) const;

 private:
  CLI::Option* d_option_ = nullptr;
  CLI::Option* bias_option_ = nullptr;
};

/// The method and everything that tunes it: the Gram path, the exact SVD, the sketch, threads,
/// the memory budget, the device.
struct MethodOptions {
  int threads = 1;  ///< BLAS threads (default: the cores)
  double budget_gb = 0;
  bool spectrum = false, rank_only = false, no_overlap = false, no_check = false,
       no_range_start = false, no_float64_finish = false;
  std::string device;

  void add_to(CLI::App& app, AnalyseOptions& opt, const DeviceChoice& devices);
  /// Values, and options that only another method reads (they would do nothing).
  void check(const AnalyseOptions& opt, bool estimate_d, bool writes_spectrum) const;
  /// The budget, --rank-only's route, the OpenBLAS threads, the device, whether the spectrum is
  /// computed and the row reads overlap. Throws sb::OptionError for a device that cannot
  /// be used.
  void apply(AnalyseOptions& opt, const DeviceChoice& devices, bool needs_spectrum) const;

 private:
  /// --sketch-*, --seed and --verdict-only.
  void add_sketch_options(CLI::App& app, AnalyseOptions& opt);
  bool sketch_given() const;
  CLI::Option* gram_ = nullptr;
  CLI::Option* precision_ = nullptr;
  CLI::Option* block_rows_ = nullptr;
  CLI::Option* budget_ = nullptr;
  std::vector<CLI::Option*> sketch_;  ///< --sketch-* and --verdict-only
};

/// What is printed and written: the table or JSON lines, --check's exit status, progress lines,
/// --out / --out-dir; and the two listings that analyse nothing (--list-heads, --blas).
struct ReportOptions {
  std::string out, out_dir;
  bool json = false, check_bound = false, quiet = false, list_heads = false, blas = false;

  void add_to(CLI::App& app);
  /// --out / --out-dir against the files: one file for --out, distinct result names for
  /// --out-dir, paths that can be written.
  void check(const std::vector<std::string>& files) const;
  /// Whether a result file is written (it holds the singular values).
  bool writes_spectrum() const { return !out.empty() || !out_dir.empty(); }
};

/// --mpi: run as one of the processes of an MPI launch.
struct MpiOptions {
  bool flag = false;

  void add_to(CLI::App& app);
  /// --mpi in a binary built without MPI.
  void check(const MpiChoice& mpi) const;
};

/// Where --out-dir writes the result of `input`: DIR/<input's stem>.rank.h5.
std::string result_path(const std::string& out_dir, const std::string& input);

}  // namespace sb::analysis
