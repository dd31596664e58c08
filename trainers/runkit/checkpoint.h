#pragma once
// The one checkpoint format of every trainer (train_wordlm, train_nplm, train_charlm,
// train_classifier). The file is a 24-byte header and a payload:
//
//   bytes  0..7   "SBCKPT02" (the magic: a checkpoint of this project, version 2)
//   bytes  8..15  the payload's length in bytes (uint64, little-endian)
//   bytes 16..23  FNV-1a 64 of the payload (uint64, little-endian): the checksum written at save
//                 time and verified before anything is read, so a corrupted or truncated file
//                 is refused in one line instead of resuming with damaged weights
//   bytes 24..    the payload: a LibTorch archive (zip) holding
//
//   format         "sb-checkpoint", version 2: what the reader checks before anything else
//   trainer        "wordlm" | "nplm" | "charlm" | "classifier": a checkpoint resumes its own kind
//   config         the TOML of the keys that shape the run's trajectory, compared on resume
//   model          the module's parameters and buffers, copied to the CPU (Module::save's layout)
//   optimizer      the optimiser's state (absent for hand-written updates, e.g. the word LM)
//   rng, rng_cuda  the CPU generator; a CUDA run's generator too
//   state.<key>    the loop's scalars (int64, double, bool, string, list of doubles)
//   tensors.<key>  named lists of tensors (ASGD averages, the carried recurrent state)
//
// Device-independent: tensors are written from CPU copies and read onto the model's device, so a
// checkpoint of a CUDA run resumes on a CPU-only machine and vice versa. Written atomically
// (atomic_write.h): a kill at any moment leaves the previous checkpoint or the new one. Resuming
// from it continues bit for bit on the CPU (same seed, same threads).

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

namespace sb::runkit {

/// Collects a checkpoint in memory; save() writes it.
class CheckpointWriter {
 public:
  /// trainer: the kind that resumes it; config: trajectory TOML (see the file comment).
  CheckpointWriter(const std::string& trainer, const std::string& config);

  void module(const torch::nn::Module& model);
  void optimizer(const torch::optim::Optimizer& optimizer);
  void put(const std::string& key, int64_t value);
  void put(const std::string& key, double value);
  void put(const std::string& key, bool value);
  void put(const std::string& key, const std::string& value);
  void put(const std::string& key, const std::vector<double>& values);
  void put_tensors(const std::string& key, const std::vector<torch::Tensor>& tensors);

  /// Adds the generator states (the CUDA one when `device` is CUDA) and writes atomically.
  void save(const std::string& path, const torch::Device& device);

 private:
  torch::serialize::OutputArchive archive_;
};

/// Opens a checkpoint and hands its parts out. Every error is an sb::InputError (an
/// sb::FormatError when the file is missing or not a readable checkpoint) of one line that starts
/// with the path: "<path>: no checkpoint to resume from", "<path>: not a checkpoint
/// of this project ...", "<path>: truncated ...", "<path>: checksum mismatch ...", "<path>:
/// written by train_nplm, not train_charlm", "<path>: field 'state.epoch' is missing",
/// "<path>: parameter 'fc.weight' has shape [64, 16] in the file, [96, 24] in this model ...".
class CheckpointReader {
 public:
  /// Loads `path` with every tensor on `device`; checks the format and the trainer kind.
  CheckpointReader(std::string path, const std::string& trainer, const torch::Device& device);

  const std::string& path() const { return path_; }
  /// The saved trajectory config as written.
  const std::string& config() const { return config_; }
  /// Refuses a resume whose trajectory config differs: "<path>: written with a different config
  /// (a -> b; ...); resume with the same settings or use a new --out". `normalise` maps the saved
  /// text to the form of `now` (e.g. re-read and re-written, so that a key added since reads as
  /// its default); empty = compare as written.
  void check_config(const std::string& now,
                    const std::function<std::string(const std::string&)>& normalise = {}) const;

  void load_module(torch::nn::Module& model);
  void load_optimizer(torch::optim::Optimizer& optimizer);
  int64_t get_int(const std::string& key);
  double get_double(const std::string& key);
  bool get_bool(const std::string& key);
  std::string get_string(const std::string& key);
  std::vector<double> get_doubles(const std::string& key);
  std::vector<torch::Tensor> get_tensors(const std::string& key);
  /// Restores the CPU generator, and on a CUDA `device` the CUDA one when the file has it.
  void restore_rng(const torch::Device& device);

 private:
  c10::IValue field(const std::string& key);
  torch::Tensor tensor(const std::string& key);
  /// A field of the expected kind; "<path>: field '<key>': expected <kind>" otherwise.
  c10::IValue typed_field(const std::string& key, bool (c10::IValue::*is)() const,
                          const char* kind);

  std::string path_, config_;
  torch::serialize::InputArchive archive_;
};

/// What torch::nn::Module::save writes (parameters, buffers, then each serializable child in a
/// nested archive, recursively), with every tensor copied to the CPU first.
void save_module_on_cpu(const torch::nn::Module& module, torch::serialize::OutputArchive& archive);

/// Weights only (best.pt), atomically, from CPU copies.
void save_weights(const std::string& path, const torch::nn::Module& model);
/// Reads weights onto the model's device after comparing every parameter's and buffer's name and
/// shape with the model's. Throws one line: "<path>: no such weights file", "<path>: not a
/// weights file of this project (...)", "<path>: parameter 'rnns.0.weight_hh' has shape [96, 24]
/// in the file, [64, 16] in this model (weights of a model of another size: ...)" or "<path>:
/// parameter '...' is missing".
void load_weights(const std::string& path, torch::nn::Module& model);

/// FNV-1a 64 (Fowler, Noll, Vo) of `size` bytes: the checkpoint's checksum.
uint64_t fnv1a64(const char* data, size_t size);

}  // namespace sb::runkit
