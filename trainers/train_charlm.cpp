// train_charlm: the character-level LSTM LM of Kanai et al. 2018 (supplementary D) with any
// single output head, on PTB spelled as characters (trainers/charlm/char_corpus.h): train ->
// best model's valid / test bits per character -> the test set's log-output matrix in
// <out>/logprobs.h5. With M ~ 50 symbols < d + 2, softmax is not bottlenecked here.

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>

#include "datasets/corpus.h"
#include "datasets/data_location.h"
#include "trainers/charlm/char_trainer.h"
#include "trainers/lm/process_setup.h"
#include "trainers/lm/trainer.h"

namespace {

void truncate(std::vector<int64_t>& ids, int64_t n) {
  if (n > 0 && static_cast<int64_t>(ids.size()) > n) ids.resize(static_cast<size_t>(n));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Train a character-level LSTM language model (Kanai et al. 2018, supplementary D) with any "
      "single output head on a word corpus spelled as characters (each word's characters, <sp> "
      "between words, <eos> at the end of a line), and write the test set's log-output matrix to "
      "<out>/logprobs.h5 (batch size 1, every test symbol).\nSettings: defaults, then --config "
      "FILE (TOML), then --<key> VALUE. Outputs: <out>/config.toml, metrics.jsonl, checkpoint.pt, "
      "best.pt, logprobs.h5, final.json (bits per character).\nExit status: 0 done, 2 bad input, "
      "4 non-finite loss, 130 interrupted (checkpoint saved; continue with --resume)."};
  sb::runkit::FlatArgs args;
  sb::charlm::char_config().add_options(app, args);
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
    const auto config = sb::charlm::char_config().resolve(args);
    sb::charlm::validate(config);
    sb::lm::keep_freed_memory();
    const int threads = sb::lm::set_threads(config.threads);
    const auto dir = sb::data::find_corpus_dir(config.dataset, config.data);
    auto chars = sb::charlm::char_corpus(sb::data::load_corpus(dir));
    truncate(chars.train, config.train_chars);
    truncate(chars.valid, config.valid_chars);
    truncate(chars.test, config.test_chars);
    const auto run_dir = sb::charlm::run_dir(config);
    if (!resume && std::filesystem::exists(std::filesystem::path(run_dir) / "checkpoint.pt"))
      throw std::runtime_error(run_dir +
                               "/checkpoint.pt exists: pass --resume to continue that run, or "
                               "choose another --out");
    std::printf(
        "%s characters: %s, %lld train / %lld valid / %lld test symbols, M = %lld; LSTM %lld x "
        "%lld (d = %lld), head %s; %d threads; run directory %s\n",
        config.dataset.c_str(), dir.c_str(), static_cast<long long>(chars.train.size()),
        static_cast<long long>(chars.valid.size()), static_cast<long long>(chars.test.size()),
        static_cast<long long>(chars.vocab.size()), static_cast<long long>(config.nlayers),
        static_cast<long long>(config.nhid), static_cast<long long>(config.nhid),
        config.head.c_str(), threads, run_dir.c_str());
    sb::charlm::CharTrainer trainer(config, std::move(chars), run_dir);
    if (resume) trainer.resume();
    trainer.stop_after_batches = stop_after;
    sb::lm::install_interrupt_handler();
    return trainer.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
