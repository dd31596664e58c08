// Training and evaluation speed of our word-level LM (issue 3/4), paired with the PyTorch
// reference bench/wordlm_reference.py: the same model, data, settings and output, so that
// bench/bench_train_speed.sh can time both in one run and report ratios.
//   build/bench/bench_wordlm --head softmax|sigsoftmax|mos|moss|adaptive|adaptive_sigsoftmax
//                            [--mode train|eval|both] [--batches 60] [--warmup 10]
//                            [--threads 2] [--experts 2] [--emsize 200] [--nhid 200]
//                            [--zipf-vocab M] [--cutoffs 2000,10000] [--glibc-default-heap]
//                            [--profile FILE [--profile-batches 10]]
// (--emsize / --nhid other than 200: our side only, e.g. the cpu profile's model for
// bench/bench_mixture_speed.sh; the reference is fixed at 200.)
// Start-up as train_wordlm: keep_freed_memory() (trainers/runkit/process_setup.h), then the
// threads. Model and settings: bench/wordlm_bench_model.h, on PTB (M = 10000), locked dropout 0.2.
// Training step as in trainer.cpp (trainers/lm/train_step.h): zero_grad, forward, head loss + AR
// (2) + TAR (1), backward, clip 0.25, SGD (lr 20, weight decay 1.2e-6). Batch 20, BPTT 35 fixed,
// the state carried across batches. That wordlm_reference.py computes the same losses from the same
// weights is tested by tests/trainers/lm/test_reference_parity.py (ctest -R "PyTorch reference").
// Evaluation: eval mode, no grad, forward + head loss on the validation split (batch 20).
// --profile: the per-operator step profile (bench/step_profile.h; bench/step_profile.py).
// Prints one JSON line per mode: {"impl":"cpp","head":...,"mode":...,"tokens_per_s":...,...}.

#include <torch/torch.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bench/loaded_library.h"
#include "bench/step_profile.h"
#include "bench/wordlm_bench_model.h"
#include "common/blas_core.h"
#include "common/duration.h"
#include "common/errors.h"
#include "datasets/batchify.h"
#include "datasets/corpus.h"
#include "datasets/data_location.h"
#include "trainers/heads/row_nll_function.h"
#include "trainers/lm/train_step.h"
#include "trainers/runkit/process_setup.h"

namespace {

using clock_type = std::chrono::steady_clock;

using namespace sb::bench;  // the settings shared with wordlm_reference.py

struct Settings {
  std::string head = "softmax", mode = "both", data;
  int64_t batches = 60, warmup = 10, experts = kExperts, batch_size = kBatch, bptt = kBptt;
  int64_t emsize = kEmsize, nhid = kNhid;
  int64_t zipf_vocab = 0;                  // > 0: a synthetic Zipf corpus of this many words
  std::string cutoffs = kAdaptiveCutoffs;  // the adaptive heads'
  int threads = 2;
  int64_t vocab = 0;  // M, once the corpus is loaded
  bool glibc_default_heap = false;
  bool composed_mixture_nll = false;
  bool fused_lstm = false;
  std::string profile;  // non-empty: profile this many more training steps into this file
  int64_t profile_batches = 10;
};

// A corpus for timing at a vocabulary PTB does not have: word ids drawn from Zipf's law,
// p(k) ~ 1 / (k + 1) over M words (ids already in frequency order, as sort_by_frequency leaves
// them), 300k training and 100k validation tokens, seed 0.
sb::data::Corpus zipf_corpus(int64_t m) {
  sb::data::Corpus c;
  for (int64_t k = 0; k < m; ++k) c.vocab.add("w" + std::to_string(k));
  std::vector<double> weights(static_cast<size_t>(m));
  for (int64_t k = 0; k < m; ++k)
    weights[static_cast<size_t>(k)] = 1.0 / static_cast<double>(k + 1);
  std::mt19937_64 gen(0);
  std::discrete_distribution<int64_t> zipf(weights.begin(), weights.end());
  for (int i = 0; i < 300000; ++i) c.train.push_back(zipf(gen));
  for (int i = 0; i < 100000; ++i) c.valid.push_back(zipf(gen));
  return c;
}

// Seconds spent in each phase over the timed batches, and their summed head loss.
struct Split {
  double forward = 0, backward = 0, optimizer = 0, loss = 0;
};

// The timed loops' BPTT windows: from row 0 of data (rows, B), back to row 0 when it runs out.
class Segments {
 public:
  Segments(const torch::Tensor& data, int64_t bptt) : data_(data), bptt_(bptt) {}
  std::pair<torch::Tensor, torch::Tensor> next() {  // (T, B) inputs and targets
    if (row_ + bptt_ + 1 > data_.size(0)) row_ = 0;
    auto batch = sb::data::get_batch(data_, row_, bptt_);
    row_ += bptt_;
    return batch;
  }

