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
