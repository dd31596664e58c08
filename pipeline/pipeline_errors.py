"""The pipeline's one error base. Every refusal the pipeline raises (a bad profile, a stage that
failed, a busy directory, a malformed result file) is a PipelineError whose message is one line
naming the file, the field and what was expected; `reproduce.py` catches this class once, prints
the line and exits 2. Each subclass keeps the built-in base it had (ValueError, RuntimeError), so
callers that catch those still do. A programming error (a KeyError, a TypeError) is not one: it
keeps its traceback."""

import sys
from typing import NoReturn


class PipelineError(Exception):
    """Bad input or a failed step, in one line (module docstring)."""


# Exit statuses of the pipeline's and the benches' scripts, the only place they are numbers. The
# shared ones are common/errors.h's (kExitOk, kExitBadInput, kExitInterrupted; a test compares
# them), so a script driving both the binaries and these tells bad input from an interrupt the
# same way; EXIT_NOT_DONE has no C++ twin.
EXIT_OK = 0
EXIT_NOT_DONE = 1  # a --check found a difference, or Slurm jobs did not complete: run it again
EXIT_BAD_INPUT = 2  # the one-line refusal was printed (a PipelineError, an OSError on a file)
EXIT_INTERRUPTED = 130  # SIGINT/SIGTERM: checkpoints are saved; the same command resumes


def refuse(message: str) -> NoReturn:
    """A script's one-line refusal: `message` on stderr, exit EXIT_BAD_INPUT (never
    sys.exit("...") or SystemExit("..."), whose status 1 is EXIT_NOT_DONE's)."""
    print(message, file=sys.stderr, flush=True)
    sys.exit(EXIT_BAD_INPUT)
