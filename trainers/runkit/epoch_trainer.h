#pragma once
// The one epoch loop every trainer runs on (train_wordlm, train_nplm, train_charlm,
// train_classifier): train an epoch, validate, keep the best model, checkpoint after every epoch
// and on Ctrl-C / SIGTERM, resume bit for bit, stop on a non-finite loss; then the subclass's
// finish() (evaluate, dump, final.json).
//
// A subclass supplies its model, optimiser, config, one epoch of batches and the validation loss;
// the counters live in RunState so that the checkpoint holds them. Hooks, each with a default
// that the plain trainers (nplm, charlm) keep; every hook is one another trainer could want,
// and none does what another already does:
//   take_as_best / on_worse_epoch       what "better" means and what follows (the classifier:
//                                       lower error; lr decay in nplm and the classifier)
//   before_epoch                        phases, stage boundaries and the end of training (the
//                                       word LM: main -> NT-ASGD -> finetune, --until)
//   after_validate / save_best          around validation: probes of the weights validate() used,
//                                       and which weights are the best model (the word LM's
//                                       averaged weights, best_finetune.pt)
//   after_epoch                         the end of an epoch: the NT-ASGD trigger, early stopping
//   save_extra / load_extra             fields of its own in the one checkpoint
//   position                            where the run is, in messages and metrics records
//
// Run directory: config.toml, metrics.jsonl, checkpoint.pt, what save_best() writes (best.pt), and
// what finish() writes (final.json through write_final). run() returns a RunStatus
// (interrupt.h): kFinished, kNonFinite or kInterrupted.

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <optional>
#include <string>

#include "trainers/runkit/checkpoint.h"
#include "trainers/runkit/metrics_log.h"
#include "trainers/runkit/run_state.h"

namespace sb::runkit {

/// The keys every trainer's final.json holds at its top level (docs/design.md, "Run directory"),
/// typed once; write_final adds event, schema, trainer, steps and blas, and the trainer's own
/// section under its kind. ConfiguredTrainer::final_common fills what the config says.
struct FinalCommon {
  std::string head;     ///< the head as the config spells it
  std::string dataset;  ///< the data the results are on (the charlm: <corpus>_char)
  int64_t seed = 0;
  std::string best_model;  ///< the weights the results describe
  double valid_loss = 0;   ///< mean validation loss of best_model
  std::string dump;        ///< the log-output file, "" when none was written
  int64_t dump_rows = 0;
  std::optional<double> dump_ppl;  ///< null when no dump or not finite
};

/// What a language-model trainer measured of its best model (its result()): the mean NLL (nats)
/// of best.pt over every validation and test token, and the test-set dump's rows and ppl
/// attribute. A trainer with more derives from it (nplm: the top-1 errors).
struct LmResult {
  double valid_loss = 0, test_loss = 0;
  double dump_ppl = 0;
  int64_t dump_rows = 0;
};

class EpochTrainer {
 public:
  /// trainer: the kind named in checkpoints and final.json ("nplm", ...). Creates nothing: run()
  /// creates run_dir.
  EpochTrainer(std::string trainer, std::string run_dir);
  virtual ~EpochTrainer() = default;
  EpochTrainer(const EpochTrainer&) = delete;
  EpochTrainer& operator=(const EpochTrainer&) = delete;

  /// Continues from run_dir/checkpoint.pt; refuses one written by another trainer or with
  /// another trajectory config.
  void resume();
  /// Trains the remaining epochs, then finish(); returns the exit status.
  int run();

  /// Testing: behave as if Ctrl-C arrived after this many batches of this process (0 = never).
  int64_t stop_after_batches = 0;

 protected:
  enum class EpochEnd { completed, interrupted, non_finite };
  /// What before_epoch() decides: train an epoch, end training (save the checkpoint, then
  /// finish()), or stop the run here with kFinished after saving the checkpoint (a stage
  /// boundary: the word LM's --until).
  enum class Next { go_on, done, stop_here };

