#pragma once
// The toy bigram LM's training loop on runkit's epoch loop: plain SGD over the training bigrams
// in order, validation after every epoch (best.pt keeps the best model), then the best model's
// valid and test losses and the test-set dump (the HDF5 contract). Only the hooks a trainer must
// supply; everything else (checkpoint, resume, Ctrl-C, metrics.jsonl, final.json) is runkit's.

#include <torch/torch.h>

#include <memory>
#include <string>

#include "datasets/corpus.h"
#include "tests/trainers/bigram/config.h"
#include "tests/trainers/bigram/model.h"
#include "trainers/runkit/configured_trainer.h"
#include "trainers/runkit/trainer_cli.h"

namespace sb::bigram {

/// A split as (previous word, word) pairs; the first word's previous word is <eos>.
struct Bigrams {
  torch::Tensor previous;  // (T) int64
  torch::Tensor targets;   // (T) int64
};

class BigramTrainer : public runkit::ConfiguredTrainer<BigramConfig, Bigram> {
 public:
  /// corpus: already truncated to the config's *_tokens. Writes nothing before run().
  BigramTrainer(BigramConfig config, data::Corpus corpus, std::string run_dir);

 private:
  EpochEnd train_epoch() override;
  double validate() override;
  void report_epoch(double train_loss, double valid_loss, double seconds) override;
  void finish() override;
  double mean_nll(const Bigrams& split);

  data::Corpus corpus_;
  Bigrams train_, valid_, test_;
};

/// What train_bigram does once its config is valid (runkit::trainer_main's body).
int train(const BigramConfig& config, const runkit::TrainerRun& run);

/// train_bigram's whole main: runkit::trainer_main over descriptor() and train. main.cpp declares
/// it itself instead of including this header, so that it compiles without LibTorch.
int cli_main(int argc, char** argv);

}  // namespace sb::bigram
