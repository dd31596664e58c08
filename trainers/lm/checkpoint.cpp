#include "trainers/lm/checkpoint.h"

#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#include "trainers/lm/device.h"

namespace sb::lm {

namespace fs = std::filesystem;

void write_atomically(const std::string& path,
                      const std::function<void(const std::string&)>& write) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  try {
    write(tmp);
    fs::rename(tmp, path);
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
}

namespace {

/// The state of the default generator of `device` (CPU, or a CUDA device's).
torch::Tensor generator_state(const torch::Device& device) {
  auto gen = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_generator_state(const torch::Device& device, const torch::Tensor& state) {
  auto gen = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state.to(torch::kCPU));  // the archive may have mapped it to the model's device
}

c10::IValue read(torch::serialize::InputArchive& archive, const std::string& path,
                 const std::string& key) {
  c10::IValue value;
  if (!archive.try_read(key, value))
    throw std::runtime_error(path + ": checkpoint field '" + key + "' is missing");
  return value;
}

}  // namespace

void save_module_on_cpu(const torch::nn::Module& module, torch::serialize::OutputArchive& archive) {
  // The layout of torch::nn::Module::save (LibTorch's nn/module.cpp), tensors copied to the CPU.
  for (const auto& p : module.named_parameters(/*recurse=*/false))
    archive.write(p.key(), p.value().to(torch::kCPU));
  for (const auto& b : module.named_buffers(/*recurse=*/false))
    archive.write(b.key(), b.value().to(torch::kCPU), /*is_buffer=*/true);
  for (const auto& child : module.named_children()) {
    if (!child.value()->is_serializable()) continue;
    torch::serialize::OutputArchive child_archive(archive.compilation_unit());
    save_module_on_cpu(*child.value(), child_archive);
    archive.write(child.key(), child_archive);
  }
}

void save_checkpoint(const std::string& path, AwdLstm& model, const ParameterAverager& averager,
                     const TrainState& s, const std::vector<LstmState>& carried) {
  torch::serialize::OutputArchive archive, model_archive;
  save_module_on_cpu(*model, model_archive);
  archive.write("model", model_archive);
  archive.write("phase", c10::IValue(phase_name(s.phase)));
  archive.write("epoch", c10::IValue(s.epoch));
  archive.write("batch", c10::IValue(s.batch));
  archive.write("position", c10::IValue(s.position));
  archive.write("step", c10::IValue(s.step));
  archive.write("asgd", c10::IValue(s.asgd));
  archive.write("asgd_epoch", c10::IValue(s.asgd_epoch));
  archive.write("best_valid", c10::IValue(s.best_valid));
  archive.write("trigger_history", torch::tensor(s.trigger_history, torch::kDouble).reshape({-1}));
  archive.write("epoch_loss", c10::IValue(s.epoch_loss));
  archive.write("epoch_tokens", c10::IValue(s.epoch_tokens));
  archive.write("config", c10::IValue(s.config));
  archive.write("rng", generator_state(torch::kCPU));
  const auto device = device_of(*model);
  if (device.is_cuda()) archive.write("rng_cuda", generator_state(device));
  archive.write("avg_count", c10::IValue(averager.count()));
  const auto& avg = averager.averages();
  archive.write("avg_size", c10::IValue(static_cast<int64_t>(avg.size())));
  for (size_t i = 0; i < avg.size(); ++i)
    archive.write("avg." + std::to_string(i), avg[i].to(torch::kCPU));
  archive.write("carried_size", c10::IValue(static_cast<int64_t>(carried.size())));
  for (size_t l = 0; l < carried.size(); ++l) {
    archive.write("carried.h." + std::to_string(l), carried[l].first.to(torch::kCPU));
    archive.write("carried.c." + std::to_string(l), carried[l].second.to(torch::kCPU));
  }
  write_atomically(path, [&](const std::string& tmp) { archive.save_to(tmp); });
}

LoadedCheckpoint load_checkpoint(const std::string& path, AwdLstm& model,
                                 ParameterAverager& averager) {
  if (!fs::exists(path)) throw std::runtime_error(path + ": no checkpoint to resume from");
  const auto device = device_of(*model);
  torch::serialize::InputArchive archive, model_archive;
  archive.load_from(path, device);  // every tensor onto the model's device
  if (!archive.try_read("model", model_archive))
    throw std::runtime_error(path + ": checkpoint field 'model' is missing");
  try {
    model->load(model_archive);
  } catch (const c10::Error& e) {
    throw std::runtime_error(
        path + ": the model does not match this config: " + e.what_without_backtrace());
  }
  LoadedCheckpoint out;
  auto& s = out.state;
  s.phase = phase_from_name(read(archive, path, "phase").toStringRef());
  s.epoch = read(archive, path, "epoch").toInt();
  s.batch = read(archive, path, "batch").toInt();
  s.position = read(archive, path, "position").toInt();
  s.step = read(archive, path, "step").toInt();
  s.asgd = read(archive, path, "asgd").toBool();
  s.asgd_epoch = read(archive, path, "asgd_epoch").toInt();
  s.best_valid = read(archive, path, "best_valid").toDouble();
  torch::Tensor history;
  archive.read("trigger_history", history);
  history = history.to(torch::kCPU).contiguous();
  s.trigger_history.assign(history.data_ptr<double>(),
                           history.data_ptr<double>() + history.numel());
  s.epoch_loss = read(archive, path, "epoch_loss").toDouble();
  s.epoch_tokens = read(archive, path, "epoch_tokens").toInt();
  s.config = read(archive, path, "config").toStringRef();
  torch::Tensor rng;
  archive.read("rng", rng);
  set_generator_state(torch::kCPU, rng);
  torch::Tensor rng_cuda;  // only a CUDA run wrote it; it means nothing to another device
  if (device.is_cuda() && archive.try_read("rng_cuda", rng_cuda))
    set_generator_state(device, rng_cuda);
  const auto avg_count = read(archive, path, "avg_count").toInt();
  const auto avg_size = read(archive, path, "avg_size").toInt();
  std::vector<torch::Tensor> avg(static_cast<size_t>(avg_size));
  for (int64_t i = 0; i < avg_size; ++i) archive.read("avg." + std::to_string(i), avg[i]);
  averager.restore(std::move(avg), avg_count);
  const auto carried = read(archive, path, "carried_size").toInt();
  for (int64_t l = 0; l < carried; ++l) {
    torch::Tensor h, c;
    archive.read("carried.h." + std::to_string(l), h);
    archive.read("carried.c." + std::to_string(l), c);
    out.carried.emplace_back(h, c);
  }
  return out;
}

void save_weights(const std::string& path, AwdLstm& model) {
  torch::serialize::OutputArchive archive;
  save_module_on_cpu(*model, archive);
  write_atomically(path, [&](const std::string& tmp) { archive.save_to(tmp); });
}

void load_weights(const std::string& path, AwdLstm& model) {
  if (!fs::exists(path)) throw std::runtime_error(path + ": no such weights file");
  torch::serialize::InputArchive archive;
  archive.load_from(path, device_of(*model));
  try {
    model->load(archive);
  } catch (const c10::Error& e) {
    throw std::runtime_error(
        path + ": the weights do not match this model: " + e.what_without_backtrace());
  }
}

}  // namespace sb::lm
