// train_nplm: Bengio et al.'s feed-forward neural LM with any single output head, as de Brebisson
// & Vincent (2016, sec. 4.4.1, Table 5) train it on PTB: train -> best model's valid/test ppl ->
// the test set's log-output matrix in <out>/logprobs.h5 (the contract rank_analysis reads).

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>

#include "datasets/corpus.h"
#include "datasets/data_location.h"
#include "trainers/lm/process_setup.h"
#include "trainers/lm/trainer.h"
#include "trainers/nplm/nplm_trainer.h"

namespace {

void truncate(std::vector<int64_t>& ids, int64_t n) {
  if (n > 0 && static_cast<int64_t>(ids.size()) > n) ids.resize(static_cast<size_t>(n));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Train a feed-forward neural language model (Bengio et al. 2003; de Brebisson & Vincent "
      "2016, sec. 4.4.1) with any single output head, and write the test set's log-output matrix "
      "to <out>/logprobs.h5.\nContexts span sentence boundaries (<eos> is a token; the first "
      "context of a split is padded with <eos>). Settings: defaults, then --config FILE (TOML), "
      "then --<key> VALUE. Outputs: <out>/config.toml, metrics.jsonl, checkpoint.pt, best.pt, "
      "logprobs.h5, final.json.\nExit status: 0 done, 2 bad input, 4 non-finite loss, 130 "
      "interrupted (checkpoint saved; continue with --resume)."};
  sb::runkit::FlatArgs args;
  sb::nplm::nplm_config().add_options(app, args);
  bool resume = false;
  int64_t stop_after = 0;
  app.add_flag("--resume", resume,
               "continue the run in <out> from its checkpoint.pt (same config: bit-identical "
               "result for the same seed and threads)");
  app.add_option("--stop-after-batches", stop_after,
                 "testing: stop as Ctrl-C would after this many batches of this process")
      ->group("Testing");
  CLI11_PARSE(app, argc, argv);
  try {
    const auto config = sb::nplm::nplm_config().resolve(args);
    sb::nplm::validate(config);
    sb::lm::keep_freed_memory();
    const int threads = sb::lm::set_threads(config.threads);
    const auto dir = sb::data::find_corpus_dir(config.dataset, config.data);
    auto corpus = sb::data::load_corpus(dir);
    truncate(corpus.train, config.train_tokens);
    truncate(corpus.valid, config.valid_tokens);
    truncate(corpus.test, config.test_tokens);
    const auto run_dir = sb::nplm::run_dir(config);
    if (!resume && std::filesystem::exists(std::filesystem::path(run_dir) / "checkpoint.pt"))
      throw std::runtime_error(run_dir +
                               "/checkpoint.pt exists: pass --resume to continue that run, or "
                               "choose another --out");
    std::printf(
        "%s: %s, %lld train / %lld valid / %lld test tokens, vocabulary %lld; nplm, context %lld, "
        "%lld x %lld ReLU, head %s; %d threads; run directory %s\n",
        config.dataset.c_str(), dir.c_str(), static_cast<long long>(corpus.train.size()),
        static_cast<long long>(corpus.valid.size()), static_cast<long long>(corpus.test.size()),
        static_cast<long long>(corpus.vocab.size()), static_cast<long long>(config.context),
        static_cast<long long>(config.layers), static_cast<long long>(config.hidden),
        config.head.c_str(), threads, run_dir.c_str());
    sb::nplm::NplmTrainer trainer(config, std::move(corpus), run_dir);
    if (resume) trainer.resume();
    trainer.stop_after_batches = stop_after;
    sb::lm::install_interrupt_handler();
    return trainer.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
