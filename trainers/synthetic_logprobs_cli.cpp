// synthetic_logprobs: random H (T x d), decoder W and optional bias through any head, written as
// a log-output file (the HDF5 contract of contract/logprob_file.h) for rank_analysis: Theorem 2
// checked in seconds, without training.
//
//   synthetic_logprobs --head softmax --T 6000 --M 2000 --d 64 --out synth.h5
//   rank_analysis --check synth.h5

#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <thread>

#include "common/blas_core.h"
#include "common/command_line.h"
#include "common/errors.h"
#include "trainers/synthetic_logprobs.h"

namespace sb {

int synthetic_logprobs_main(int argc, char** argv) {
  sb::blas::use_best_core(argv);  // before any work: OpenBLAS's fast kernels (common/blas_core.h)
  CLI::App app{
      "Draw random H (T x d), W (d x M) and an optional bias, pass H W + b through a head "
      "(mixtures through a randomly initialised MoS/MoSS), and write the log-output file "
      "(HDF5: /log_probs, /targets = each row's arg-max, attributes head, d, bias, ...). "
      "Analyse it with rank_analysis."};
  app.footer(
      "Example:\n"
      "  synthetic_logprobs --head softmax --T 6000 --M 2000 --d 64 --out synth.h5\n"
      "  rank_analysis --check synth.h5        # rank d + 2 = 66: Theorem 2's bound");
  std::string head = "softmax", out;
  sb::SyntheticOptions so;
  bool no_bias = false;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  app.add_option("--head", head, "head spec, e.g. softmax, sparse:k=20, mos:K=3")
      ->capture_default_str();
  app.add_option("--T", so.tokens, "rows (tokens)")->capture_default_str();
  app.add_option("--M", so.vocab, "columns (vocabulary)")->capture_default_str();
  app.add_option("--d", so.d, "decoder input size")->capture_default_str();
  app.add_flag("--no-bias", no_bias, "no decoder bias (bound d + 1 instead of d + 2)");
  app.add_flag("--logits", so.logits,
               "write the logits H W^T + b before the head (attribute input = \"logits\": "
               "bound d + bias) instead of the log-probabilities");
  app.add_option("--seed", so.seed, "seed")->capture_default_str();
  app.add_option("--dtype", so.dtype, "compute dtype of the log-probabilities")
      ->check(CLI::IsMember({"float32", "float64"}))
      ->capture_default_str();
  app.add_option("--logit-scale", so.logit_scale, "std of the logits")->capture_default_str();
  app.add_option("--threads", threads, "LibTorch threads (default: cores)")->capture_default_str();
  app.add_option("--out", out, "the log-output file to write (atomically)")->required();
  if (const int status = sb::parse_or_exit(app, argc, argv); status >= 0) return status;

  try {
    torch::set_num_threads(threads);  // one setting for LibTorch and the OpenMP OpenBLAS
    so.spec = sb::HeadSpec::parse(head);
    so.bias = !no_bias;
    const double ppl = sb::write_synthetic_logprobs(out, so);
    char ppl_text[32];  // logits have no perplexity
    std::snprintf(ppl_text, sizeof ppl_text, "ppl %.4g", ppl);
    const char* what = so.logits ? "logits" : ppl_text;
    std::printf("wrote %s (T = %lld, M = %lld, d = %lld, bias %d, head %s, %s)\n", out.c_str(),
                static_cast<long long>(so.tokens), static_cast<long long>(so.vocab),
                static_cast<long long>(so.d), so.bias ? 1 : 0, so.spec.to_string().c_str(), what);
  } catch (...) {
    return sb::report_error("synthetic_logprobs", std::current_exception());
  }
  return sb::kExitOk;
}

}  // namespace sb
