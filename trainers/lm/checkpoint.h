#pragma once
// Training checkpoints: everything a run needs to continue bit-for-bit (model, ASGD averages,
// trigger history, RNG state, the carried LSTM state and in-epoch position after Ctrl-C).
// Written to "<path>.tmp.<pid>" and renamed into place, so a kill at any moment leaves either the
// previous checkpoint or the new one.

#include <torch/torch.h>

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "awd_lstm.h"
#include "nt_asgd.h"

namespace sb::lm {

enum class Phase { main, finetune, done };
std::string phase_name(Phase phase);
Phase phase_from_name(const std::string& name);

/// Scalars of the training loop. Together with the model, the averager, the RNG and the carried
/// state this is the whole state of a run.
struct TrainState {
  Phase phase = Phase::main;
  int64_t epoch = 1;       ///< the epoch in progress (1-based) within the phase
  int64_t batch = 0;       ///< batches of that epoch already done (0 at an epoch boundary)
  int64_t position = 0;    ///< token position in the training stream where the epoch continues
  int64_t step = 0;        ///< optimiser steps in the whole run
  bool asgd = false;       ///< averaging active (main phase after the trigger; all of finetune)
  int64_t asgd_epoch = 0;  ///< main-phase epoch at which the trigger fired (0 = never)
  double best_valid = std::numeric_limits<double>::infinity();  ///< of the current phase
  std::vector<double> trigger_history;
  // In-epoch accumulators (nonzero only in a Ctrl-C checkpoint):
  double epoch_loss = 0;  ///< sum of per-batch losses times their token counts
  int64_t epoch_tokens = 0;
  std::string config;  ///< the config keys that shape the trajectory (TOML), checked on resume
};

/// Writes the checkpoint atomically. `carried` may be empty (epoch boundary).
void save_checkpoint(const std::string& path, AwdLstm& model, const ParameterAverager& averager,
                     const TrainState& state, const std::vector<LstmState>& carried);

struct LoadedCheckpoint {
  TrainState state;
  std::vector<LstmState> carried;
};
/// Restores model parameters, averager and the global CPU RNG; returns the loop state.
/// Throws std::runtime_error "<path>: ..." on a missing or mismatched file.
LoadedCheckpoint load_checkpoint(const std::string& path, AwdLstm& model,
                                 ParameterAverager& averager);

/// Model weights only (best.pt): atomic like the checkpoint.
void save_weights(const std::string& path, AwdLstm& model);
void load_weights(const std::string& path, AwdLstm& model);

/// Atomically replaces `path` by what `write(tmp_path)` writes.
void write_atomically(const std::string& path,
                      const std::function<void(const std::string&)>& write);

}  // namespace sb::lm
