// train_nplm: Bengio et al.'s feed-forward neural LM with any single output head, as de Brebisson
// & Vincent (2016, sec. 4.4.1, Table 5) train it on PTB: train -> best model's valid/test ppl ->
// the test set's log-output matrix in <out>/logprobs.h5 (the contract rank_analysis reads).

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include <cstdio>

#include "common/blas_core.h"
#include "datasets/corpus.h"
#include "datasets/data_location.h"
#include "trainers/nplm/trainer.h"
#include "trainers/runkit/trainer_cli.h"

int main(int argc, char** argv) {
  sb::blas::use_best_core(argv);  // before any work: OpenBLAS's fast kernels (common/blas_core.h)
  CLI::App app{
      "Train a feed-forward neural language model (Bengio et al. 2003; de Brebisson & Vincent "
      "2016, sec. 4.4.1) with any single output head, and write the test set's log-output matrix "
      "to <out>/logprobs.h5.\nContexts span sentence boundaries (<eos> is a token; the first "
      "context of a split is padded with <eos>). Settings: defaults, then --config FILE (TOML), "
      "then --<key> VALUE. Outputs: <out>/config.toml, metrics.jsonl, checkpoint.pt, best.pt, "
      "logprobs.h5, final.json.\nExit status: 0 done, 2 bad input, 4 non-finite loss, 130 "
      "interrupted (checkpoint saved; continue with --resume)."};
  return sb::runkit::trainer_main(
      app, argc, argv, sb::nplm::descriptor(),
      [](const sb::nplm::NplmConfig& config, const sb::runkit::TrainerRun& run) {
        const auto dir = sb::data::find_corpus_dir(config.dataset, config.data);
        auto corpus = sb::data::load_corpus(dir);
        sb::runkit::truncate_splits(corpus, config.train_tokens, config.valid_tokens,
                                    config.test_tokens);
        std::printf(
            "%s: %s, %s, vocabulary %lld; nplm, context %lld, %lld x %lld ReLU, head %s; %d "
            "threads; run directory %s\n",
            config.dataset.c_str(), dir.c_str(), sb::runkit::split_sizes(corpus, "tokens").c_str(),
            static_cast<long long>(corpus.vocab.size()), static_cast<long long>(config.context),
            static_cast<long long>(config.layers), static_cast<long long>(config.hidden),
            config.head.c_str(), run.threads, run.run_dir.c_str());
        sb::nplm::NplmTrainer trainer(config, std::move(corpus), run.run_dir);
        return sb::runkit::run_trainer(trainer, run.flags);
      });
}
