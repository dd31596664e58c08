#pragma once
// The spelling of a compute device in configs and on command lines: auto | cpu | cuda | cuda:N.
// LibTorch-free, so that configurations validate it without linking LibTorch; the trainers turn
// it into a torch::Device (trainers/runkit/device.h).

#include <string>

namespace sb {

/// "auto", "cpu", "cuda" or "cuda:N" (N a device index).
bool is_device_name(const std::string& name);

}  // namespace sb
