#pragma once
// The word-level LM training of AWD-LSTM (Merity et al. 2018) around any head, on runkit's epoch
// loop (trainers/runkit/epoch_trainer.h) with its phases as hooks: SGD with random BPTT lengths
// -> NT-ASGD -> finetuning (ASGD restarted from the best model until the trigger fires again) ->
// test-set dump with batch size 1. `until` stops at a phase boundary (make reproduce's stages).
// Run directory: config.toml, metrics.jsonl, checkpoint.pt, best.pt, best_finetune.pt,
// logprobs.h5 (the HDF5 contract of contract/logprob_file.h), final.json; with epoch_dump_rows,
// epochs/<phase>_<epoch>.h5 (the first rows of the test set after every epoch, same contract).

#include <torch/torch.h>

#include <string>
#include <vector>

#include "contract/logprob_file.h"
#include "datasets/corpus.h"
#include "trainers/lm/config.h"
#include "trainers/lm/model.h"
#include "trainers/lm/nt_asgd.h"
#include "trainers/lm/phase.h"
#include "trainers/runkit/configured_trainer.h"
#include "trainers/runkit/interrupt.h"
#include "trainers/runkit/trainer_cli.h"

namespace sb::lm {

/// AWD-LSTM's random BPTT length: base with probability 0.95 else base / 2, then
/// max(5, round(N(that, 5))), drawn from the global torch generator (so checkpoints capture it).
int64_t draw_seq_len(int64_t base);

/// The AWD-LSTM a config describes (train_wordlm, dyneval and the tests build it this way).
AwdLstm make_awd_lstm(const WordLmConfig& config, int64_t vocab_size);

/// <eos> followed by the first `limit` tokens of `split` (0 = all): the stream of a test-set pass
/// in which every token of the split is predicted (the line before it ended with <eos>).
std::vector<int64_t> eos_then(const data::Corpus& corpus, const std::vector<int64_t>& split,
                              int64_t limit = 0);

struct TrainResult {
  double best_valid_loss = 0;  ///< of the model the test set is evaluated with
  double test_ppl = 0;         ///< from the dump (0 when dump_test = false)
  std::string dump_path;
};

class WordLmTrainer : public runkit::ConfiguredTrainer<WordLmConfig, AwdLstm> {
 public:
  /// corpus: already truncated to the config's *_tokens. Writes nothing before run().
  WordLmTrainer(WordLmConfig config, data::Corpus corpus, std::string run_dir);
  /// Trains, finetunes and dumps as configured; returns a runkit::RunStatus. `until` stops early,
  /// after saving the checkpoint, at a stage boundary (for make reproduce's separate stages):
  /// Phase::main = once the main phase's epochs are done (before finetuning), Phase::finetune =
  /// once finetuning is done (before the test-set dump), Phase::done = run everything. A run
  /// already past `until` returns kFinished at once. (resume() is runkit's: it refuses a
  /// checkpoint whose config differs in a key that shapes the run.)
  int run(Phase until = Phase::done);
  const TrainResult& result() const { return result_; }

 private:
  // runkit::EpochTrainer's hooks.
  EpochEnd train_epoch() override;
  /// The main phase's lr in this epoch (lr_decay after lr_decay_after); finetuning: lr.
  double epoch_lr() const;
  double validate() override;
  void report_epoch(double train_loss, double valid_loss, double seconds) override;
  Next before_epoch() override;
  void after_validate() override;
  std::string save_best() override;
  void after_epoch(double valid_loss) override;
  void save_extra(runkit::CheckpointWriter& writer) const override;
  void load_extra(runkit::CheckpointReader& reader) override;
  nlohmann::ordered_json position() const override;
  void finish() override;

  void start_finetune();
  /// The header of a dump of `ids` (T = ids.size() - 1 rows, runkit's test_dump_header).
  contract::LogProbHeader dump_header(const std::vector<int64_t>& ids) const;
  std::vector<torch::Tensor> params() const;

  data::Corpus corpus_;
  torch::Tensor train_data_, valid_data_;  // (N, batch_size), (N, eval_batch_size)
  torch::Tensor stats_data_;               // the first mixture_stats of valid, (N, eval_batch_size)
  Phase until_ = Phase::done;
  // The word LM's own loop state, checkpointed by save_extra (runkit's RunState holds the rest).
  Phase phase_ = Phase::main;
  int64_t position_ = 0;    ///< token position in the training stream where the epoch continues
  bool asgd_ = false;       ///< averaging active (main phase after the trigger; all of finetune)
  int64_t asgd_epoch_ = 0;  ///< main-phase epoch at which the trigger fired (0 = never)
  std::vector<double> trigger_history_;
  ParameterAverager averager_;
  TrainResult result_;
};

/// What train_wordlm does once its config is valid (runkit::trainer_main's body): resolves the
/// device (before the corpus: a bad --device fails first), loads the corpus, prints the run's
/// line, trains (resuming with --resume) until the stage `until` (train, finetune or dump).
int train(WordLmConfig config, const runkit::TrainerRun& run, const std::string& until);

/// train_wordlm's whole main: runkit::trainer_main over descriptor() and train. main.cpp declares
/// it itself instead of including this header, so that it compiles without LibTorch.
int cli_main(int argc, char** argv);

}  // namespace sb::lm
