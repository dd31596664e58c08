#pragma once
// The epoch loop the seed-paper LMs share (train_nplm, train_charlm): train an epoch, validate,
// keep the best model in best.pt, checkpoint after every epoch and on Ctrl-C / SIGTERM, resume
// bit for bit, stop on a non-finite loss; then the subclass's finish() (evaluate, dump,
// final.json). A subclass supplies its model, optimiser, config, one epoch of batches and the
// validation loss; the counters live in RunState so that the checkpoint holds them.
// Run directory: config.toml, metrics.jsonl, checkpoint.pt, best.pt, and what finish() writes.
// run() returns the exit statuses of train_wordlm: lm::kFinished, kNonFinite, kInterrupted.

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <string>

#include "trainers/lm/run_log.h"
#include "trainers/runkit/run_state.h"

namespace sb::runkit {

class EpochTrainer {
 public:
  /// Creates run_dir.
  explicit EpochTrainer(std::string run_dir);
  virtual ~EpochTrainer() = default;
  EpochTrainer(const EpochTrainer&) = delete;
  EpochTrainer& operator=(const EpochTrainer&) = delete;

  /// Continues from run_dir/checkpoint.pt; refuses one written with another trajectory config.
  void resume();
  /// Trains the remaining epochs, then finish(); returns the exit status.
  int run();

  /// Testing: behave as if Ctrl-C arrived after this many batches of this process (0 = never).
  int64_t stop_after_batches = 0;

 protected:
  enum class EpochEnd { completed, interrupted, non_finite };

  virtual torch::nn::Module& module() = 0;
  virtual torch::optim::Optimizer& optimizer() = 0;
  virtual int64_t epochs() const = 0;
  /// The whole config as written to config.toml.
  virtual std::string config_toml() const = 0;
  /// Trains from state_.batch to the epoch's end, or returns early (interrupted / non_finite).
  virtual EpochEnd train_epoch() = 0;
  /// Mean validation NLL of the current model.
  virtual double validate() = 0;
  /// Prints the end-of-epoch line and writes its metrics record (train and valid mean NLL).
  virtual void report_epoch(double train_loss, double valid_loss, double seconds) = 0;
  /// Called after an epoch that did not improve on best.pt (e.g. to decay the lr).
  virtual void on_worse_epoch() {}
  /// After the last epoch: best model, evaluation, dump, final.json.
  virtual void finish() = 0;

  std::string path(const std::string& name) const;
  /// Counts a finished batch of `tokens` targets and mean loss `loss`; returns true when the run
  /// must stop now (Ctrl-C, SIGTERM or stop_after_batches).
  bool count_batch(double loss, int64_t tokens);
  /// Prints the non-finite-loss error and writes its record; returns EpochEnd::non_finite.
  EpochEnd non_finite(double loss);
  /// Writes `final` to metrics.jsonl and, atomically, to final.json.
  void write_final(const nlohmann::json& final);

  std::string run_dir_;
  RunState state_;  ///< the subclass sets lr and config in its constructor
  lm::MetricsLog metrics_;

 private:
  void end_epoch(double valid_loss, double seconds);
  void save();
  int64_t batches_this_process_ = 0;
};

/// Progress of a stretch of batches between two log lines, and the run's ETA.
class IntervalMeter {
 public:
  /// first_batch: the batch the epoch (re)started at.
  explicit IntervalMeter(int64_t first_batch);
  void add(double loss, int64_t tokens);
  /// The progress line's figures after `batch` of `batches` in epoch `epoch` of `epochs`;
  /// resets the interval.
  lm::TrainProgress take(const std::string& phase, int64_t epoch, int64_t epochs, int64_t batch,
                         int64_t batches, double lr);

 private:
  using clock_type = std::chrono::steady_clock;
  int64_t first_batch_;
  clock_type::time_point epoch_start_, interval_start_;
  double loss_ = 0;
  int64_t batches_ = 0, tokens_ = 0;
};

}  // namespace sb::runkit
