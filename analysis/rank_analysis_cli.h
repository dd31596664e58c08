#pragma once
// The command line shared by rank_analysis (LAPACK here, LibTorch-free) and rank_analysis_torch
// (the Gram path on a LibTorch device, analysis/torch/): parse, analyse every file, print.

#include <functional>
#include <string>
#include <vector>

#include "analysis/analyse.h"

namespace sb::analysis {

/// The --device option of a binary: its choices (the first is the default), its help line, and
/// what choosing one does to the options (e.g. install a GramBackend). Without `configure` the
/// value must be one of the choices; with it, `configure` checks it and throws for a device that
/// cannot be used (reported as bad input, exit 2).
struct DeviceChoice {
  std::vector<std::string> choices;
  std::string help;
  std::function<void(const std::string& device, int threads, AnalyseOptions& options)> configure;
};

/// Parses argv, analyses every file, prints the table or JSON lines. Returns the exit status: 0
/// done, 2 bad input (one line on stderr), 3 --check found a bounded head above its bound.
int rank_analysis_main(int argc, char** argv, const DeviceChoice& devices);

}  // namespace sb::analysis
