#pragma once
// The word-level LM training loop of AWD-LSTM (Merity et al. 2018) around any head:
// SGD with random BPTT lengths -> NT-ASGD -> finetuning (ASGD restarted from the best model until
// the trigger fires again) -> test-set dump with batch size 1.
// Run directory: config.toml, metrics.jsonl, checkpoint.pt, best.pt, best_finetune.pt,
// logprobs.h5 (the HDF5 contract of analysis/logprob_file.h), final.json; with epoch_dump_rows,
// epochs/<phase>_<epoch>.h5 (the first rows of the test set after every epoch, same contract).

#include <torch/torch.h>

#include <atomic>
#include <string>
#include <vector>

#include "analysis/logprob_file.h"
#include "datasets/corpus.h"
#include "trainers/lm/awd_lstm.h"
#include "trainers/lm/checkpoint.h"
#include "trainers/lm/config.h"
#include "trainers/lm/nt_asgd.h"
#include "trainers/lm/run_log.h"

namespace sb::lm {

/// Exit statuses of a run.
enum RunStatus : int { kFinished = 0, kNonFinite = 4, kInterrupted = 130 };

/// Set by SIGINT or SIGTERM (install_interrupt_handler; SIGTERM is what kill and Slurm's time limit
/// send) or by the trainer's stop_after_batches: the loop saves a checkpoint at the next batch
/// boundary and returns kInterrupted.
void install_interrupt_handler();
std::atomic<bool>& stop_requested();

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

class WordLmTrainer {
 public:
  /// corpus: already truncated to the config's *_tokens. Creates run_dir.
  WordLmTrainer(WordLmConfig config, data::Corpus corpus, std::string run_dir);
  /// Continues from run_dir/checkpoint.pt (error if none or if its config differs in a key
  /// that shapes the run).
  void resume();
  /// Trains, finetunes and dumps as configured; returns a RunStatus. `until` stops early, after
  /// saving the checkpoint, at a stage boundary (for make reproduce's separate stages):
  /// Phase::main = once the main phase's epochs are done (before finetuning), Phase::finetune =
  /// once finetuning is done (before the test-set dump), Phase::done = run everything. A run
  /// already past `until` returns kFinished at once.
  int run(Phase until = Phase::done);
  const TrainResult& result() const { return result_; }

  /// Testing: behave as if Ctrl-C arrived after this many batches of this process (0 = never).
  int64_t stop_after_batches = 0;
  AwdLstm model{nullptr};

 private:
  enum class EpochEnd { completed, interrupted, non_finite };
  EpochEnd train_epoch();
  double validate();
  /// After validate(), with the weights it used: the mixture statistics and the epoch dump, as
  /// configured (mixture_stats, epoch_dump_rows).
  void epoch_probes();
  analysis::LogProbHeader dump_header() const;
  void end_epoch(double valid_loss, double seconds);
  void start_finetune();
  void finish();
  std::string path(const std::string& name) const;
  std::vector<torch::Tensor> params() const;
  void save();

  WordLmConfig config_;
  data::Corpus corpus_;
  std::string run_dir_;
  torch::Tensor train_data_, valid_data_;  // (N, batch_size), (N, eval_batch_size)
  torch::Tensor stats_data_;               // the first mixture_stats of valid, (N, eval_batch_size)
  ParameterAverager averager_;
  TrainState state_;
  std::vector<LstmState> carried_;  // mid-epoch state after a Ctrl-C resume
  MetricsLog metrics_;
  TrainResult result_;
  int64_t batches_this_process_ = 0;
};

}  // namespace sb::lm
