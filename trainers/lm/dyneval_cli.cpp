// dyneval: dynamic evaluation (Krause et al. 2017) of a model trained by train_wordlm, the last
// step of Kanai et al. 2018's language-model tables ("+dynamic eval."): gradient statistics on the
// training data, then static and dynamic valid/test perplexities, optionally after a grid search
// of lr x lambda on the validation set. The work is trainers/lm/dyneval_run.h; the settings are
// the key table of trainers/lm/dyneval_config.h.

#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>

#include "common/blas_core.h"
#include "common/command_line.h"
#include "common/errors.h"
#include "trainers/lm/dyneval_config.h"
#include "trainers/lm/dyneval_run.h"
#include "trainers/runkit/trainer_cli.h"

namespace sb::lm {

int dyneval_main(int argc, char** argv) {
  sb::blas::use_best_core(argv);  // before any work: OpenBLAS's fast kernels (common/blas_core.h)
  CLI::App app{
      "Dynamic evaluation (Krause et al. 2017) of a train_wordlm run, as in Kanai et al. 2018: "
      "gradient statistics MS = sqrt(mean g^2) on the training data (batch --stats-batch-size, "
      "segments of --stats-bptt tokens), then the validation and test sets are read with batch "
      "size 1 in segments of --bptt tokens; each segment is scored first and then its gradient "
      "g moves the weights: W <- W - lr g / (MS + eps) + lambda decrate (W0 - W), decrate = "
      "min(MS / mean(MS), 1 / lambda), W0 = the trained weights. The static perplexities (same "
      "batch size 1 and segments, no updates) are printed first. Every token of a split is "
      "predicted (<eos> in front). All passes run without dropout.\n"
      "Settings: defaults, then --config FILE (TOML), then the options below.\n"
      "Writes <run>/dyneval.json (or --out) atomically.\n" +
      sb::exit_statuses_text({sb::kExitOk, sb::kExitBadInput, sb::kExitInternal})};
  std::string run_dir;
  app.add_option("--run", run_dir,
                 "run directory of train_wordlm: reads config.toml and best_finetune.pt (else "
                 "best.pt)")
      ->required();
  sb::runkit::ConfigArgs args;
  sb::lm::add_dyneval_options(app, args);
  if (const int status = sb::parse_or_exit(app, argc, argv); status >= 0) return status;
  return sb::runkit::guarded([&] {
    sb::lm::run_dyneval(run_dir, sb::lm::resolve_dyneval_config(args));
    return sb::kExitOk;
  });
}

}  // namespace sb::lm
