#pragma once
// The character-level LM's training loop (Kanai et al. 2018, supplementary D.1): Adam on BPTT
// windows of a batchified symbol stream with the LSTM state carried between windows, validation
// after every epoch (best.pt keeps the best model), then the test set with batch size 1 (<eos> in
// front so that every test symbol is predicted) dumped to the HDF5 contract. Bits per character =
// mean NLL / ln 2. Run directory and exit statuses as train_nplm (nplm_trainer.h).

#include <torch/torch.h>

#include <memory>
#include <string>

#include "trainers/charlm/char_corpus.h"
#include "trainers/charlm/char_model.h"
#include "trainers/charlm/config.h"
#include "trainers/lm/run_log.h"
#include "trainers/runkit/run_state.h"

namespace sb::charlm {

struct CharResult {
  double valid_loss = 0;  ///< mean NLL (nats) of best.pt on valid, eval_batch_size columns
  double test_loss = 0;   ///< mean NLL (nats) over every test symbol, from the dump
  int64_t test_rows = 0;
};

/// Mean NLL of the model over data (N, B) in segments of bptt with the state carried (eval mode,
/// no gradients).
double evaluate(CharLstm& model, const torch::Tensor& data, int64_t bptt,
                const lm::ProgressFn& progress = {});

class CharTrainer {
 public:
  CharTrainer(CharConfig config, CharCorpus corpus, std::string run_dir);
  void resume();
  int run();
  const CharResult& result() const { return result_; }

  int64_t stop_after_batches = 0;
  CharLstm model{nullptr};

 private:
  enum class EpochEnd { completed, interrupted, non_finite };
  EpochEnd train_epoch();
  void end_epoch(double valid_loss, double seconds);
  void finish();
  void save();
  std::string path(const std::string& name) const;

  CharConfig config_;
  CharCorpus corpus_;
  std::string run_dir_;
  torch::Tensor train_data_, valid_data_;  // (N, batch_size), (N, eval_batch_size)
  std::unique_ptr<torch::optim::Adam> optimizer_;
  runkit::RunState state_;
  lm::MetricsLog metrics_;
  CharResult result_;
  int64_t batches_this_process_ = 0;
};

}  // namespace sb::charlm
