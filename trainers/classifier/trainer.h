#pragma once
// The training loop of the classification experiments (de Brebisson & Vincent 2016, sec. 4.1):
// minibatch SGD with Nesterov momentum, the learning rate halved after `patience` epochs without
// validation improvement, early stopping, then the best model on the test split.
// Run directory: config.toml, metrics.jsonl, checkpoint.pt (every epoch and on Ctrl-C), best.pt,
// final.json, and (not for mse) logprobs.h5: the test split's (T, 10) log-outputs in the contract
// of analysis/logprob_file.h, so rank_analysis reads it as any dump.
// A run is a function of its config and thread count: shuffles come from generators seeded by
// (seed, epoch), so a resumed run is bit-identical to an uninterrupted one.

#include <torch/torch.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trainers/classifier/config.h"
#include "trainers/classifier/conv_net.h"
#include "trainers/classifier/evaluate.h"
#include "trainers/classifier/splits.h"
#include "trainers/lm/run_log.h"

namespace sb::classifier {

/// Exit statuses, as train_wordlm's (trainers/lm/trainer.h).
enum RunStatus : int { kFinished = 0, kNonFinite = 4, kInterrupted = 130 };

struct ClassifierState {
  int64_t epoch = 1;       ///< the epoch in progress (1-based)
  int64_t batch = 0;       ///< batches of it done (0 at an epoch boundary)
  int64_t step = 0;        ///< optimiser steps in the whole run
  double lr = 0;           ///< current learning rate
  int64_t bad_epochs = 0;  ///< epochs since the last validation improvement
  int64_t best_epoch = 0;
  double best_valid_error = std::numeric_limits<double>::infinity();
  double best_valid_loss = std::numeric_limits<double>::infinity();
  double best_train_loss = 0;  ///< mean training loss of the best epoch
  bool done = false;           ///< training stopped (early stopping or the last epoch)
  double epoch_loss = 0;       ///< sum of batch loss x batch size within the epoch
  int64_t epoch_images = 0;
  std::string config;  ///< the keys that shape the trajectory, checked on resume
};

ConvNet make_conv_net(const ClassifierConfig& cfg);

class ClassifierTrainer {
 public:
  /// Seeds LibTorch, builds the model; creates run_dir.
  ClassifierTrainer(ClassifierConfig config, Splits splits, std::vector<std::string> classes,
                    std::string dataset, std::string run_dir);
  /// Continues from run_dir/checkpoint.pt; refuses a checkpoint of another config (names keys).
  void resume();
  /// Trains, then evaluates the best model and writes final.json (and logprobs.h5).
  int run();
  /// Testing: behave as if Ctrl-C came after this many batches of this process (0 = never).
  int64_t stop_after_batches = 0;
  const nlohmann::json& final_result() const { return final_; }
  ConvNet model{nullptr};

 private:
  enum class EpochEnd { completed, interrupted, non_finite };
  EpochEnd train_epoch();
  void end_epoch(const Evaluation& valid, double seconds);
  void finish();
  void save();
  std::string path(const std::string& name) const;

  ClassifierConfig config_;
  Splits splits_;
  std::vector<std::string> classes_;
  std::string dataset_, run_dir_;
  std::unique_ptr<torch::optim::SGD> optimizer_;
  ClassifierState state_;
  lm::MetricsLog metrics_;
  nlohmann::json final_;
  int64_t batches_this_process_ = 0;
};

}  // namespace sb::classifier
