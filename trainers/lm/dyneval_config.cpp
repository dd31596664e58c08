#include "trainers/lm/dyneval_config.h"

#include "common/errors.h"
#include "common/head_spec.h"

namespace sb::lm {

using runkit::at_least;  // the key table's rows (trainers/runkit/config_table.h)
using runkit::key;

const DynevalConfig& dyneval_defaults() {
  static const DynevalConfig defaults{};
  return defaults;
}

namespace dyneval {
const runkit::ConfigTable<DynevalConfig>& key_table() {
  using C = DynevalConfig;
  static const runkit::ConfigTable<C> table(
      "Dynamic evaluation configuration (trainers/lm/dyneval_config.h)",
      {
          {"inputs",
           {
               key("weights", &C::weights,
                   "weights file to evaluate instead of the run's best_finetune.pt (else "
                   "best.pt), save_weights format"),
               key("data", &C::data, "corpus directory (\"\" = the run's data, else searched)"),
               key("valid_tokens", &C::valid_tokens,
                   "evaluate the first N validation tokens (0 = all; -1 = the run's "
                   "valid_tokens)",
                   at_least(-1)),
               key("test_tokens", &C::test_tokens,
                   "evaluate the first N test tokens (0 = all; -1 = the run's test_tokens)",
                   at_least(-1)),
           }},
          {"evaluation",
           {
               key("lr", &C::lr, "step size of the normalised gradient step", at_least(0)),
               key("lambda", &C::lambda, "decay rate towards the trained weights", at_least(0)),
               key("eps", &C::eps, "added to MS in the step's denominator", runkit::above(0)),
               key("bptt", &C::bptt, "tokens per evaluation segment = per update", at_least(1)),
               key("stats_batch_size", &C::stats_batch_size,
                   "batch size of the gradient statistics", at_least(1)),
               key("stats_bptt", &C::stats_bptt, "segment length of the gradient statistics",
                   at_least(1)),
               key("stats_tokens", &C::stats_tokens,
                   "training tokens for the gradient statistics, from the first segments of all "
                   "batch columns (0 = the whole training set of the run)",
                   at_least(0)),
               key("static_only", &C::static_only,
                   "only the static perplexities (no gradient statistics, no updates): how make "
                   "reproduce scores best.pt, the model after training, on valid and test")
                   .as_flag(),
           }},
          {"grid",
           {
               key("grid", &C::grid,
                   "evaluate every (lr, lambda) of --grid-lr x --grid-lambda on the validation "
                   "set, print the table, then evaluate the test set with the best pair (--lr "
                   "and --lambda are ignored)")
                   .as_flag(),
               key("grid_lr", &C::grid_lr, "learning rates of the grid (comma-separated)"),
               key("grid_lambda", &C::grid_lambda, "lambdas of the grid (comma-separated)"),
           }},
          {"process",
           {
               key("threads", &C::threads,
                   "threads for LibTorch and OpenBLAS (0 = number of cores)", at_least(0)),
               key("device", &C::device,
                   "auto | cpu | cuda | cuda:N (auto = cuda when LibTorch has it and a GPU is "
                   "visible); the run's weights load onto it whatever device trained them"),
           }},
          {"outputs",
           {
               key("out", &C::out, "result file (\"\" = <run>/dyneval.json)"),
               key("json", &C::json,
                   "print only the result JSON on stdout (progress and the report go to stderr)")
                   .as_flag(),
           }},
      },
      runkit::TableOptions{"", /*dashed_options=*/true});
  return table;
}
}  // namespace dyneval

void add_dyneval_options(CLI::App& app, runkit::ConfigArgs& args) {
  dyneval::key_table().add_options(app, args);
}

DynevalConfig resolve_dyneval_config(const runkit::ConfigArgs& args) {
  return dyneval::key_table().merge(args);
}

void check_ranges(const DynevalConfig& cfg) { dyneval::key_table().check_ranges(cfg); }

std::vector<double> parse_number_list(const std::string& text, const std::string& option) {
  std::vector<double> out;
  if (text.empty()) return out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const auto value = sb::parse_finite_number(text.substr(start, comma - start));
    if (!value) throw OptionError(option, "comma-separated numbers", "'" + text + "'");
    out.push_back(*value);
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

std::string to_toml(const DynevalConfig& cfg) { return dyneval::key_table().to_toml(cfg); }

}  // namespace sb::lm
