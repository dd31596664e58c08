"""What the probes of bench/ share: their command line (--build, --seeds, --threads, --work,
--out), how a report names the build it came from, and where the report goes."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipeline"))
from pipeline_errors import refuse  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parser(doc: str, seeds: str, work: str) -> argparse.ArgumentParser:
    """The probes' options; a probe adds its own before parse_args()."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--seeds", default=seeds)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", default=work)
    ap.add_argument("--out", default=None, help="write the markdown here (default: stdout)")
    return ap


def binary(probe: str, build: str, name: str) -> str:
    """build/trainers/NAME, or exit naming it when it is not built."""
    exe = os.path.join(build, "trainers", name)
    if not os.access(exe, os.X_OK):
        refuse(f"{probe}: {exe} not found: build first (make build)")
    return exe


def train_or_resume(probe: str, cmd: list[str], out: str, label: str) -> None:
    """Run a trainer command line that writes the run directory `out`, unless out/final.json
    says the run finished; a run with a checkpoint.pt but no final.json (a probe stopped midway)
    continues from it (the trainers' --resume), since a trainer refuses to start over a
    checkpoint. Exit naming the command and its stderr's tail when the trainer fails."""
    if os.path.isfile(os.path.join(out, "final.json")):
        return
    if os.path.isfile(os.path.join(out, "checkpoint.pt")):
        cmd = cmd + ["--resume"]
        label += " (resumed)"
    print(f"{probe}: {label}", file=sys.stderr, flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        refuse(f"{probe}: {' '.join(cmd)} failed:\n{r.stderr[-2000:]}")


def build_label(build: str, outside: str = "BUILD") -> str:
    """A directory (the build, a work directory) as a report's command line shows it: relative
    to the repository, or `outside` for one outside it."""
    path = os.path.abspath(build)
    return os.path.relpath(path, ROOT) if path.startswith(ROOT + os.sep) else outside


def made_at(run_dirs: list[str] | None = None) -> str:
    """The report's provenance sentence: the commit this probe ran at (and whether the tree had
    changes, pipeline/provenance.py's rule), and the commits that made the runs it reads (the
    last finished stage's in each run's stages.json; "not recorded" for a run without one, as a
    probe's own runs)."""
    sys.path.insert(0, os.path.join(ROOT, "pipeline"))
    from provenance import runs_made_at, source_state
    text = f"Made at commit {source_state().label}."
    if run_dirs:
        made = runs_made_at(run_dirs)
        missing = len(run_dirs) - sum(made.values())  # no stages.json, or none finished
        if missing:
            made["not recorded"] = made.get("not recorded", 0) + missing
        shown = ", ".join(f"{label} ({n})" for label, n in sorted(made.items()))
        text += f" The {len(run_dirs)} runs it reads were made at: {shown}."
    return text


def emit(text: str, out: str | None) -> None:
    """The report to `out` (written atomically), else to stdout."""
    if not out:
        print(text, end="")
        return
    sys.path.insert(0, os.path.join(ROOT, "pipeline"))
    from atomic_io import write_text_atomically
    write_text_atomically(out, text)
