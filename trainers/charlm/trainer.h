#pragma once
// The character-level LM's training loop (Kanai et al. 2018, supplementary D.1): Adam on BPTT
// windows of a batchified symbol stream with the LSTM state carried between windows, validation
// after every epoch (best.pt keeps the best model), then the test set with batch size 1 (<eos> in
// front so that every test symbol is predicted) dumped to the HDF5 contract. Bits per character =
// mean NLL / ln 2. Run directory and exit statuses as train_nplm (trainers/nplm/trainer.h).

#include <torch/torch.h>

#include <memory>
#include <string>

#include "trainers/charlm/char_corpus.h"
#include "trainers/charlm/config.h"
#include "trainers/charlm/model.h"
#include "trainers/runkit/configured_trainer.h"
#include "trainers/runkit/metrics_log.h"
#include "trainers/runkit/trainer_cli.h"

namespace sb::charlm {

/// Mean NLL of the model over data (N, B) in segments of bptt with the state carried (eval mode,
/// no gradients).
double evaluate(CharLstm& model, const torch::Tensor& data, int64_t bptt,
                const runkit::ProgressFn& progress = {});

class CharTrainer : public runkit::ConfiguredTrainer<CharConfig, CharLstm> {
 public:
  CharTrainer(CharConfig config, CharCorpus corpus, std::string run_dir);
  const runkit::LmResult& result() const { return result_; }

 private:
  EpochEnd train_epoch() override;
  double validate() override;
  void report_epoch(double train_loss, double valid_loss, double seconds) override;
  void finish() override;

  CharCorpus corpus_;
  torch::Tensor train_data_, valid_data_;  // (N, batch_size), (N, eval_batch_size)
  runkit::LmResult result_;
};

/// What train_charlm does once its config is valid (runkit::trainer_main's body): spells the
/// corpus as characters, slices it, prints the run's line, trains (resuming with --resume),
/// evaluates and dumps.
int train(const CharConfig& config, const runkit::TrainerRun& run);

/// train_charlm's whole main: runkit::trainer_main over descriptor() and train. main.cpp declares
/// it itself instead of including this header, so that it compiles without LibTorch.
int cli_main(int argc, char** argv);

}  // namespace sb::charlm
