#pragma once
// The rank-analysis result file (rank.h5) and its JSON twin: /singular_values (float64,
// descending) plus every field of the report as root attributes. Written atomically.

#include <string>
#include <vector>

#include "contract/logprob_file.h"
#include "contract/rank_report.h"

namespace sb::contract {

struct RankResult {
  std::string source;  ///< the analysed log-output file
  LogProbHeader header;
  std::string method;      ///< "exact" | "gram"
  std::string gram;        ///< gram: "rows" (A A^T, T x T) | "columns" (A^T A, M x M); exact: ""
  std::string input;       ///< what the rows hold: "logprobs" | "logits" (analysis/input_kind.h)
  std::string input_from;  ///< "--input" | "attribute 'input'" | "detected"
  std::string input_note;  ///< detected: why, in one line for the table (not written to files)
  /// --method auto that changed its mind, or kept a Gram window within 1% instead of trying
  /// the sketch: why, in one line (rank.json "method_note")
  std::string method_note;
  std::string precision;  ///< of the SVD: "float32" | "float64"
  std::string solver;  ///< the LAPACK route: "sgesdd", "dsyevd_2stage", "power_iteration+cholesky"
  double seconds = 0;
  SpectrumTiming timing;     ///< read / accumulate / solve split of `seconds`
  int blas_threads = 0;      ///< OpenBLAS's thread count during the run
  std::string blas_library;  ///< the BLAS and its build (openblas_get_config)
  std::string blas_core;  ///< the kernel family it ran (openblas_get_corename; common/blas_core.h)
  double memory_estimate_mib = 0;  ///< the plan's peak estimate for the method (analyse.h)
  double peak_rss_mib = 0;         ///< the process's peak resident set when the analysis ended
  int processes = 1;               ///< processes that streamed the rows (rank_analysis --mpi)
  RankReport report;
  std::vector<double> singular_values;
};

void write_rank_result(const std::string& path, const RankResult& result);
/// One JSON object (no singular values): rank, tol, eps, sigma_max, bound, verdict, method,
/// seconds, M, T, head, ...
std::string rank_result_json(const RankResult& result);

}  // namespace sb::contract
