#include "trainers/runkit/trainer_cli.h"

#include <c10/util/Exception.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>

#include "common/errors.h"
#include "trainers/runkit/interrupt.h"

namespace sb::runkit {

void add_run_flags(CLI::App& app, RunFlags& flags) {
  app.add_flag("--resume", flags.resume,
               "continue the run in <out> from its checkpoint.pt (same config: bit-identical "
               "result for the same seed and threads)");
  app.add_option("--stop-after-batches", flags.stop_after_batches,
                 "testing: stop as Ctrl-C would after this many batches of this process")
      ->group("Testing");
}

void add_describe_flags(CLI::App& app, DescribeFlags& flags) {
  app.add_flag("--describe", flags.describe,
               "print what the pipeline knows of this trainer (stages, outputs, keys) and, for "
               "the config as given, which heads it takes (its own validate, per head); write "
               "nothing and exit")
      ->group("Describe");
  app.add_flag("--json", flags.json, "with --describe: one JSON object")->group("Describe");
  app.add_option("--describe-heads", flags.heads,
                 "with --describe: judge these head spellings too (one or more, e.g. "
                 "sparse:k=20 mos:K=3; a spelling may hold commas)")
      ->group("Describe");
}

int print_description(const TrainerFacts& facts, const KeyTable& table,
                      const ConfigVerdicts& verdicts, const DescribeFlags& flags) {
  if (flags.json)
    std::cout << describe_json(facts, table, verdicts).dump() << "\n";
  else
    std::cout << describe_text(facts, verdicts);
  std::cout.flush();
  return sb::kExitOk;
}

std::string TrainerRun::line_end(const std::string& head, const std::string& device) const {
  return "head " + head + "; " + std::to_string(threads) + (threads == 1 ? " thread" : " threads") +
         (device.empty() ? "" : "; device " + device) + "; run directory " + run_dir;
}

void check_fresh_run(const std::string& run_dir, bool resume) {
  if (!resume && std::filesystem::exists(std::filesystem::path(run_dir) / "checkpoint.pt"))
    throw OptionError::described("--resume", run_dir +
                                                 "/checkpoint.pt exists: pass --resume to continue "
                                                 "that run, or choose another --out");
}

void truncate(std::vector<int64_t>& ids, int64_t n) {
  if (n > 0 && static_cast<int64_t>(ids.size()) > n) ids.resize(static_cast<size_t>(n));
}

int guarded(const std::function<int()>& body) {
  ErrorReport report;  // kind other, status kExitBadInput
  try {
    return body();
  } catch (const c10::Error& e) {
    // A LibTorch error no reader translated: its first line, without the backtrace.
    report.line = first_line(e.what_without_backtrace());
  } catch (...) {
    // Out of memory names what a trainer's user can make smaller.
    report =
        error_report(std::current_exception(), "a smaller batch_size, model or corpus slice fits");
  }
  std::fflush(stdout);
  std::fprintf(stderr, "error: %s\n", report.line.c_str());
  return report.status;
}

void handle_interrupts() { runkit::install_interrupt_handler(); }

}  // namespace sb::runkit
