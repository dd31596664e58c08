#include "trainers/runkit/device.h"

#include "common/device_name.h"
#include "common/errors.h"

namespace sb::runkit {

torch::Device resolve_device(const std::string& name) {
  if (!is_device_name(name))
    throw OptionError::described("device",
                                 "device must be auto, cpu, cuda or cuda:N, got \"" + name + "\"");
  const bool available = torch::cuda::is_available();
  if (name == "auto")
    return available ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  if (name == "cpu") return torch::Device(torch::kCPU);
  if (!at::hasCUDA())
    throw OptionError::described(
        "--device",
        "--device " + name +
            ": this LibTorch has no CUDA support (a CPU build, e.g. Debian's libtorch-dev); use "
            "--device cpu, or build against a CUDA LibTorch (README, \"CUDA builds\")");
  if (!available)
    throw OptionError::described("--device",
                                 "--device " + name +
                                     ": no CUDA GPU is visible (torch::cuda::is_available() is "
                                     "false; CUDA_VISIBLE_DEVICES, driver?); use --device cpu");
  const torch::Device device(name);
  const auto count = static_cast<int64_t>(torch::cuda::device_count());
  const int64_t index = device.has_index() ? device.index() : 0;
  if (index >= count)
    throw OptionError::described(
        "--device", "--device " + name + ": only " + std::to_string(count) +
                        " CUDA device(s) visible (indices 0 to " + std::to_string(count - 1) + ")");
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

std::string describe_device(const torch::Device& device) {
  if (!device.is_cuda()) return "cpu";
  const auto count = torch::cuda::device_count();
  return device.str() + " (" + std::to_string(count) + " GPU" + (count == 1 ? "" : "s") +
         " visible)";
}

torch::Device device_of(const torch::nn::Module& module) {
  const auto params = module.parameters();
  return params.empty() ? torch::Device(torch::kCPU) : params.front().device();
}

}  // namespace sb::runkit