 private:
  torch::Tensor data_;
  int64_t bptt_, row_ = 0;
};

// Runs warmup + batches training steps from row 0 of data (rows, B); returns the timed seconds.
double train(sb::lm::AwdLstm& model, const torch::Tensor& data, const Settings& s, Split& split) {
  model->train();
  const auto params = model->parameters();
  auto state = model->zero_state(data.size(1));
  Segments segments(data, s.bptt);
  double total = 0;
  // The "phase::" scopes name the step's parts in a profile (--profile); without a profiler
  // they cost a thread-local check each.
  for (int64_t b = 0; b < s.warmup + s.batches; ++b) {
    torch::Tensor x, y;
    {
      RECORD_USER_SCOPE("phase::data");
      std::tie(x, y) = segments.next();
    }
    const bool timed = b >= s.warmup;
    const auto start = clock_type::now();
    {
      RECORD_USER_SCOPE("phase::zero_grad");
      model->zero_grad();
    }
    std::optional<sb::lm::SegmentLoss> step;
    {
      RECORD_USER_SCOPE("phase::forward");
      step = sb::lm::segment_loss(model, x, y, state, kAlpha, kBeta);
    }
    double value = 0;
    {
      RECORD_USER_SCOPE("phase::loss_item");
      value = step->raw_loss.item<double>();  // the trainer reads it every batch too
    }
    const auto after_forward = clock_type::now();
    {
      RECORD_USER_SCOPE("phase::backward");
      step->loss.backward();
    }
    const auto after_backward = clock_type::now();
    {
      RECORD_USER_SCOPE("phase::optimizer");
      sb::lm::clipped_sgd_step(params, kClip, kLr, kWdecay);
    }
    state = std::move(step->state);
    if (timed) {
      const auto end = clock_type::now();
      split.forward += std::chrono::duration<double>(after_forward - start).count();
      split.backward += std::chrono::duration<double>(after_backward - after_forward).count();
      split.optimizer += std::chrono::duration<double>(end - after_backward).count();
      total += std::chrono::duration<double>(end - start).count();
      split.loss += value;
    }
  }
  return total;
}

// warmup + batches evaluation segments (no grad, eval mode); returns the timed seconds.
double evaluate(sb::lm::AwdLstm& model, const torch::Tensor& data, const Settings& s,
                Split& split) {
  torch::NoGradGuard no_grad;
  model->eval();
  auto state = model->zero_state(data.size(1));
  Segments segments(data, s.bptt);
  double total = 0;
  for (int64_t b = 0; b < s.warmup + s.batches; ++b) {
    auto [x, y] = segments.next();
    const auto start = clock_type::now();
    auto out = model->forward(x, state);
    const double value = model->loss(out.output, y.reshape({-1})).item<double>();
    state = std::move(out.state);
    if (b >= s.warmup) {
      total += sb::seconds_since(start);
      split.loss += value;
    }
  }
  split.forward = total;
  return total;
}

// profile_batches more training steps (from row 0, a fresh state) under the profiler, then
// every GEMM shape they ran timed alone: bench/step_profile.h, read by bench/step_profile.py.
void profile_training(sb::lm::AwdLstm& model, const torch::Tensor& data, const Settings& s) {
  Settings steps = s;
  steps.warmup = 0;
  steps.batches = s.profile_batches;
  const auto gemms = sb::bench::profile_to_file(s.profile, [&] {
    Split split;
    train(model, data, steps, split);
  });
  sb::bench::time_gemm_shapes(s.profile, gemms);
}

void report(const Settings& s, const std::string& mode, double seconds, const Split& split) {
  const double tokens = static_cast<double>(s.batches * s.bptt * s.batch_size);
  const double per_batch_ms = 1e3 / static_cast<double>(s.batches);
  const nlohmann::json line = {{"impl", "cpp"},
                               {"head", s.head},
                               {"mode", mode},
                               {"tokens_per_s", tokens / seconds},
                               {"batches", s.batches},
                               {"forward_ms", split.forward * per_batch_ms},
                               {"backward_ms", split.backward * per_batch_ms},
                               {"optimizer_ms", split.optimizer * per_batch_ms},
                               {"mean_loss", split.loss / static_cast<double>(s.batches)},
                               {"threads", torch::get_num_threads()},
                               {"experts", is_mixture(s.head) ? s.experts : 0},
                               {"mixture_nll", s.composed_mixture_nll ? "composed" : "fused"},
                               {"lstm", s.fused_lstm ? "fused" : "aten"},
                               {"emsize", s.emsize},
                               {"nhid", s.nhid},
                               {"vocab", s.vocab},
                               {"corpus", s.zipf_vocab > 0 ? "zipf" : "ptb"},
                               {"blas", loaded_library("libopenblas")},
                               {"blas_core", sb::blas::blas_info().core}};
  std::printf("%s\n", line.dump().c_str());
  std::fflush(stdout);
}

/// The command line: every option into `s`, --blas-core into `print_core`.
void add_options(CLI::App& app, Settings& s, bool& print_core) {
  app.add_option("--head", s.head, "output head")
      ->check(CLI::IsMember(
          {"softmax", "sigsoftmax", "mos", "moss", "adaptive", "adaptive_sigsoftmax"}));
  app.add_option("--mode", s.mode, "what to time")->check(CLI::IsMember({"train", "eval", "both"}));
  app.add_option("--batches", s.batches, "timed batches per mode")->check(CLI::PositiveNumber);
  app.add_option("--warmup", s.warmup, "untimed batches before them")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--threads", s.threads, "torch threads")->check(CLI::PositiveNumber);
  app.add_option("--experts", s.experts, "K of the mos / moss head")->check(CLI::PositiveNumber);
  app.add_option("--emsize", s.emsize, "embedding size = d (the reference: 200)")
      ->check(CLI::PositiveNumber);
  app.add_option("--nhid", s.nhid, "units of the inner LSTM layer (the reference: 200)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--composed-mixture-nll", s.composed_mixture_nll,
               "the composed training NLL (decoder, log_output, gather) instead of the fused "
               "decoder + NLL node (linear_row_nll_function.h: softmax, sigsoftmax and the "
               "mixtures' experts), to measure what the fusion gains");
  app.add_flag("--fused-lstm", s.fused_lstm,
               "each LSTM layer's window as one autograd node (trainers/lm/fused_lstm.h; the "
               "trainers' fused_lstm = true) instead of at::lstm");
  app.add_flag("--glibc-default-heap", s.glibc_default_heap,
               "skip keep_freed_memory() (what train_wordlm does at start-up): glibc's default "
               "mmap/trim behaviour, for comparison");
  app.add_option("--data", s.data, "PTB directory (default: found as the trainer finds it)");
  app.add_option("--zipf-vocab", s.zipf_vocab,
                 "instead of PTB: a synthetic corpus of this many words with Zipf frequencies "
                 "(e.g. 33278, WikiText-2's vocabulary; our side only)")
      ->check(CLI::PositiveNumber);
  app.add_option("--profile", s.profile,
                 "train mode: after the timed batches, profile --profile-batches more training "
                 "steps per operator into this file (JSON lines; bench/step_profile.py reads it)");
  app.add_option("--profile-batches", s.profile_batches, "steps to profile")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--cutoffs", s.cutoffs, "the adaptive heads' cutoffs")->capture_default_str();
  app.add_flag("--blas-core", print_core,
               "print the OpenBLAS core this process runs (after choosing the best one, as the "
               "trainers do; OPENBLAS_CORETYPE wins) and exit: the bench gives it to every side");
}

}  // namespace

