#pragma once
// dyneval's configuration: one struct and its key table over runkit's engine
// (trainers/runkit/config_table.h). Every option of the dyneval binary but --run is a key, with the
// spelling it always had on the command line (--stats-batch-size, --grid-lr, --static-only; bare
// flags --grid, --static-only, --json); a TOML file given with --config uses the key names
// (stats_batch_size = 100). Precedence: command line > file > the defaults below. LibTorch-free
// (target lm_config); DynamicEvalOptions (dynamic_eval.h) takes its defaults from here.

#include <cstdint>
#include <string>
#include <vector>

#include "trainers/runkit/config_table.h"

namespace sb::lm {

/// Defaults: the paper's single-head setting (Kanai et al. 2018 supplementary C.1.1: eps 1e-3,
/// statistics with batch 100) with the middle of its grid, lr 5e-5 of {3, 4, 5, 6, 7, 10}e-5 and
/// lambda 2e-3 of {1, 2, 3, 5}e-3; segments of 5 tokens (docs/protocol.md, "Dynamic evaluation").
struct DynevalConfig {
  // inputs
  std::string weights = "";   // weights file instead of <run>/best_finetune.pt (else best.pt)
  std::string data = "";      // corpus directory; "" = the run's data, else searched
  int64_t valid_tokens = -1;  // first N validation tokens (0 = all; -1 = the run's valid_tokens)
  int64_t test_tokens = -1;   // first N test tokens (0 = all; -1 = the run's test_tokens)
  // dynamic evaluation (Krause et al. 2017)
  double lr = 5e-5;                // step size of the normalised gradient step
  double lambda = 2e-3;            // decay rate towards the trained weights
  double eps = 1e-3;               // added to MS in the step's denominator
  int64_t bptt = 5;                // tokens per evaluation segment = per update
  int64_t stats_batch_size = 100;  // batch size of the gradient statistics
  int64_t stats_bptt = 5;          // segment length of the gradient statistics
  int64_t stats_tokens = 0;        // training tokens of the statistics (0 = all)
  bool static_only = false;        // only the static perplexities
  // grid search (Kanai et al. 2018, supplementary C.1.1)
  bool grid = false;
  std::string grid_lr = "3e-05,4e-05,5e-05,6e-05,7e-05,0.0001";  // comma-separated
  std::string grid_lambda = "0.001,0.002,0.003,0.005";           // comma-separated
  // process
  int64_t threads = 0;          // 0 = number of cores
  std::string device = "auto";  // auto | cpu | cuda | cuda:N
  // outputs
  std::string out = "";  // result file; "" = <run>/dyneval.json
  bool json = false;     // only the result JSON on stdout
};

/// The defaults above: the one place DynamicEvalOptions takes its defaults from.
const DynevalConfig& dyneval_defaults();

namespace dyneval {
/// The key table, in sections inputs, evaluation, grid, process, outputs; dashed options. In its
/// own namespace: every trainer folder spells its table key_table(), and lm's is train_wordlm's.
const runkit::ConfigTable<DynevalConfig>& key_table();
}  // namespace dyneval

/// --config FILE and one option per key (applied by resolve_dyneval_config, after the file).
void add_dyneval_options(CLI::App& app, runkit::ConfigArgs& args);

/// Defaults, the file, the overrides; no range checks yet: run_dyneval checks the evaluation
/// options first, with DynamicEvalOptions' messages, then the table's ranges (check_ranges).
DynevalConfig resolve_dyneval_config(const runkit::ConfigArgs& args);

/// The table's ranges: "threads must be >= 0, got -1".
void check_ranges(const DynevalConfig& cfg);

/// A comma-separated list of finite numbers ("3e-05,4e-05"; "" = none). Throws
/// sb::OptionError "--grid-lr: expected comma-separated numbers, got '1,x'".
std::vector<double> parse_number_list(const std::string& text, const std::string& option);

/// Every key with its description; reads back with dyneval::key_table().load_text.
std::string to_toml(const DynevalConfig& cfg);

}  // namespace sb::lm
