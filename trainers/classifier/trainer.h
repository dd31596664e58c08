#pragma once
// The training loop of the classification experiments (de Brebisson & Vincent 2016, sec. 4.1) on
// runkit's epoch loop: minibatch SGD with Nesterov momentum; an epoch is better when its
// validation error is lower (ties: a lower validation loss); the learning rate is halved after
// every `patience` epochs without improvement and training stops early after `early_stop`; then
// the best model on the test split.
// Run directory: config.toml, metrics.jsonl, checkpoint.pt (every epoch and on Ctrl-C), best.pt,
// final.json, and (not for mse) logprobs.h5: the test split's (T, 10) log-outputs in the contract
// of contract/logprob_file.h, so rank_analysis reads it as any dump.
// A run is a function of its config and thread count: shuffles come from generators seeded by
// (seed, epoch), so a resumed run is bit-identical to an uninterrupted one.

#include <torch/torch.h>

#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trainers/classifier/config.h"
#include "trainers/classifier/evaluate.h"
#include "trainers/classifier/model.h"
#include "trainers/classifier/splits.h"
#include "trainers/runkit/configured_trainer.h"
#include "trainers/runkit/trainer_cli.h"

namespace sb::classifier {

ConvNet make_conv_net(const ClassifierConfig& cfg);

class ClassifierTrainer : public runkit::ConfiguredTrainer<ClassifierConfig, ConvNet> {
 public:
  /// Seeds LibTorch, builds the model; writes nothing before run().
  ClassifierTrainer(ClassifierConfig config, Splits splits, std::vector<std::string> classes,
                    std::string dataset, std::string run_dir);
  const nlohmann::json& final_result() const { return final_; }

 private:
  // runkit::EpochTrainer's hooks.
  EpochEnd train_epoch() override;
  double validate() override;
  void report_epoch(double train_loss, double valid_loss, double seconds) override;
  bool take_as_best(double valid_loss, double train_loss) override;
  void on_worse_epoch() override;
  void after_epoch(double valid_loss) override;
  void save_extra(runkit::CheckpointWriter& writer) const override;
  void load_extra(runkit::CheckpointReader& reader) override;
  void finish() override;

  void set_lr(double lr);

  Splits splits_;
  std::vector<std::string> classes_;
  std::string dataset_;
  Evaluation last_valid_;  ///< of the epoch just validated
  // The classifier's own checkpoint fields (runkit's RunState holds the rest; its best_valid is
  // the validation loss of the best epoch).
  int64_t best_epoch_ = 0;
  double best_valid_error_ = std::numeric_limits<double>::infinity();
  double best_train_loss_ = 0;  ///< mean training loss of the best epoch
  nlohmann::json final_;
};

/// What train_classifier does once its config is valid (runkit::trainer_main's body): finds and
/// loads the image set, makes the splits, prints the run's line, trains (resuming with
/// --resume), evaluates and dumps.
int train(const ClassifierConfig& config, const runkit::TrainerRun& run);

/// train_classifier's whole main: runkit::trainer_main over descriptor() and train. main.cpp
/// declares it itself instead of including this header, so that it compiles without LibTorch.
int cli_main(int argc, char** argv);

}  // namespace sb::classifier
