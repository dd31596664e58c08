#pragma once
// The loop state every trainer's checkpoint holds (runkit/checkpoint.h): where the run is
// (epoch, batch, step), the learning rate, the best validation loss so far and the epochs since,
// the running sums of the epoch in progress, whether training stopped, and, mid-epoch, the
// carried recurrent state. A trainer adds its own fields through EpochTrainer's save_extra /
// load_extra hooks.

#include <torch/torch.h>

#include <limits>
#include <string>
#include <vector>

#include "trainers/runkit/checkpoint.h"

namespace sb::runkit {

struct RunState {
  int64_t epoch = 1;  ///< the epoch in progress, 1-based (epochs + 1 once training is over)
  int64_t batch = 0;  ///< batches of that epoch already done (0 at an epoch boundary)
  int64_t step = 0;   ///< optimiser steps in the whole run
  double lr = 0;      ///< the current learning rate (may decay)
  double best_valid = std::numeric_limits<double>::infinity();  ///< loss of the best model
  int64_t bad_epochs = 0;    ///< epochs in a row without a better validation result
  double epoch_loss = 0;     ///< sum of batch losses times their target counts (this epoch)
  int64_t epoch_tokens = 0;  ///< targets (tokens, images) trained on in this epoch
  bool stopped = false;      ///< training ended before its last epoch (early stopping)
  std::string config;        ///< the TOML of the keys that shape the run, compared on resume
  /// Mid-epoch only: a recurrent model's carried state (e.g. LSTM h and c), else empty.
  std::vector<torch::Tensor> carried;
};

/// Writes every field of `state` but config (the writer holds it) into the checkpoint.
void put_run_state(CheckpointWriter& writer, const RunState& state);
/// Reads them back; config from the checkpoint as written.
RunState read_run_state(CheckpointReader& reader);

}  // namespace sb::runkit
