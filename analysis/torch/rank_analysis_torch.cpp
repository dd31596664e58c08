// rank_analysis_torch: rank_analysis with the Gram path on a LibTorch device (analysis/torch/
// gram_torch.h): G = A^T A accumulated in float64 on a CUDA GPU and its eigenvalues solved there.
// Built only against a CUDA LibTorch (or with -DSB_ANALYSIS_TORCH=ON, which tests the same code on
// the CPU); `rank_analysis --device cuda` runs it. --rank-only still counts by inertia on the
// host (the certified count of rank_certificate.h) after G comes back.
//
//   rank_analysis_torch --device cuda [rank_analysis options] FILE [FILE2 ...]

#include <torch/torch.h>

#include "analysis/rank_analysis_cli.h"
#include "analysis/torch/gram_torch.h"
#include "common/blas_core.h"

int main(int argc, char** argv) {
  sb::blas::use_best_core(argv);  // before any work: OpenBLAS's fast kernels (common/blas_core.h)
  return sb::analysis::rank_analysis_main(
      argc, argv,
      {{"cuda", "cpu"},
       "the LibTorch device of the Gram path (--method auto becomes gram there); cpu runs the "
       "same code on the CPU",
       [](const std::string& device, int threads, sb::analysis::AnalyseOptions& options) {
         torch::set_num_threads(threads);
         options.backend = sb::analysis::torch_gram_backend(device);
         if (options.method == "auto") options.method = "gram";
       }});
}
