#include "trainers/runkit/trainer_cli.h"

#include <cstdio>
#include <exception>
#include <filesystem>
#include <stdexcept>

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

int parse_or_exit(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kBadInput;
  }
  return -1;
}

void check_fresh_run(const std::string& run_dir, bool resume) {
  if (!resume && std::filesystem::exists(std::filesystem::path(run_dir) / "checkpoint.pt"))
    throw std::runtime_error(run_dir +
                             "/checkpoint.pt exists: pass --resume to continue that run, or "
                             "choose another --out");
}

void truncate(std::vector<int64_t>& ids, int64_t n) {
  if (n > 0 && static_cast<int64_t>(ids.size()) > n) ids.resize(static_cast<size_t>(n));
}

int guarded(const std::function<int()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return kBadInput;
  }
}

void handle_interrupts() { runkit::install_interrupt_handler(); }

}  // namespace sb::runkit
