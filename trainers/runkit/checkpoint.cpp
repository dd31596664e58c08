#include "trainers/runkit/checkpoint.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/errors.h"
#include "trainers/runkit/atomic_write.h"
#include "trainers/runkit/config_table.h"
#include "trainers/runkit/device.h"

namespace sb::runkit {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFormat = "sb-checkpoint";
constexpr int64_t kVersion = 2;
constexpr char kMagic[8] = {'S', 'B', 'C', 'K', 'P', 'T', '0', '2'};
constexpr size_t kHeaderBytes = 24;  // magic, payload length, checksum

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FormatError::described(path, "", path + ": cannot open: " + std::strerror(errno));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return std::move(bytes).str();
}

/// "[96, 24]"
std::string shape_text(const torch::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

/// Compares the archive's tensors with the module's parameters and buffers by name and shape,
/// nested as Module::save nests them; throws one line naming the first difference. LibTorch's
/// Module::load checks no shapes: weights of a model of another size would load and fail later
/// inside a matrix product.
void check_shapes(torch::serialize::InputArchive& archive, const torch::nn::Module& module,
                  const std::string& prefix, const std::string& path) {
  auto compare = [&](const std::string& key, const torch::Tensor& mine, bool is_buffer) {
    const std::string name = prefix + key;
    const std::string field = std::string(is_buffer ? "buffer" : "parameter") + " '" + name + "'";
    torch::Tensor stored;
    bool found = false;
    try {
      found = archive.try_read(key, stored, is_buffer);
    } catch (const c10::Error& e) {
      throw FormatError::described(
          path, field,
          path + ": " + field + " is unreadable (" + first_line(e.what_without_backtrace()) + ")");
    }
    if (!found)
      throw InputError::described(
          path, field, path + ": " + field + " is missing (weights of another model or head?)");
    if (stored.sizes() != mine.sizes())
      throw InputError::described(path, field,
                                  path + ": " + field + " has shape " + shape_text(stored) +
                                      " in the file, " + shape_text(mine) +
                                      " in this model (weights of a model of another size: compare "
                                      "the sizes and the head with the config that wrote them)");
  };
  for (const auto& p : module.named_parameters(/*recurse=*/false))
    compare(p.key(), p.value(), false);
  for (const auto& b : module.named_buffers(/*recurse=*/false)) compare(b.key(), b.value(), true);
  for (const auto& child : module.named_children()) {
    if (!child.value()->is_serializable()) continue;
    torch::serialize::InputArchive child_archive;
    bool found = false;
    try {
      found = archive.try_read(child.key(), child_archive);
    } catch (const c10::Error&) {
    }
    if (!found) {
      const std::string field = "module '" + prefix + child.key() + "'";
      throw InputError::described(
          path, field, path + ": " + field + " is missing (weights of another model or head?)");
    }
    check_shapes(child_archive, *child.value(), prefix + child.key() + ".", path);
  }
}

torch::Tensor generator_state(const torch::Device& device) {
  auto gen = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

void set_generator_state(const torch::Device& device, const torch::Tensor& state,
                         const std::string& path, const char* field) {
  auto gen = at::globalContext().defaultGenerator(device);
  std::lock_guard<std::mutex> lock(gen.mutex());
  try {
    gen.set_state(state.to(torch::kCPU));  // the archive may have mapped it to the model's device
  } catch (const c10::Error& e) {
    throw InputError::described(path, std::string("field '") + field + "'",
                                path + ": field '" + field + "': not a generator state of this " +
                                    "LibTorch (" + first_line(e.what_without_backtrace()) + ")");
  }
}

void load_into(torch::serialize::InputArchive& archive, torch::nn::Module& model,
               const std::string& path) {
  check_shapes(archive, model, "", path);
  try {
    model.load(archive);
  } catch (const c10::Error& e) {
    throw InputError::described(
        path, "",
        path + ": the weights do not match this model: " + first_line(e.what_without_backtrace()));
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
  std::ostringstream payload_stream;
  archive_.save_to(payload_stream);
  const std::string payload = std::move(payload_stream).str();
  std::string header(kMagic, sizeof kMagic);
  put_u64(header, payload.size());
  put_u64(header, fnv1a64(payload.data(), payload.size()));
  write_atomically(path, [&](const std::string& tmp) {
    write_bytes(tmp, path, {header, payload});
  });
}

// ---------------------------------------------------------------- reader

CheckpointReader::CheckpointReader(std::string path, const std::string& trainer,
                                   const torch::Device& device)
    : path_(std::move(path)) {
  if (!fs::exists(path_))
    throw FormatError::described(path_, "", path_ + ": no checkpoint to resume from");
  const std::string bytes = read_whole_file(path_);
  if (bytes.size() >= 4 && bytes.compare(0, 4, "PK\x03\x04") == 0)
    throw FormatError::described(
        path_, "header",
        path_ + ": not a checkpoint of this version (a zip archive without the SBCKPT02 header: " +
            "a weights file, a checkpoint of an older version, which does not resume, or another " +
            "program's file; start a new run with another --out)");
  if (bytes.size() < sizeof kMagic || bytes.compare(0, sizeof kMagic, kMagic, sizeof kMagic) != 0)
    throw FormatError::described(path_, "header",
                                 path_ + ": not a checkpoint of this project (it does not start " +
                                     "with " + std::string(kMagic, sizeof kMagic) + ")");
  if (bytes.size() < kHeaderBytes)
    throw FormatError::described(path_, "header",
                                 path_ + ": truncated: " + std::to_string(bytes.size()) +
                                     " bytes, shorter than the " + std::to_string(kHeaderBytes) +
                                     "-byte header");
  const uint64_t length = get_u64(bytes.data() + 8), stored = get_u64(bytes.data() + 16);
  const uint64_t held = bytes.size() - kHeaderBytes;
  if (held != length)
    throw FormatError::described(path_, "payload",
                                 path_ + ": " + (held < length ? "truncated" : "trailing bytes") +
                                     ": the header announces " + std::to_string(length) +
                                     " payload bytes, the file holds " + std::to_string(held));
  const uint64_t actual = fnv1a64(bytes.data() + kHeaderBytes, held);
  if (actual != stored)
    throw FormatError::described(path_, "payload",
                                 path_ + ": checksum mismatch (FNV-1a 64 of the payload is " +
                                     hex(actual) + ", the header says " + hex(stored) +
                                     "): the file is corrupt; resume from a copy or start again");
  try {
    archive_.load_from(bytes.data() + kHeaderBytes, held, device);  // tensors onto the device
  } catch (const c10::Error& e) {
    throw FormatError::described(path_, "payload",
                                 path_ + ": the payload is not a readable LibTorch archive (" +
                                     first_line(e.what_without_backtrace()) + ")");
  }
  if (typed_field("format", &c10::IValue::isString, "a string").toStringRef() != kFormat)
    throw FormatError::described(path_, "checkpoint field 'format'",
                                 path_ + ": not a checkpoint of this project (field 'format' is " +
                                     "not '" + std::string(kFormat) + "')");
  const auto version = typed_field("version", &c10::IValue::isInt, "an integer").toInt();
  if (version != kVersion)
    throw FormatError(path_, "checkpoint field 'version'", std::to_string(kVersion),
                      std::to_string(version));
  const auto written_by = typed_field("trainer", &c10::IValue::isString, "a string").toStringRef();
  if (written_by != trainer)
    throw InputError::described(
        path_, "checkpoint field 'trainer'",
        path_ + ": written by train_" + written_by + ", not train_" + trainer);
  config_ = typed_field("config", &c10::IValue::isString, "a string").toStringRef();
}

c10::IValue CheckpointReader::typed_field(const std::string& key, bool (c10::IValue::*is)() const,
                                          const char* kind) {
  c10::IValue value = field(key);
  if (!(value.*is)())
    throw InputError(path_, "checkpoint field '" + key + "'", kind, value.tagKind());
  return value;
}

c10::IValue CheckpointReader::field(const std::string& key) {
  c10::IValue value;
  bool found = false;
  try {
    found = archive_.try_read(key, value);
  } catch (const c10::Error& e) {
    throw FormatError::described(path_, "checkpoint field '" + key + "'",
                                 path_ + ": checkpoint field '" + key + "' is unreadable (" +
                                     first_line(e.what_without_backtrace()) + ")");
  }
  if (!found)
    throw InputError::described(path_, "checkpoint field '" + key + "'",
                                path_ + ": checkpoint field '" + key + "' is missing");
  return value;
}

torch::Tensor CheckpointReader::tensor(const std::string& key) {
  return typed_field(key, &c10::IValue::isTensor, "a tensor").toTensor();
}

void CheckpointReader::check_config(
    const std::string& now, const std::function<std::string(const std::string&)>& normalise) const {
  const std::string saved = normalise ? normalise(config_) : config_;
  if (saved != now)
    throw InputError::described(path_, "checkpoint field 'config'",
                                path_ + ": written with a different config (" +
                                    config_difference(saved, now) +
                                    "); resume with the same settings or use a new --out");
}

void CheckpointReader::load_module(torch::nn::Module& model) {
  torch::serialize::InputArchive model_archive;
  bool found = false;
  try {
    found = archive_.try_read("model", model_archive);
  } catch (const c10::Error&) {
  }
  if (!found)
    throw InputError::described(path_, "checkpoint field 'model'",
                                path_ + ": checkpoint field 'model' is missing");
  load_into(model_archive, model, path_);
}

void CheckpointReader::load_optimizer(torch::optim::Optimizer& optimizer) {
  torch::serialize::InputArchive optimizer_archive;
  try {
    if (!archive_.try_read("optimizer", optimizer_archive))
      throw InputError::described(path_, "checkpoint field 'optimizer'",
                                  path_ + ": checkpoint field 'optimizer' is missing");
    optimizer.load(optimizer_archive);
  } catch (const c10::Error& e) {
    throw InputError::described(path_, "checkpoint field 'optimizer'",
                                path_ + ": the optimiser state does not match this model: " +
                                    first_line(e.what_without_backtrace()));
  }
}

int64_t CheckpointReader::get_int(const std::string& key) {
  return typed_field("state." + key, &c10::IValue::isInt, "an integer").toInt();
}
double CheckpointReader::get_double(const std::string& key) {
  return typed_field("state." + key, &c10::IValue::isDouble, "a number").toDouble();
}
bool CheckpointReader::get_bool(const std::string& key) {
  return typed_field("state." + key, &c10::IValue::isBool, "a boolean").toBool();
}
std::string CheckpointReader::get_string(const std::string& key) {
  return typed_field("state." + key, &c10::IValue::isString, "a string").toStringRef();
}

std::vector<double> CheckpointReader::get_doubles(const std::string& key) {
  const auto t = tensor("state." + key).to(torch::kCPU, torch::kDouble).contiguous();
  return {t.data_ptr<double>(), t.data_ptr<double>() + t.numel()};
}

std::vector<torch::Tensor> CheckpointReader::get_tensors(const std::string& key) {
  const auto n = typed_field("tensors." + key + ".size", &c10::IValue::isInt, "an integer").toInt();
  std::vector<torch::Tensor> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(tensor("tensors." + key + "." + std::to_string(i)));
  return out;
}

void CheckpointReader::restore_rng(const torch::Device& device) {
  set_generator_state(torch::kCPU, tensor("rng"), path_, "rng");
  c10::IValue rng_cuda;  // only a CUDA run wrote it; it means nothing to another device
  if (device.is_cuda() && archive_.try_read("rng_cuda", rng_cuda))
    set_generator_state(device, tensor("rng_cuda"), path_, "rng_cuda");
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
  if (!fs::exists(path)) throw FormatError::described(path, "", path + ": no such weights file");
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path, device_of(model));
  } catch (const c10::Error&) {  // LibTorch's zip reader says only what it failed to find
    throw FormatError::described(path, "",
                                 path + ": not a weights file of this project (no readable " +
                                     "LibTorch archive: a truncated file, or another format)");
  }
  load_into(archive, model, path);
}

uint64_t fnv1a64(const char* data, size_t size) {
  uint64_t h = 14695981039346656037ULL;  // the FNV-1a 64 offset basis
  for (size_t i = 0; i < size; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 1099511628211ULL;  // the FNV 64 prime
  }
  return h;
}

}  // namespace sb::runkit
