#pragma once
// The layer between EpochTrainer and a trainer: what every trainer does the same way with its
// config and its model, written once. A trainer derives from ConfiguredTrainer<Config, Model>
// and supplies the rest of EpochTrainer's hooks (train_epoch, validate, report_epoch, finish and
// the optional ones); its constructor sets `model` and, unless it steps the weights itself,
// `optimizer_`.
//
// Config must have `seed`, `lr` and `epochs`; the trainer's descriptor (trainer_descriptor.h)
// gives its name and key table, from which config.toml (the whole config), the trajectory keys a
// resumed run compares, and a saved config read back come. Model is a TORCH_MODULE holder
// (constructed empty, set in the trainer's constructor).

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "contract/logprob_file.h"
#include "trainers/runkit/dump_rows.h"
#include "trainers/runkit/epoch_trainer.h"
#include "trainers/runkit/trainer_descriptor.h"

namespace sb::runkit {

template <class Config, class Model>
class ConfiguredTrainer : public EpochTrainer {
 public:
  Model model{nullptr};

 protected:
  /// Seeds LibTorch's generators with config.seed (the initial weights the subclass builds
  /// next), sets the loop's lr and trajectory config.
  ConfiguredTrainer(const TrainerDescriptor<Config>& descriptor, Config config, std::string run_dir)
      : EpochTrainer(descriptor.facts.kind, std::move(run_dir)),
        table_(descriptor.key_table()),
        config_(std::move(config)) {
    torch::manual_seed(static_cast<uint64_t>(config_.seed));  // CPU and CUDA generators
    state_.lr = config_.lr;
    state_.config = table_.trajectory_toml(config_);
  }

  torch::nn::Module& module() override { return *model; }
  torch::optim::Optimizer* optimizer() override { return optimizer_.get(); }
  int64_t epochs() const override { return config_.epochs; }
  std::string config_toml() const override { return table_.to_toml(config_); }
  /// Compared as configs, not as text: a key added since the checkpoint was written reads as its
  /// default, and the saved text is written again in today's format.
  std::string normalise_saved_config(const std::string& saved) const override {
    return table_.trajectory_toml(table_.load_text(saved, path("checkpoint.pt") + " config"));
  }

  /// The header of a test-set dump of this run, built here for every trainer: the model's
  /// output layer (head, d, decoder bias, final norm), M columns and T rows, and where the rows
  /// come from: the config's dataset (or `dataset`), split "test", seed and whole config.toml,
  /// and the columns' words (contract::make_header fills the rest).
  contract::LogProbHeader test_dump_header(const OutputLayer& layer, int64_t M, int64_t T,
                                           std::vector<std::string> vocab,
                                           std::string dataset = "") const {
    contract::DumpSource source{dataset.empty() ? config_.dataset : std::move(dataset), "test",
                                config_.seed, table_.to_toml(config_), std::move(vocab)};
    auto header = contract::make_header(layer.head, layer.d, layer.bias, M, T, std::move(source));
    header.final_norm = layer.final_norm;
    return header;
  }
  /// final.json's common keys as the config gives them: head, dataset, seed; best_model
  /// <run>/best.pt and dump <run>/logprobs.h5. The trainer sets valid_loss, dump_rows and
  /// dump_ppl, and whatever differs for it.
  FinalCommon final_common() const {
    FinalCommon c;
    c.head = config_.head.text();
    c.dataset = config_.dataset;
    c.seed = config_.seed;
    c.best_model = path("best.pt");
    c.dump = path("logprobs.h5");
    return c;
  }

  const ConfigTable<Config>& table_;
  Config config_;
  /// The trainer's optimiser, made in its constructor; checkpoints save and restore its state.
  /// Null where the trainer steps its parameters itself (the word LM's clipped SGD / ASGD).
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace sb::runkit
