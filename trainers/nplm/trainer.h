#pragma once
// The training loop of the feed-forward LM (de Brebisson & Vincent 2016, sec. 4.4.1): plain SGD on
// shuffled context windows, validation after every epoch (best.pt keeps the best model; the lr is
// multiplied by lr_decay after an epoch that is not the best), then the best model's valid and
// test perplexities and the test-set dump (the HDF5 contract, contract/logprob_file.h).
// Run directory: config.toml, metrics.jsonl, checkpoint.pt (after every epoch and on Ctrl-C /
// SIGTERM), best.pt, logprobs.h5, final.json. Exit statuses as train_wordlm: 0, 2 bad input,
// 4 non-finite loss (the last checkpoint kept), 130 interrupted (checkpoint saved).

#include <torch/torch.h>

#include <memory>
#include <string>

#include "datasets/corpus.h"
#include "trainers/nplm/config.h"
#include "trainers/nplm/contexts.h"
#include "trainers/nplm/model.h"
#include "trainers/runkit/configured_trainer.h"
#include "trainers/runkit/metrics_log.h"
#include "trainers/runkit/trainer_cli.h"

namespace sb::nplm {

struct NplmResult : runkit::LmResult {
  double valid_error_pct = 0, test_error_pct = 0;  ///< top-1 error of best.pt
};

class NplmTrainer : public runkit::ConfiguredTrainer<NplmConfig, Nplm> {
 public:
  /// corpus: already truncated to the config's *_tokens. Writes nothing before run().
  NplmTrainer(NplmConfig config, data::Corpus corpus, std::string run_dir);
  const NplmResult& result() const { return result_; }

 private:
  EpochEnd train_epoch() override;
  double validate() override;
  void report_epoch(double train_loss, double valid_loss, double seconds) override;
  /// The lr is multiplied by lr_decay after an epoch that is not the best.
  void on_worse_epoch() override { state_.lr *= config_.lr_decay; }
  void finish() override;

  data::Corpus corpus_;
  Classes classes_;  ///< classes > 0 only: the C most frequent training words
  Contexts train_, valid_, test_;
  NplmResult result_;
};

/// What train_nplm does once its config is valid (runkit::trainer_main's body): loads and slices
/// the corpus, prints the run's line, trains (resuming with --resume), evaluates and dumps.
int train(const NplmConfig& config, const runkit::TrainerRun& run);

/// train_nplm's whole main: runkit::trainer_main over descriptor() and train. main.cpp declares it
/// itself instead of including this header, so that it compiles without LibTorch.
int cli_main(int argc, char** argv);

/// Mean training loss of the head (the NLL; sparse top-k: Sun et al.'s eq. 5) over every row of
/// `data`, in batches, no gradients, eval mode.
double mean_nll(Nplm& model, const Contexts& data, int64_t batch = 1000,
                const runkit::ProgressFn& progress = {});

/// Top-1 error in percent: the rows whose largest log-probability is not their target.
double error_pct(Nplm& model, const Contexts& data, int64_t batch = 1000);

}  // namespace sb::nplm
