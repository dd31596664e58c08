#pragma once
// The training loop's own state: which phase a run is in (main SGD -> NT-ASGD, finetuning, done)
// and the scalars that, with the model, the averager, the RNG and the carried LSTM state, make up
// the whole state of a run. The trainer advances it; checkpoint.h saves and restores it.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace sb::lm {

/// main: SGD, then ASGD once NT-ASGD triggers; finetune: ASGD restarted from the best model;
/// done: finetuning stopped (the test-set dump follows).
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

}  // namespace sb::lm
