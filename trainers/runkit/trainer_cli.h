#pragma once
// What every trainer binary's main shares (train_wordlm, train_nplm, train_charlm,
// train_classifier): the --resume and --stop-after-batches flags, the refusal to overwrite a run,
// the corpus truncation, and the one-line "error: ..." with exit status 2 for bad input.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/blas_core.h"
#include "common/command_line.h"
#include "common/errors.h"
#include "trainers/runkit/config_table.h"
#include "trainers/runkit/process_setup.h"
#include "trainers/runkit/run_lock.h"
#include "trainers/runkit/trainer_descriptor.h"

namespace sb::runkit {

/// Exit status for bad input or a bad setting (every trainer's --help states it).
inline constexpr int kBadInput = sb::kExitBadInput;

struct RunFlags {
  bool resume = false;             ///< --resume: continue <out>/checkpoint.pt
  int64_t stop_after_batches = 0;  ///< testing: act as Ctrl-C after this many batches (0 = never)
};

/// Adds --resume and --stop-after-batches (group "Testing") to `app`.
void add_run_flags(CLI::App& app, RunFlags& flags);

struct DescribeFlags {
  bool describe = false;           ///< --describe: print the descriptor and exit
  bool json = false;               ///< --json: as one JSON object (pipeline/trainer_kinds.py)
  std::vector<std::string> heads;  ///< --describe-heads: more head spellings to judge
};

/// Adds --describe, --json and --describe-heads (group "Describe") to `app`.
void add_describe_flags(CLI::App& app, DescribeFlags& flags);

/// Prints describe_json (with --json) or describe_text of `verdicts` on stdout; returns 0.
int print_description(const TrainerFacts& facts, const KeyTable& table,
                      const ConfigVerdicts& verdicts, const DescribeFlags& flags);

/// Throws sb::OptionError "<run_dir>/checkpoint.pt exists: ..." when the run directory holds a
/// checkpoint and `resume` is false (a fresh run must not overwrite one).
void check_fresh_run(const std::string& run_dir, bool resume);

/// Keeps the first n ids (n <= 0 or n >= size: all).
void truncate(std::vector<int64_t>& ids, int64_t n);

/// Keeps the first n ids of each split of a corpus (anything with train, valid and test id
/// vectors: data::Corpus, charlm::CharCorpus); 0 = the whole split.
template <class Corpus>
void truncate_splits(Corpus& c, int64_t train, int64_t valid, int64_t test) {
  truncate(c.train, train);
  truncate(c.valid, valid);
  truncate(c.test, test);
}

/// "929589 train / 73760 valid / 82430 test <unit>", for the trainers' first line.
template <class Corpus>
std::string split_sizes(const Corpus& c, const std::string& unit) {
  return std::to_string(c.train.size()) + " train / " + std::to_string(c.valid.size()) +
         " valid / " + std::to_string(c.test.size()) + " test " + unit;
}

/// Runs body; an exception prints "error: <line>" on stderr (sb::error_report's line; a
/// c10::Error's first line without its backtrace) and gives its status, kBadInput.
int guarded(const std::function<int()>& body);

/// Installs the SIGINT/SIGTERM handler that asks the running trainer to checkpoint and stop
/// (runkit::install_interrupt_handler).
void handle_interrupts();

/// What trainer_main hands a trainer's body besides the config.
struct TrainerRun {
  RunFlags flags;
  int threads = 1;      ///< set_up_process's count
  std::string run_dir;  ///< run_dir(config), checked by check_fresh_run

  /// "head H; 2 threads; run directory D" ("; device X" before the run directory when given):
  /// the end of every trainer's first line.
  std::string line_end(const std::string& head, const std::string& device = "") const;
};

/// The frame of every trainer's main, over its descriptor: --config FILE and --<key> VALUE for
/// every key of the descriptor's table, --resume and --stop-after-batches, --describe [--json]
/// [--describe-heads H ...], the parse (--help: 0; a parse error: kBadInput); then, under
/// guarded(): the config (defaults, the file, the overrides in order); with --describe, the
/// descriptor and the verdicts of this config and of it with each head (exit 0, nothing
/// written); else the descriptor's validate(config), set_up_process(config.threads), its
/// run_dir(config), the run directory's lock (RunDirLock, held until body returns: a second
/// trainer on the same run is refused), check_fresh_run, and body(config, run), whose result is
/// the exit status. Before all that, use_best_core(argv) (common/blas_core.h: OpenBLAS's fast
/// kernels, before any work). --help's description is the descriptor's facts.help, its footer
/// the heads the trainer takes (heads_text); a trainer's own options are added by
/// `own_options(app)`.
template <class Config, class Body>
int trainer_main(int argc, char** argv, const TrainerDescriptor<Config>& d, Body body,
                 const std::function<void(CLI::App&)>& own_options = {}) {
  blas::use_best_core(argv);
  CLI::App app{d.facts.help + "\n" +
               exit_statuses_text(
                   {kExitOk, kExitBadInput, kExitNonFinite, kExitInterrupted, kExitInternal})};
  if (own_options) own_options(app);
  app.footer([&d] { return heads_text(judge(d, Config{}, {})); });  // only when --help asks
  const ConfigTable<Config>& table = d.key_table();
  ConfigArgs args;
  table.add_options(app, args);
  TrainerRun run;
  add_run_flags(app, run.flags);
  DescribeFlags describe;
  add_describe_flags(app, describe);
  if (const int status = sb::parse_or_exit(app, argc, argv); status >= 0) return status;
  return guarded([&] {
    Config config = table.merge(args);
    if (describe.describe)
      return print_description(d.facts, table, judge(d, config, describe.heads), describe);
    d.validate(config);
    run.threads = set_up_process(config.threads);
    run.run_dir = d.run_dir(config);
    const RunDirLock lock(run.run_dir, app.get_name());
    check_fresh_run(run.run_dir, run.flags.resume);
    return body(std::move(config), run);
  });
}

/// Resumes the trainer when asked, sets its stop_after_batches, installs the SIGINT/SIGTERM
/// handler and runs it; returns run()'s exit status.
template <class Trainer>
int run_trainer(Trainer& trainer, const RunFlags& flags) {
  if (flags.resume) trainer.resume();
  trainer.stop_after_batches = flags.stop_after_batches;
  handle_interrupts();
  return trainer.run();
}

/// The end of a one-command trainer's body: prints its first line, "<data and model>; head H;
/// N threads; run directory D", builds Trainer(config, data, run directory) and runs it
/// (run_trainer).
template <class Trainer, class Config, class Data>
int train_with(const Config& config, const TrainerRun& run, Data data, const std::string& what) {
  std::printf("%s; %s\n", what.c_str(), run.line_end(config.head.text()).c_str());
  std::fflush(stdout);
  Trainer trainer(config, std::move(data), run.run_dir);
  return run_trainer(trainer, run.flags);
}

}  // namespace sb::runkit
