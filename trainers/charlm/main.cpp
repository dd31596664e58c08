// train_charlm: the character-level LSTM LM of Kanai et al. 2018 (supplementary D) with any
// single output head, on PTB spelled as characters (trainers/charlm/char_corpus.h): train ->
// best model's valid / test bits per character -> the test set's log-output matrix in
// <out>/logprobs.h5. With M ~ 50 symbols < d + 2, softmax is not bottlenecked here.

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include <cstdio>

#include "common/blas_core.h"
#include "datasets/corpus.h"
#include "datasets/data_location.h"
#include "trainers/charlm/trainer.h"
#include "trainers/runkit/trainer_cli.h"

int main(int argc, char** argv) {
  sb::blas::use_best_core(argv);  // before any work: OpenBLAS's fast kernels (common/blas_core.h)
  CLI::App app{
      "Train a character-level LSTM language model (Kanai et al. 2018, supplementary D) with any "
      "single output head on a word corpus spelled as characters (each word's characters, <sp> "
      "between words, <eos> at the end of a line), and write the test set's log-output matrix to "
      "<out>/logprobs.h5 (batch size 1, every test symbol).\nSettings: defaults, then --config "
      "FILE (TOML), then --<key> VALUE. Outputs: <out>/config.toml, metrics.jsonl, checkpoint.pt, "
      "best.pt, logprobs.h5, final.json (bits per character).\nExit status: 0 done, 2 bad input, "
      "4 non-finite loss, 130 interrupted (checkpoint saved; continue with --resume)."};
  return sb::runkit::trainer_main(
      app, argc, argv, sb::charlm::descriptor(),
      [](const sb::charlm::CharConfig& config, const sb::runkit::TrainerRun& run) {
        const auto dir = sb::data::find_corpus_dir(config.dataset, config.data);
        auto chars = sb::charlm::char_corpus(sb::data::load_corpus(dir));
        sb::runkit::truncate_splits(chars, config.train_chars, config.valid_chars,
                                    config.test_chars);
        std::printf(
            "%s characters: %s, %s, M = %lld; LSTM %lld x %lld (d = %lld), head %s; %d threads; "
            "run "
            "directory %s\n",
            config.dataset.c_str(), dir.c_str(), sb::runkit::split_sizes(chars, "symbols").c_str(),
            static_cast<long long>(chars.vocab.size()), static_cast<long long>(config.nlayers),
            static_cast<long long>(config.nhid), static_cast<long long>(config.nhid),
            config.head.c_str(), run.threads, run.run_dir.c_str());
        sb::charlm::CharTrainer trainer(config, std::move(chars), run.run_dir);
        return sb::runkit::run_trainer(trainer, run.flags);
      });
}
