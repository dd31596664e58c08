#include "trainers/runkit/checkpoint.h"

#include <filesystem>
#include <stdexcept>

#include "trainers/runkit/atomic_write.h"
#include "trainers/runkit/config_table.h"
#include "trainers/runkit/device.h"

namespace sb::runkit {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "sb-checkpoint";
constexpr int64_t kVersion = 1;

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

void load_into(torch::serialize::InputArchive& archive, torch::nn::Module& model,
               const std::string& path, const char* what) {
  try {
    model.load(archive);
  } catch (const c10::Error& e) {
    throw std::runtime_error(path + ": " + what +
                             " do not match this model's config: " + e.what_without_backtrace());
  }
}

}  // namespace

// ---------------------------------------------------------------- writer

CheckpointWriter::CheckpointWriter(const std::string& trainer, const std::string& config) {
  archive_.write("format", c10::IValue(std::string(kFormat)));
  archive_.write("version", c10::IValue(kVersion));
  archive_.write("trainer", c10::IValue(trainer));
  archive_.write("config", c10::IValue(config));
}

void CheckpointWriter::module(const torch::nn::Module& model) {
  torch::serialize::OutputArchive model_archive(archive_.compilation_unit());
  save_module_on_cpu(model, model_archive);
  archive_.write("model", model_archive);
}

void CheckpointWriter::optimizer(const torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive optimizer_archive(archive_.compilation_unit());
  optimizer.save(optimizer_archive);
  archive_.write("optimizer", optimizer_archive);
}

void CheckpointWriter::put(const std::string& key, int64_t value) {
  archive_.write("state." + key, c10::IValue(value));
}
void CheckpointWriter::put(const std::string& key, double value) {
  archive_.write("state." + key, c10::IValue(value));
}
void CheckpointWriter::put(const std::string& key, bool value) {
  archive_.write("state." + key, c10::IValue(value));
}
void CheckpointWriter::put(const std::string& key, const std::string& value) {
  archive_.write("state." + key, c10::IValue(value));
}
void CheckpointWriter::put(const std::string& key, const std::vector<double>& values) {
  archive_.write("state." + key, torch::tensor(values, torch::kDouble).reshape({-1}));
}

void CheckpointWriter::put_tensors(const std::string& key,
                                   const std::vector<torch::Tensor>& tensors) {
  archive_.write("tensors." + key + ".size", c10::IValue(static_cast<int64_t>(tensors.size())));
  for (size_t i = 0; i < tensors.size(); ++i)
    archive_.write("tensors." + key + "." + std::to_string(i), tensors[i].to(torch::kCPU));
}

void CheckpointWriter::save(const std::string& path, const torch::Device& device) {
  archive_.write("rng", generator_state(torch::kCPU));
  if (device.is_cuda()) archive_.write("rng_cuda", generator_state(device));
  write_atomically(path, [&](const std::string& tmp) { archive_.save_to(tmp); });
}

// ---------------------------------------------------------------- reader

CheckpointReader::CheckpointReader(std::string path, const std::string& trainer,
                                   const torch::Device& device)
    : path_(std::move(path)) {
  if (!fs::exists(path_)) throw std::runtime_error(path_ + ": no checkpoint to resume from");
  archive_.load_from(path_, device);  // every tensor onto the model's device
  c10::IValue format;
  if (!archive_.try_read("format", format) || !format.isString() || format.toStringRef() != kFormat)
    throw std::runtime_error(path_ + ": not a checkpoint of this project (no format '" +
                             std::string(kFormat) + "'; written by an older version?)");
  const auto version = field("version").toInt();
  if (version != kVersion)
    throw std::runtime_error(path_ + ": checkpoint version " + std::to_string(version) +
                             ", expected " + std::to_string(kVersion));
  const auto written_by = field("trainer").toStringRef();
  if (written_by != trainer)
    throw std::runtime_error(path_ + ": written by train_" + written_by + ", not train_" + trainer);
  config_ = field("config").toStringRef();
}

c10::IValue CheckpointReader::field(const std::string& key) {
  c10::IValue value;
  if (!archive_.try_read(key, value))
    throw std::runtime_error(path_ + ": checkpoint field '" + key + "' is missing");
  return value;
}

torch::Tensor CheckpointReader::tensor(const std::string& key) {
  torch::Tensor t;
  if (!archive_.try_read(key, t))
    throw std::runtime_error(path_ + ": checkpoint field '" + key + "' is missing");
  return t;
}

void CheckpointReader::check_config(
    const std::string& now, const std::function<std::string(const std::string&)>& normalise) const {
  const std::string saved = normalise ? normalise(config_) : config_;
  if (saved != now)
    throw std::runtime_error(path_ + ": written with a different config (" +
                             config_difference(saved, now) +
                             "); resume with the same settings or use a new --out");
}

void CheckpointReader::load_module(torch::nn::Module& model) {
  torch::serialize::InputArchive model_archive;
  if (!archive_.try_read("model", model_archive))
    throw std::runtime_error(path_ + ": checkpoint field 'model' is missing");
  load_into(model_archive, model, path_, "the weights");
}

void CheckpointReader::load_optimizer(torch::optim::Optimizer& optimizer) {
  torch::serialize::InputArchive optimizer_archive;
  if (!archive_.try_read("optimizer", optimizer_archive))
    throw std::runtime_error(path_ + ": checkpoint field 'optimizer' is missing");
  try {
    optimizer.load(optimizer_archive);
  } catch (const c10::Error& e) {
    throw std::runtime_error(
        path_ + ": the optimiser state does not match this model: " + e.what_without_backtrace());
  }
}

int64_t CheckpointReader::get_int(const std::string& key) { return field("state." + key).toInt(); }
double CheckpointReader::get_double(const std::string& key) {
  return field("state." + key).toDouble();
}
bool CheckpointReader::get_bool(const std::string& key) { return field("state." + key).toBool(); }
std::string CheckpointReader::get_string(const std::string& key) {
  return field("state." + key).toStringRef();
}

std::vector<double> CheckpointReader::get_doubles(const std::string& key) {
  const auto t = tensor("state." + key).to(torch::kCPU, torch::kDouble).contiguous();
  return {t.data_ptr<double>(), t.data_ptr<double>() + t.numel()};
}

std::vector<torch::Tensor> CheckpointReader::get_tensors(const std::string& key) {
  const auto n = field("tensors." + key + ".size").toInt();
  std::vector<torch::Tensor> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(tensor("tensors." + key + "." + std::to_string(i)));
  return out;
}

void CheckpointReader::restore_rng(const torch::Device& device) {
  set_generator_state(torch::kCPU, tensor("rng"));
  torch::Tensor rng_cuda;  // only a CUDA run wrote it; it means nothing to another device
  if (device.is_cuda() && archive_.try_read("rng_cuda", rng_cuda))
    set_generator_state(device, rng_cuda);
}

// ---------------------------------------------------------------- helpers

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

void save_weights(const std::string& path, const torch::nn::Module& model) {
  torch::serialize::OutputArchive archive;
  save_module_on_cpu(model, archive);
  write_atomically(path, [&](const std::string& tmp) { archive.save_to(tmp); });
}

void load_weights(const std::string& path, torch::nn::Module& model) {
  if (!fs::exists(path)) throw std::runtime_error(path + ": no such weights file");
  torch::serialize::InputArchive archive;
  archive.load_from(path, device_of(model));
  load_into(archive, model, path, "the weights");
}

}  // namespace sb::runkit
