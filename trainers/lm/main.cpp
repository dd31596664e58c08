// train_wordlm: AWD-LSTM word-level language model with any output head (Kanai et al. 2018,
// Tables 1-3): train (SGD -> NT-ASGD) -> finetune -> dump the test set's log-probabilities.

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include <cstdio>

#include "common/blas_core.h"
#include "trainers/lm/config.h"
#include "trainers/lm/trainer.h"
#include "trainers/lm/word_corpus.h"
#include "trainers/runkit/device.h"
#include "trainers/runkit/trainer_cli.h"

int main(int argc, char** argv) {
  sb::blas::use_best_core(argv);  // before any work: OpenBLAS's fast kernels (common/blas_core.h)
  CLI::App app{
      "Train an AWD-LSTM language model (Merity et al. 2018) with any output head, finetune it, "
      "and write the test set's log-output matrix to <out>/logprobs.h5.\n"
      "Settings come from the defaults (the paper's PTB values), then --config FILE (TOML, the "
      "keys below), then --<key> VALUE on the command line. Outputs: <out>/config.toml, "
      "metrics.jsonl, checkpoint.pt, best.pt, best_finetune.pt, logprobs.h5, final.json."};
  std::string until = "dump";
  app.add_option("--until", until,
                 "stop after this stage, checkpoint saved: train (the main SGD/NT-ASGD phase), "
                 "finetune, or dump (everything: the test-set dump and final.json); a later "
                 "--resume continues from there")
      ->check(CLI::IsMember({"train", "finetune", "dump"}))
      ->capture_default_str();
  return sb::runkit::trainer_main(
      app, argc, argv, sb::lm::descriptor(),
      [&](sb::lm::WordLmConfig config, const sb::runkit::TrainerRun& run) {
        const auto device =
            sb::runkit::resolve_device(config.device);  // fails here, before the corpus
        config.device = device.str();  // what config.toml records: cpu, cuda:0, ...
        auto [corpus, dir] = sb::lm::load_word_corpus(config);
        std::printf(
            "%s: %s, %s, vocabulary %lld; head %s; %d threads; device %s; run directory %s\n",
            config.dataset.c_str(), dir.c_str(), sb::runkit::split_sizes(corpus, "tokens").c_str(),
            static_cast<long long>(corpus.vocab.size()), config.head.c_str(), run.threads,
            sb::runkit::describe_device(device).c_str(), run.run_dir.c_str());
        sb::lm::WordLmTrainer trainer(config, std::move(corpus), run.run_dir);
        if (run.flags.resume) trainer.resume();
        trainer.stop_after_batches = run.flags.stop_after_batches;
        sb::runkit::handle_interrupts();
        const auto stop_phase = until == "train"      ? sb::lm::Phase::main
                                : until == "finetune" ? sb::lm::Phase::finetune
                                                      : sb::lm::Phase::done;
        return trainer.run(stop_phase);
      });
}
