#include "trainers/runkit/run_state.h"

#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "trainers/lm/checkpoint.h"

namespace sb::runkit {
namespace {

c10::IValue read(torch::serialize::InputArchive& archive, const std::string& path,
                 const std::string& key) {
  c10::IValue value;
  if (!archive.try_read(key, value))
    throw std::runtime_error(path + ": checkpoint field '" + key + "' is missing");
  return value;
}

torch::Tensor read_tensor(torch::serialize::InputArchive& archive, const std::string& path,
                          const std::string& key) {
  torch::Tensor t;
  if (!archive.try_read(key, t))
    throw std::runtime_error(path + ": checkpoint field '" + key + "' is missing");
  return t;
}

void load_module(torch::serialize::InputArchive& archive, torch::nn::Module& model,
                 const std::string& path) {
  try {
    model.load(archive);
  } catch (const c10::Error& e) {
    throw std::runtime_error(
        path + ": the weights do not match this model's config: " + e.what_without_backtrace());
  }
}

}  // namespace

void save_run_checkpoint(const std::string& path, const torch::nn::Module& model,
                         const torch::optim::Optimizer& optimizer, const RunState& s) {
  torch::serialize::OutputArchive archive, model_archive, optimizer_archive;
  lm::save_module_on_cpu(model, model_archive);
  archive.write("model", model_archive);
  optimizer.save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);
  archive.write("epoch", c10::IValue(s.epoch));
  archive.write("batch", c10::IValue(s.batch));
  archive.write("step", c10::IValue(s.step));
  archive.write("lr", c10::IValue(s.lr));
  archive.write("best_valid", c10::IValue(s.best_valid));
  archive.write("bad_epochs", c10::IValue(s.bad_epochs));
  archive.write("epoch_loss", c10::IValue(s.epoch_loss));
  archive.write("epoch_tokens", c10::IValue(s.epoch_tokens));
  archive.write("config", c10::IValue(s.config));
  {
    auto gen = at::globalContext().defaultGenerator(torch::kCPU);
    std::lock_guard<std::mutex> lock(gen.mutex());
    archive.write("rng", gen.get_state());
  }
  archive.write("carried_size", c10::IValue(static_cast<int64_t>(s.carried.size())));
  for (size_t i = 0; i < s.carried.size(); ++i)
    archive.write("carried." + std::to_string(i), s.carried[i].to(torch::kCPU));
  lm::write_atomically(path, [&](const std::string& tmp) { archive.save_to(tmp); });
}

RunState load_run_checkpoint(const std::string& path, torch::nn::Module& model,
                             torch::optim::Optimizer& optimizer) {
  if (!std::filesystem::exists(path))
    throw std::runtime_error(path + ": no checkpoint to resume from");
  torch::serialize::InputArchive archive, model_archive, optimizer_archive;
  archive.load_from(path);
  if (!archive.try_read("model", model_archive))
    throw std::runtime_error(path + ": checkpoint field 'model' is missing");
  load_module(model_archive, model, path);
  if (!archive.try_read("optimizer", optimizer_archive))
    throw std::runtime_error(path + ": checkpoint field 'optimizer' is missing");
  optimizer.load(optimizer_archive);
  RunState s;
  s.epoch = read(archive, path, "epoch").toInt();
  s.batch = read(archive, path, "batch").toInt();
  s.step = read(archive, path, "step").toInt();
  s.lr = read(archive, path, "lr").toDouble();
  s.best_valid = read(archive, path, "best_valid").toDouble();
  s.bad_epochs = read(archive, path, "bad_epochs").toInt();
  s.epoch_loss = read(archive, path, "epoch_loss").toDouble();
  s.epoch_tokens = read(archive, path, "epoch_tokens").toInt();
  s.config = read(archive, path, "config").toStringRef();
  {
    const auto rng = read_tensor(archive, path, "rng");
    auto gen = at::globalContext().defaultGenerator(torch::kCPU);
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(rng);
  }
  const auto carried = read(archive, path, "carried_size").toInt();
  for (int64_t i = 0; i < carried; ++i)
    s.carried.push_back(read_tensor(archive, path, "carried." + std::to_string(i)));
  return s;
}

void save_weights(const std::string& path, const torch::nn::Module& model) {
  torch::serialize::OutputArchive archive;
  lm::save_module_on_cpu(model, archive);
  lm::write_atomically(path, [&](const std::string& tmp) { archive.save_to(tmp); });
}

void load_weights(const std::string& path, torch::nn::Module& model) {
  if (!std::filesystem::exists(path)) throw std::runtime_error(path + ": no such weights file");
  torch::serialize::InputArchive archive;
  archive.load_from(path);
  load_module(archive, model, path);
}

}  // namespace sb::runkit
