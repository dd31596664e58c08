#pragma once
// The Transformer LM's training loop: AdamW on batches of `context`-token windows of the training
// stream (non-overlapping, their order shuffled each epoch by a generator seeded by (seed, epoch),
// so a resumed epoch replays it), linear warmup then cosine decay per step, gradient clipping,
// validation after every epoch (best.pt keeps the best model), then the best model's valid and
// test perplexities and the test-set dump (contract/logprob_file.h) with the model's final
// normalisation as the attribute final_norm.
//
// Evaluation (valid, test, the dump): the split with <eos> in front, cut into consecutive
// windows of `context` tokens, each read with no context from the window before (every token
// predicted once; the first tokens of a window see few: a sliding window would give lower
// perplexities at `context` times the cost). Run directory and exit statuses as train_nplm.

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>

#include "datasets/corpus.h"
#include "trainers/runkit/configured_trainer.h"
#include "trainers/runkit/metrics_log.h"
#include "trainers/runkit/trainer_cli.h"
#include "trainers/transformer/config.h"
#include "trainers/transformer/model.h"

namespace sb::transformer {

/// AdamW (Loshchilov & Hutter 2019) with GPT-2's two groups: weight decay on the parameters of
/// two or more dimensions (matrices, embeddings), none on biases and norm gains. betas (0.9, 0.95),
/// eps 1e-8. The parity test's reference builds the same groups.
std::unique_ptr<torch::optim::AdamW> make_optimizer(TransformerLm& model, double lr,
                                                    double weight_decay);

/// The learning rate of step s (0-based) of `total`: linear warmup lr (s + 1) / warmup over the
/// first `warmup` steps, then a cosine from lr to final_ratio x lr at step total - 1.
double lr_at(int64_t step, int64_t total, int64_t warmup, double lr, double final_ratio);

/// One training step, shared by the trainer and the parity test: zero grads, the head's mean
/// loss of tokens x (B, T) against y (B, T), backward, clip to `clip` (0 = none), set every
/// group's lr, step. Returns the loss before the update and the gradient norm before clipping.
std::pair<double, double> train_step(TransformerLm& model, torch::optim::AdamW& optimizer,
                                     const torch::Tensor& x, const torch::Tensor& y, double clip,
                                     double lr);

/// Every token of `ids` after the first predicted once: consecutive windows of `context` tokens,
/// `batch` windows at a time (the last, shorter window alone), in order; fn(h, targets) gets the
/// decoder's input (n, d) and the targets (n) of the rows in stream order. Eval mode, no grad.
void for_each_window(TransformerLm& model, const torch::Tensor& ids, int64_t context, int64_t batch,
                     const std::function<void(const torch::Tensor&, const torch::Tensor&)>& fn,
                     const runkit::ProgressFn& progress = {});

class TransformerTrainer : public runkit::ConfiguredTrainer<TransformerConfig, TransformerLm> {
 public:
  /// corpus: already truncated to the config's *_tokens. Writes nothing before run().
  TransformerTrainer(TransformerConfig config, data::Corpus corpus, std::string run_dir);
  const runkit::LmResult& result() const { return result_; }

 private:
  EpochEnd train_epoch() override;
  double validate() override;
  void report_epoch(double train_loss, double valid_loss, double seconds) override;
  void finish() override;
  /// Batches in an epoch: whole batches of training windows, capped by max_batches.
  int64_t batches() const;
  /// <eos> then the split's tokens, (n + 1) int64.
  torch::Tensor with_eos(const std::vector<int64_t>& split) const;
  double mean_nll(const torch::Tensor& ids, const std::string& label);

  data::Corpus corpus_;
  torch::Tensor windows_;  ///< (n_windows, context + 1): the training stream's windows
  runkit::LmResult result_;
};

/// What train_transformer does once its config is valid (runkit::trainer_main's body): loads and
/// slices the corpus, prints the run's line, trains (resuming with --resume), evaluates, dumps.
int train(const TransformerConfig& config, const runkit::TrainerRun& run);

/// train_transformer's whole main: runkit::trainer_main over descriptor() and train. main.cpp
/// declares it itself instead of including this header, so that it compiles without LibTorch.
int cli_main(int argc, char** argv);

}  // namespace sb::transformer
