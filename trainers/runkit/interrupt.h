#pragma once
// How a training run ends, and the Ctrl-C / SIGTERM flag that asks it to stop. Every trainer's
// loop polls stop_requested() at batch boundaries, saves its checkpoint and returns kInterrupted;
// the trainer mains return the status as their exit code (docs/design.md, "Bad input").

#include <atomic>

#include "common/errors.h"

namespace sb::runkit {

/// Exit statuses of a run (kBadInput = 2 is trainer_cli.h's, for what is refused before a run).
enum RunStatus : int {
  kFinished = kExitOk,
  kNonFinite = kExitNonFinite,
  kInterrupted = kExitInterrupted
};

/// Set by SIGINT or SIGTERM (SIGTERM is what kill and Slurm's time limit send) once
/// install_interrupt_handler() ran, or by a trainer's stop_after_batches.
std::atomic<bool>& stop_requested();

/// Routes SIGINT and SIGTERM to stop_requested().
void install_interrupt_handler();

}  // namespace sb::runkit
