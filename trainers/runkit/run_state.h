#pragma once
// The state of a seed-paper training run (train_nplm, train_charlm) and its checkpoint: model
// weights, optimiser state, the global CPU generator, the loop's counters and, mid-epoch, the
// carried recurrent state. Written atomically (trainers/lm/checkpoint.h's write_atomically), so a
// kill at any moment leaves the previous checkpoint or the new one; resuming from it continues
// bit for bit (same seed, same threads).

#include <torch/torch.h>

#include <limits>
#include <string>
#include <vector>

namespace sb::runkit {

struct RunState {
  int64_t epoch = 1;  ///< the epoch in progress, 1-based (epochs + 1 once training is over)
  int64_t batch = 0;  ///< batches of that epoch already done
  int64_t step = 0;   ///< optimiser steps in the whole run
  double lr = 0;      ///< the current learning rate (may decay)
  double best_valid = std::numeric_limits<double>::infinity();  ///< mean NLL of best.pt
  int64_t bad_epochs = 0;  ///< epochs in a row without a better validation loss
  double epoch_loss = 0;   ///< sum of batch losses times their token counts (this epoch)
  int64_t epoch_tokens = 0;
  std::string config;  ///< the TOML of the keys that shape the run, compared on resume
  /// Mid-epoch only: a recurrent model's carried state (e.g. LSTM h and c), else empty.
  std::vector<torch::Tensor> carried;
};

void save_run_checkpoint(const std::string& path, const torch::nn::Module& model,
                         const torch::optim::Optimizer& optimizer, const RunState& state);

/// Restores the model, the optimiser and the CPU generator; returns the loop state. Throws
/// std::runtime_error "<path>: ..." for a missing file, a missing field or a model that does not
/// match.
RunState load_run_checkpoint(const std::string& path, torch::nn::Module& model,
                             torch::optim::Optimizer& optimizer);

/// Weights only (best.pt), atomically.
void save_weights(const std::string& path, const torch::nn::Module& model);
void load_weights(const std::string& path, torch::nn::Module& model);

}  // namespace sb::runkit
