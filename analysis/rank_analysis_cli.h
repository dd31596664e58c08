#pragma once
// The command line shared by rank_analysis (LAPACK here, LibTorch-free) and rank_analysis_torch
// (the Gram path on a LibTorch device, analysis/torch/): parse, analyse every file, print.

#include <functional>
#include <string>
#include <vector>

#include "analysis/analyse.h"
#include "analysis/collective.h"

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

/// --mpi: whether the binary was built with MPI (analysis/mpi/), and this process's part when it
/// runs as one of several (main starts MPI for --mpi or an MPI launch, analysis/collective.h).
struct MpiChoice {
  bool built = false;
  const Collective* collective = nullptr;
};

/// Parses argv, analyses every file, prints the table or JSON lines. Returns the exit status: 0
/// done, 2 bad input (one line on stderr), 3 --check found a bounded head above its bound. Under
/// MPI every process returns the same status and process 0 alone prints and writes.
int rank_analysis_main(int argc, char** argv, const DeviceChoice& devices,
                       const MpiChoice& mpi = {});

}  // namespace sb::analysis
