#pragma once
// Training checkpoints: everything a run needs to continue bit-for-bit (model, ASGD averages,
// trigger history, RNG state, the carried LSTM state and in-epoch position after Ctrl-C).
// Written to "<path>.tmp.<pid>" and renamed into place, so a kill at any moment leaves either the
// previous checkpoint or the new one.

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "trainers/lm/awd_lstm.h"
#include "trainers/lm/nt_asgd.h"
#include "trainers/lm/train_state.h"

namespace sb::lm {

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