  virtual torch::nn::Module& module() = 0;
  /// The optimiser whose state the checkpoint keeps; nullptr for a hand-written update.
  virtual torch::optim::Optimizer* optimizer() = 0;
  virtual int64_t epochs() const = 0;
  /// The whole config as written to config.toml.
  virtual std::string config_toml() const = 0;
  /// Maps a checkpoint's saved trajectory config to the form of state_.config: re-read and
  /// written again, so that a key added since reads as its default and the text is compared in
  /// today's format.
  virtual std::string normalise_saved_config(const std::string& saved) const = 0;
  /// Trains from state_.batch to the epoch's end, or returns early (interrupted / non_finite).
  virtual EpochEnd train_epoch() = 0;
  /// Mean validation loss of the current model.
  virtual double validate() = 0;
  /// Prints the end-of-epoch line and writes its metrics record (train and valid mean loss).
  virtual void report_epoch(double train_loss, double valid_loss, double seconds) = 0;
  /// Whether this epoch is the best so far, so that save_best() follows; a trainer may record
  /// what it keeps about its best epoch here. Default: a lower validation loss.
  virtual bool take_as_best(double valid_loss, double /*train_loss*/) {
    return valid_loss < state_.best_valid;
  }
  /// After an epoch that did not improve (state_.bad_epochs already counted), e.g. a lr decay.
  virtual void on_worse_epoch() {}
  /// Before every epoch, and once more when the epochs are done: phase changes, the end of
  /// training, or a stop at a stage boundary. Default: done after epochs() epochs or an early stop.
  virtual Next before_epoch() {
    return state_.stopped || state_.epoch > epochs() ? Next::done : Next::go_on;
  }
  /// Right after validate(), with the weights it used (e.g. probes of the model).
  virtual void after_validate() {}
  /// Writes the best model's weights (state_.best_valid already updated); returns the file.
  virtual std::string save_best();
  /// At the end of an epoch, after the best / worse bookkeeping, before the counters advance;
  /// setting state_.stopped ends training (early stopping).
  virtual void after_epoch(double /*valid_loss*/) {}
  /// The trainer's own checkpoint fields; load_extra runs after the run state is restored (e.g.
  /// to set the optimiser's lr from state_.lr).
  virtual void save_extra(CheckpointWriter& /*writer*/) const {}
  virtual void load_extra(CheckpointReader& /*reader*/) {}
  /// Where the run is, in order: {"epoch": 3, "batch": 120} by default. Metrics records get
  /// these fields; messages read "epoch 3, batch 120" (position_text).
  virtual nlohmann::ordered_json position() const;
  /// After the last epoch: best model, evaluation, dump, final.json.
  virtual void finish() = 0;

  std::string path(const std::string& name) const;
  /// position() as text: "epoch 3, batch 120".
  std::string position_text() const;
  /// position()'s fields into a metrics record.
  void add_position(nlohmann::json& record) const;
  /// Counts a finished batch of `tokens` targets and mean loss `loss`; returns true when the run
  /// must stop now (Ctrl-C, SIGTERM or stop_after_batches).
  bool count_batch(double loss, int64_t tokens);
  /// Prints the non-finite-loss error and writes its record; returns EpochEnd::non_finite.
  EpochEnd non_finite(double loss);
  /// Writes final.json in the one schema (docs/design.md, "Run directory"): `common`'s keys,
  /// `section` the trainer's own under its kind; event, schema, trainer, steps and blas are added
  /// here. The record also goes to metrics.jsonl; it is returned.
  nlohmann::json write_final(const FinalCommon& common, const nlohmann::json& section);
  /// Writes metrics.jsonl's end-of-epoch record (report_epoch's), typed once: event "valid",
  /// epoch, train_loss, valid_loss, seconds, and the trainer's own fields (valid_ppl, lr, ...).
  void write_epoch_record(double train_loss, double valid_loss, double seconds,
                          const nlohmann::json& own);
  /// Writes the checkpoint now.
  void save();

  std::string trainer_, run_dir_;
  RunState state_;  ///< the subclass sets lr and config in its constructor
  MetricsLog metrics_;

 private:
  void end_epoch(double valid_loss, double seconds);
  int64_t batches_this_process_ = 0;
  std::string last_checkpoint_;  ///< position_text() of the last checkpoint saved or resumed
};

/// Progress of a stretch of batches between two log lines, and the run's ETA.
class IntervalMeter {
 public:
  /// first_batch: the batch the epoch (re)started at.
  explicit IntervalMeter(int64_t first_batch);
  void add(double loss, int64_t tokens);
  /// The progress line's figures after `batch` of `batches` in epoch `epoch` of `epochs`;
  /// resets the interval.
  TrainProgress take(const std::string& phase, int64_t epoch, int64_t epochs, int64_t batch,
                     int64_t batches, double lr);

 private:
  using clock_type = std::chrono::steady_clock;
  int64_t first_batch_;
  clock_type::time_point epoch_start_, interval_start_;
  double loss_ = 0;
  int64_t batches_ = 0, tokens_ = 0;
};

}  // namespace sb::runkit
