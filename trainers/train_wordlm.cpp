// train_wordlm: AWD-LSTM word-level language model with any output head (Kanai et al. 2018,
// Tables 1-3): train (SGD -> NT-ASGD) -> finetune -> dump the test set's log-probabilities.

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>

#include "datasets/corpus.h"
#include "datasets/data_location.h"
#include "trainers/lm/config.h"
#include "trainers/lm/device.h"
#include "trainers/lm/process_setup.h"
#include "trainers/lm/trainer.h"

namespace {

void truncate(std::vector<int64_t>& ids, int64_t n) {
  if (n > 0 && static_cast<int64_t>(ids.size()) > n) ids.resize(static_cast<size_t>(n));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Train an AWD-LSTM language model (Merity et al. 2018) with any output head, finetune it, "
      "and write the test set's log-output matrix to <out>/logprobs.h5.\n"
      "Settings come from the defaults (the paper's PTB values), then --config FILE (TOML, the "
      "keys below), then --<key> VALUE on the command line. Outputs: <out>/config.toml, "
      "metrics.jsonl, checkpoint.pt, best.pt, best_finetune.pt, logprobs.h5, final.json."};
  sb::lm::ConfigArgs config_args;
  sb::lm::add_config_options(app, config_args);
  bool resume = false;
  int64_t stop_after = 0;
  app.add_flag("--resume", resume,
               "continue the run in <out> from its checkpoint.pt (same config, bit-identical "
               "result for the same seed and threads)");
  app.add_option("--stop-after-batches", stop_after,
                 "testing: stop as Ctrl-C would after this many batches of this process")
      ->group("Testing");
  std::string until = "dump";
  app.add_option("--until", until,
                 "stop after this stage, checkpoint saved: train (the main SGD/NT-ASGD phase), "
                 "finetune, or dump (everything: the test-set dump and final.json); a later "
                 "--resume continues from there")
      ->check(CLI::IsMember({"train", "finetune", "dump"}))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    auto config = sb::lm::resolve_config(config_args);
    const auto device = sb::lm::resolve_device(config.device);  // fails here, before the corpus
    config.device = device.str();  // what config.toml records: cpu, cuda:0, ...
    sb::lm::keep_freed_memory();
    const int threads = sb::lm::set_threads(config.threads);
    const auto dir = sb::data::find_corpus_dir(config.dataset, config.data);
    auto corpus = sb::data::load_corpus(dir);
    truncate(corpus.train, config.train_tokens);
    truncate(corpus.valid, config.valid_tokens);
    truncate(corpus.test, config.test_tokens);
    const auto run_dir = sb::lm::default_run_dir(config);
    if (!resume && std::filesystem::exists(std::filesystem::path(run_dir) / "checkpoint.pt"))
      throw std::runtime_error(run_dir +
                               "/checkpoint.pt exists: pass --resume to continue that run, "
                               "or choose another --out");
    std::printf(
        "%s: %s, %lld train / %lld valid / %lld test tokens, vocabulary %lld; head %s; "
        "%d threads; device %s; run directory %s\n",
        config.dataset.c_str(), dir.c_str(), static_cast<long long>(corpus.train.size()),
        static_cast<long long>(corpus.valid.size()), static_cast<long long>(corpus.test.size()),
        static_cast<long long>(corpus.vocab.size()), config.head.c_str(), threads,
        sb::lm::describe_device(device).c_str(), run_dir.c_str());
    sb::lm::WordLmTrainer trainer(config, std::move(corpus), run_dir);
    if (resume) trainer.resume();
    trainer.stop_after_batches = stop_after;
    sb::lm::install_interrupt_handler();
    const auto stop_phase = until == "train"      ? sb::lm::Phase::main
                            : until == "finetune" ? sb::lm::Phase::finetune
                                                  : sb::lm::Phase::done;
    return trainer.run(stop_phase);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
