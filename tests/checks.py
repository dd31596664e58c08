"""What every Python test script here shares: the repository root, check() printing one
"ok   ..." or "FAIL ..." line an assertion, and finish(), the exit status (1 after any FAIL).
The scripts run as `/usr/bin/python3 tests/test_x.py`, so `import checks` finds this file.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PIPELINE = os.path.join(ROOT, "pipeline")

failures = []


def check(cond, what):
    """Records one assertion; returns cond so a caller can skip what depends on it."""
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)
    return bool(cond)


def finish():
    """Prints the failure count; the process's exit status."""
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


def import_pipeline():
    """Makes pipeline/*.py importable (seed_summary, repro_profile, ...)."""
    if PIPELINE not in sys.path:
        sys.path.insert(0, PIPELINE)


def build_dir():
    """The build directory: the script's first argument (ctest passes the project's binary
    directory), else build/ of this checkout. The pipeline reads the head facts from its
    analysis/rank_analysis (`--list-heads --json`)."""
    return os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "build")


def use_build():
    """Imports the pipeline with its head facts read from build_dir()'s rank_analysis."""
    import_pipeline()
    import head_facts
    head_facts.use(os.path.join(build_dir(), "analysis", "rank_analysis"))
