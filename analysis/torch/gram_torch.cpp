#include "analysis/torch/gram_torch.h"

#include <torch/torch.h>

#include <chrono>
#include <cstring>
#include <utility>
#include <vector>

#include "common/duration.h"
#include "common/errors.h"

namespace sb::analysis {
namespace {

using clock_type = std::chrono::steady_clock;

torch::Device parse_device(const std::string& name) {
  std::unique_ptr<torch::Device> device;
  try {
    device = std::make_unique<torch::Device>(name);
  } catch (const c10::Error&) {
    throw OptionError("device", "cpu, cuda or cuda:N", "'" + name + "'");
  }
  if (device->is_cuda()) {
    if (!torch::cuda::is_available())
      throw OptionError::described(
          "device",
          "no CUDA device is visible to this LibTorch (torch::cuda::is_available() is false)");
    const auto count = static_cast<int64_t>(torch::cuda::device_count());
    if (device->has_index() && device->index() >= count)
      throw OptionError("device", "a device index below " + std::to_string(count),
                        std::to_string(device->index()));
  } else if (!device->is_cpu()) {
    throw OptionError("device", "cpu, cuda or cuda:N", "'" + name + "'");
  }
  return *device;
}

GramMatrix accumulate(const MatrixSource& source, int64_t block_rows, torch::Device device,
                      FiniteScan* scan, SpectrumTiming* timing, const Progress& progress) {
  const int64_t rows = source.rows(), cols = source.cols();
  const bool f64 = source.float64();
  const auto on_device = torch::TensorOptions().device(device);
  // One host buffer (pinned for an asynchronous-capable copy on CUDA), in the stored dtype.
  auto buffer = torch::empty({std::min(block_rows, std::max<int64_t>(rows, 1)), cols},  // (B, M)
                             torch::TensorOptions()
                                 .dtype(f64 ? torch::kFloat64 : torch::kFloat32)
                                 .pinned_memory(device.is_cuda()));
  auto g = torch::zeros({cols, cols}, on_device.dtype(torch::kFloat64));  // (M, M)
  auto negative = torch::zeros({}, on_device.dtype(torch::kBool));
  auto positive = torch::zeros({}, on_device.dtype(torch::kBool));
  SpectrumTiming t;
  for (int64_t begin = 0; begin < rows; begin += block_rows) {
    const int64_t count = std::min(block_rows, rows - begin);
    auto start = clock_type::now();
    // The device may still be multiplying the previous block: the copy below waits for it (it is
    // ordered on the stream), so the buffer is reused only after its last copy.
    if (f64) {
      source.read_rows(begin, count, buffer.data_ptr<double>());
      scan->scan(buffer.data_ptr<double>(), begin, count, cols);
    } else {
      source.read_rows(begin, count, buffer.data_ptr<float>());
      scan->scan(buffer.data_ptr<float>(), begin, count, cols);
    }
    t.read += seconds_since(start);
    start = clock_type::now();
    if (scan->clean()) {
      // H2D in the stored dtype (half the bytes for float32), then float64 on the device.
      auto block = buffer.narrow(/*dim=*/0, /*start=*/0, count).to(device).to(torch::kFloat64);
      g.addmm_(block.t(), block);  // G += B^T B, (M, M)
      negative.logical_or_((block < 0).any());
      positive.logical_or_((block > 0).any());
    }
    t.accumulate += seconds_since(start);
    if (progress) progress(begin + count, rows);
  }
  GramMatrix gram;
  gram.rows = rows;
  gram.cols = cols;
  if (!scan->clean()) return gram;
  const auto start = clock_type::now();
  // G is symmetric and complete: its row-major bytes are the column-major matrix the host wants.
  const auto host = g.cpu();  // waits for the device
  gram.g.resize(static_cast<size_t>(cols * cols));
  std::memcpy(gram.g.data(), host.data_ptr<double>(), gram.g.size() * sizeof(double));
  gram.same_sign = !(negative.item<bool>() && positive.item<bool>());
  t.accumulate += seconds_since(start);
  if (timing != nullptr) {
    timing->read += t.read;
    timing->accumulate += t.accumulate;
  }
  return gram;
}

std::vector<double> singular_values(GramMatrix&& gram, torch::Device device,
                                    SpectrumTiming* timing) {
  const auto start = clock_type::now();
  const int64_t m = gram.cols;
  auto g = torch::from_blob(gram.g.data(), {m, m}, torch::kFloat64).to(device);  // (M, M)
  const auto lambda = at::linalg_eigvalsh(g, "U");                               // ascending, (M,)
  const auto sigma = lambda.clamp_min(0).sqrt().flip(/*dims=*/{0}).to(torch::kCPU).contiguous();
  std::vector<double> out(sigma.data_ptr<double>(), sigma.data_ptr<double>() + m);
  gram.g.clear();
  gram.g.shrink_to_fit();
  if (timing != nullptr) timing->solve += seconds_since(start);
  return out;
}

}  // namespace

GramBackend torch_gram_backend(const std::string& name) {
  const torch::Device device = parse_device(name);
  GramBackend b;
  b.device = device.str();
  b.solver = "torch eigvalsh (" + b.device + ")";
  b.accumulate = [device](const MatrixSource& source, int64_t block_rows, FiniteScan* scan,
                          SpectrumTiming* timing, const Progress& progress) {
    return accumulate(source, block_rows, device, scan, timing, progress);
  };
  b.singular_values = [device](GramMatrix&& gram, SpectrumTiming* timing) {
    return singular_values(std::move(gram), device, timing);
  };
  return b;
}

}  // namespace sb::analysis
