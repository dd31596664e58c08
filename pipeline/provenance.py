"""Which source a result was made from: the commit, and whether the tree had changes.

A result is reproducible only from a clean commit. The pipeline's own outputs (results/, the
blocks `make readme` fills in README.md and docs/reproducing.md) do not count as changes; every
other tracked file does.
reproduce.py refuses to write tables from a changed tree unless --allow-dirty, and then every
table says so (summary.profile_header); every finished stage records the commit in the run's
stages.json, so a run made at another commit than its tables is visible.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

from pipeline_errors import EXIT_BAD_INPUT, EXIT_OK

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OWN_OUTPUTS = ("results", "README.md", "docs/reproducing.md")  # written by the pipeline itself


@dataclasses.dataclass(frozen=True)
class SourceState:
    commit: str  # short hash, "?" outside a git checkout
    changed: tuple[str, ...]  # tracked files with uncommitted changes, outputs excluded

    @property
    def dirty(self) -> bool:
        return bool(self.changed)

    @property
    def label(self) -> str:
        """'58e24ab' or '58e24ab (with uncommitted changes)', as the tables print it."""
        return self.commit + (" (with uncommitted changes)" if self.dirty else "")

    def refusal(self) -> str:
        """The one line reproduce.py prints when it refuses a changed tree."""
        shown = ", ".join(self.changed[:5]) + (f" and {len(self.changed) - 5} more"
                                               if len(self.changed) > 5 else "")
        return (f"{ROOT}: uncommitted changes in {shown}; tables are made from a clean commit: "
                f"commit or stash them, or pass --allow-dirty (make reproduce ALLOW_DIRTY=1), "
                f"which marks every table it writes")


def runs_made_at(run_dirs: list[str]) -> dict[str, int]:
    """How many of the runs each commit label made: the commit recorded with the last finished
    stage of each run's stages.json ("not recorded" for runs made before stages recorded it);
    runs not started are left out."""
    counts: dict[str, int] = {}
    for d in run_dirs:
        try:
            with open(os.path.join(d, "stages.json")) as f:
                stages = json.load(f)
        except (OSError, ValueError):
            continue
        finished = [v for k, v in stages.items() if isinstance(v, dict) and "finished" in v]
        if not finished:
            continue
        last = max(finished, key=lambda v: v["finished"])
        label = last.get("commit", "not recorded")
        counts[label] = counts.get(label, 0) + 1
    return counts


def source_state(root: str = ROOT) -> SourceState:
    def git(*args: str) -> str | None:
        try:
            return subprocess.run(["git", *args], capture_output=True, text=True, cwd=root,
                                  check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            return None

    commit = (git("rev-parse", "--short", "HEAD") or "?").strip() or "?"
    status = git("status", "--porcelain", "--untracked-files=no", "--", ".",
                 *(f":!{o}" for o in OWN_OUTPUTS))
    changed = tuple(line[3:] for line in (status or "").splitlines() if len(line) > 3)
    return SourceState(commit, changed)


def record(out: str, command: list[str]) -> int:
    """Runs `command` from the source tree as it is now and, when it exits 0, writes beside its
    outputs what made them: {"source": the commit label, "changed": [...], "command": "...",
    "seconds": wall time, "finished": UTC time} (atomically). A failed command writes nothing and
    its status is returned: results that did not finish carry no provenance."""
    import shlex
    import time
    from atomic_io import write_json_atomically
    state = source_state()
    start = time.monotonic()
    try:
        rc = subprocess.run(command).returncode
    except OSError as e:
        print(f"provenance: {command[0]}: cannot run ({e.strerror})", file=sys.stderr)
        return EXIT_BAD_INPUT
    if rc == 0:
        write_json_atomically(out, {
            "source": state.label, "changed": list(state.changed),
            "command": shlex.join(command), "seconds": round(time.monotonic() - start, 1),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    return rc


def main(argv: list[str]) -> int:
    """provenance.py record OUT.json -- COMMAND...: record() (the Makefile's `fit` target).
    provenance.py label: the source's label on stdout ('58e24ab' or '58e24ab (with uncommitted
    changes)'), the line every results/bench/*.md begins with (the Makefile's MEASURED_AT, the
    bench scripts), so a bench and a table judge a tree clean by one rule."""
    if argv == ["label"]:
        print(source_state().label)
        return EXIT_OK
    if len(argv) < 4 or argv[0] != "record" or argv[2] != "--":
        print("usage: provenance.py record OUT.json -- COMMAND [ARGS...] | provenance.py label",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    return record(argv[1], argv[3:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
