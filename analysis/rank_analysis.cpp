// rank_analysis: singular values and numerical rank of log-output matrices (the HDF5 contract of
// logprob_file.h, a plain HDF5 /log_probs, or a .npy array), with the Numerical Recipes
// threshold and Theorem 2's bound. LibTorch-free: synthetic inputs come from the separate
// synthetic_logprobs binary (trainers/); --device cuda hands the whole command line to
// rank_analysis_torch beside this binary (built only against a CUDA LibTorch: analysis/torch/).
//
//   rank_analysis [options] FILE [FILE2 ...]
//   rank_analysis --head softmax --d 400 --bias 1 logits.npy
//   rank_analysis --device cuda --rank-only logprobs.h5

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>

#include "analysis/rank_analysis_cli.h"
#include "common/blas_core.h"
#include "common/errors.h"
#ifdef SB_HAVE_MPI
#include <optional>

#include "analysis/mpi/mpi_session.h"
#endif

namespace {

/// The device named on the command line ("--device X" or "--device=X"), or "".
std::string device_argument(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) return argv[i + 1];
    if (a.rfind("--device=", 0) == 0) return a.substr(9);
  }
  return "";
}

/// rank_analysis_torch in this binary's directory (the build's analysis/torch/ or an install's
/// bin/), or "" when the build has none.
std::string torch_binary() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  for (const auto& p : {self.parent_path() / "rank_analysis_torch",
                        self.parent_path() / "torch" / "rank_analysis_torch"})
    if (std::filesystem::exists(p)) return p.string();
  return "";
}

bool has_flag(int argc, char** argv, const std::string& flag) {
  for (int i = 1; i < argc; ++i)
    if (argv[i] == flag) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  sb::blas::use_best_core(argv);  // before any work: OpenBLAS's fast kernels (common/blas_core.h)
  if (device_argument(argc, argv).rfind("cuda", 0) == 0) {  // cuda, cuda:N
    const std::string torch = torch_binary();
    if (torch.empty()) {
      std::fprintf(stderr,
                   "rank_analysis: --device cuda: this build has no rank_analysis_torch (it is "
                   "built only against a CUDA LibTorch: README, \"CUDA builds\"); use --device "
                   "cpu\n");
      return sb::kExitBadInput;
    }
    argv[0] = const_cast<char*>(torch.c_str());
    execv(torch.c_str(), argv);
    std::fprintf(stderr, "rank_analysis: --device cuda: cannot run %s: %s\n", torch.c_str(),
                 std::strerror(errno));
    return sb::kExitBadInput;
  }
  // rank_analysis_main reports its own errors; this is the last resort for anything that escapes
  // it (or the MPI session's start), so that no raw exception (std::bad_alloc from a large
  // allocation, say) reaches the user: the one mapping of common/errors.h, one line, exit 2.
  sb::analysis::MpiChoice mpi;
#ifdef SB_HAVE_MPI
  // MPI starts for --mpi or when mpirun / srun started several processes, and finalizes when
  // main returns, whatever the exit status.
  std::optional<sb::analysis::MpiSession> session;
  mpi.built = true;
#else
  (void)has_flag;
#endif
  try {
#ifdef SB_HAVE_MPI
    if (has_flag(argc, argv, "--mpi") || sb::analysis::launched_by_mpi()) {
      session.emplace(&argc, &argv);
      mpi.collective = &session->collective();
    }
#endif
    return sb::analysis::rank_analysis_main(
        argc, argv,
        {{"cpu", "cuda"},
         "cpu: LAPACK/OpenBLAS here; cuda: the Gram path on the GPU through rank_analysis_torch "
         "(built only against a CUDA LibTorch)",
         {}},
        mpi);
  } catch (...) {
    return sb::report_error("rank_analysis", std::current_exception(),
                            "see --budget-gb and --method");
  }
}
