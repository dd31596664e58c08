// train_bigram: the toy fifth trainer (tests/trainers/bigram/config.h): a thin main over its
// descriptor, like every trainer's.

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include <cstdio>

#include "common/blas_core.h"
#include "datasets/corpus.h"
#include "datasets/data_location.h"
#include "tests/trainers/bigram/trainer.h"
#include "trainers/runkit/trainer_cli.h"

int main(int argc, char** argv) {
  sb::blas::use_best_core(argv);
  CLI::App app{
      "Train a toy bigram language model with any single output head and write the test "
      "set's log-output matrix to <out>/logprobs.h5 (the tests' fifth trainer)."};
  return sb::runkit::trainer_main(
      app, argc, argv, sb::bigram::descriptor(),
      [](const sb::bigram::BigramConfig& config, const sb::runkit::TrainerRun& run) {
        auto corpus = sb::data::load_corpus(sb::data::find_corpus_dir(config.dataset, config.data));
        sb::runkit::truncate_splits(corpus, config.train_tokens, config.valid_tokens,
                                    config.test_tokens);
        std::printf("bigram: %s; head %s; run directory %s\n",
                    sb::runkit::split_sizes(corpus, "tokens").c_str(), config.head.c_str(),
                    run.run_dir.c_str());
        sb::bigram::BigramTrainer trainer(config, std::move(corpus), run.run_dir);
        return sb::runkit::run_trainer(trainer, run.flags);
      });
}
