#pragma once
// Where the LM binaries compute: --device auto | cpu | cuda | cuda:N (the config key `device`).
// Models, heads and batches live on that device; checkpoints are written from CPU copies and read
// onto the model's device (checkpoint.h), and the test-set dump copies its rows to the CPU, so a
// run started on a GPU continues, is scored and dumped on a CPU-only machine and vice versa.
//
// Determinism (README, "CUDA builds"): on the CPU a run is bit-identical for the same seed and
// threads. On CUDA it is not guaranteed: cuDNN's LSTM and the atomics of the embedding and index
// backward kernels may sum in a different order from run to run, and CPU and CUDA results differ
// at float32 rounding. The parameter initialisation is drawn on the CPU, so it is the same on
// both devices.

#include <torch/torch.h>

#include <string>

namespace sb::runkit {

/// The device a name (common/device_name.h) asks for: "auto" = cuda when
/// torch::cuda::is_available(), else cpu. Throws sb::OptionError, one line, when "cuda" or
/// "cuda:N" is asked for and this LibTorch has no CUDA or sees no GPU (N: fewer GPUs), and for a
/// name that is not a device.
torch::Device resolve_device(const std::string& name);

/// One line for the start-up message: "cpu" or "cuda:0 (1 GPU visible)".
std::string describe_device(const torch::Device& device);

/// The device of a module's first parameter (CPU for a module without parameters).
torch::Device device_of(const torch::nn::Module& module);

}  // namespace sb::runkit
