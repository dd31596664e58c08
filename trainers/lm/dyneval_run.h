#pragma once
// What the dyneval binary does, behind its thin main (trainers/dyneval.cpp): find the run's files,
// load the model, score the static baseline, gather the gradient statistics, evaluate dynamically
// (or search the lr x lambda grid), and write the result JSON (dyneval.json, or --out) atomically;
// with --json also on the original stdout, everything human-readable going to stderr.

#include <string>
#include <vector>

#include "trainers/lm/config.h"
#include "trainers/lm/dynamic_eval.h"
#include "trainers/lm/dyneval_config.h"

namespace sb::lm {

/// The files a dyneval run reads and writes.
struct DynevalInputs {
  WordLmConfig run_config;  ///< <run>/config.toml, `data` replaced by the config's if given
  std::string weights;      ///< the config's weights, else best_finetune.pt, else best.pt
  std::string out;          ///< the config's out, else <run>/dyneval.json
};

/// Resolves and checks the inputs of a run directory. Throws sb::FormatError naming the path:
/// "run directory R does not exist", "R/config.toml does not exist: not a run directory of
/// train_wordlm?", "--weights W: no such file", "run directory R holds neither best_finetune.pt
/// nor best.pt ...", and what load_config_file and validate throw.
DynevalInputs resolve_dyneval_inputs(const std::string& run_dir, const DynevalConfig& cfg);

/// The evaluation options of the config and its lr x lambda grid, parsed once.
struct DynevalSettings {
  DynamicEvalOptions options;
  std::vector<double> grid_lr, grid_lambda;  ///< empty unless given
};

/// The settings of the config, checked with validate(DynamicEvalOptions), as are the grid's
/// values (each lr and lambda of it). Throws sb::OptionError naming the option.
DynevalSettings dyneval_settings(const DynevalConfig& cfg);

/// --json: while alive, the process's stdout goes to stderr; print() writes to the original
/// stdout. Does nothing when not enabled.
class JsonStdout {
 public:
  explicit JsonStdout(bool enabled);
  ~JsonStdout();
  JsonStdout(const JsonStdout&) = delete;
  JsonStdout& operator=(const JsonStdout&) = delete;

  /// Writes `text` to the original stdout when enabled; throws sb::WriteError if it cannot.
  void print(const std::string& text) const;

 private:
  int fd_ = -1;  ///< a duplicate of the original stdout, -1 when not enabled
};

/// The whole evaluation of `run_dir` as `cfg` asks (static only, dynamic, or the grid search and
/// then the test set with the best pair). Writes the result JSON atomically; its fields: run,
/// weights, dataset, head, valid_tokens, test_tokens, static {valid_loss, valid_ppl, test_loss,
/// test_ppl, bptt}, seconds; unless static_only also train_tokens, options {lr, lambda, eps, bptt,
/// stats_batch_size, stats_bptt, stats_tokens}, stats {batches, tokens, mean_ms, train_loss,
/// seconds}, dynamic {valid_loss, valid_ppl, test_loss, test_ppl} and, with grid, grid [{lr,
/// lambda, valid_loss, valid_ppl}]. Throws on bad input (the main exits 2).
void run_dyneval(const std::string& run_dir, const DynevalConfig& cfg);

/// The dyneval binary's whole program (dyneval_cli.cpp: --run, the key table's options, then
/// run_dyneval under runkit::guarded); trainers/dyneval.cpp calls it.
int dyneval_main(int argc, char** argv);

}  // namespace sb::lm