int main(int argc, char** argv) {
  sb::blas::use_best_core(argv);  // as train_wordlm: OpenBLAS's fast kernels (common/blas_core.h)
  CLI::App app{
      "Training / evaluation tokens/s of the AWD-LSTM LM, paired with "
      "bench/wordlm_reference.py (bench/bench_train_speed.sh runs both)."};
  Settings s;
  bool print_core = false;
  add_options(app, s, print_core);
  CLI11_PARSE(app, argc, argv);
  if (print_core) {
    std::printf("%s\n", sb::blas::blas_info().core.c_str());
    return sb::kExitOk;
  }
  try {
    if (!s.glibc_default_heap) sb::runkit::keep_freed_memory();  // as train_wordlm and dyneval
    sb::runkit::set_threads(s.threads);
    sb::heads::set_fused_row_nll_enabled(!s.composed_mixture_nll);
    torch::manual_seed(0);
    auto corpus = s.zipf_vocab > 0
                      ? zipf_corpus(s.zipf_vocab)
                      : sb::data::load_corpus(sb::data::find_corpus_dir("ptb", s.data));
    if (s.zipf_vocab == 0 && (s.head == "adaptive" || s.head == "adaptive_sigsoftmax"))
      sb::data::sort_by_frequency(corpus);  // as train_wordlm does for the adaptive heads
    s.vocab = corpus.vocab.size();
    auto model = make_bench_model(s.head, s.experts, corpus.vocab.size(), kDropout, s.emsize,
                                  s.nhid, s.cutoffs, s.fused_lstm);
    if (s.mode != "eval") {
      const auto data = sb::data::batchify(corpus.train, s.batch_size);  // (rows, B)
      Split split;
      const double seconds = train(model, data, s, split);
      report(s, "train", seconds, split);
      if (!s.profile.empty()) profile_training(model, data, s);
    }
    if (s.mode != "train") {
      const auto data = sb::data::batchify(corpus.valid, s.batch_size);  // (rows, B)
      Split split;
      const double seconds = evaluate(model, data, s, split);
      report(s, "eval", seconds, split);
    }
  } catch (...) {
    const sb::ErrorReport report = sb::error_report(std::current_exception());
    std::fprintf(stderr, "bench_wordlm: %s\n", report.line.c_str());
    return report.status;
  }
  return sb::kExitOk;
}
