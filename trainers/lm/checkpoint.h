#pragma once
// Training checkpoints: everything a run needs to continue bit-for-bit (model, ASGD averages,
// trigger history, RNG state, the carried LSTM state and in-epoch position after Ctrl-C).
// Written to "<path>.tmp.<pid>" and renamed into place, so a kill at any moment leaves either the
// previous checkpoint or the new one.
// Device-independent: every tensor is written from a CPU copy (the same file whatever the device
// of the run) and read onto the device of the model it is loaded into (trainers/lm/device.h), so
// a checkpoint of a CUDA run resumes on a CPU-only machine and vice versa. A CUDA run also saves
// its CUDA generator state, restored when it resumes on CUDA.

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

/// What torch::nn::Module::save writes (parameters, buffers, then each serializable child in a
/// nested archive, recursively), with every tensor copied to the CPU first.
void save_module_on_cpu(const torch::nn::Module& module, torch::serialize::OutputArchive& archive);

/// Atomically replaces `path` by what `write(tmp_path)` writes.
void write_atomically(const std::string& path,
                      const std::function<void(const std::string&)>& write);

}  // namespace sb::lm
