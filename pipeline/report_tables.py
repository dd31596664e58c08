"""What every profile report shares (summary.py for the word LM, seed_summary.py for the NPLM and
the char LM, classify_summary.py for the classifier): the header of a summary.md (title, command,
scaling, provenance), the machine line, number formats, the wall-time rows, the paper's CSV
figures, and the atomic write of the file."""

from __future__ import annotations

import csv
import math
import os
import platform
import statistics
import subprocess
import time

import provenance
from atomic_io import write_text_atomically
from durations import format_duration

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAPER_DIR = os.path.join(ROOT, "results", "paper")


def only_lower_bound(rank_json: dict) -> bool:
    """A rank.json whose count the certificate did not settle (the Gram certificate's window, or
    a sketch stopped at its verdict, still open: rank_min < rank_max): its rank is the window
    rank_min..rank_max, not a count."""
    r = rank_json
    return r.get("certified") is False and r.get("rank_min") is not None and \
        r.get("rank_max", r["rank_min"]) > r["rank_min"]


def rank_window(rank_json: dict) -> tuple[int, int]:
    """The certified numerical rank as (lowest, highest): (rank, rank) for a count, else the
    certificate's window rank_min..rank_max (a sketch stopped at its verdict leaves the highest at
    min(M, T), the trivial bound)."""
    r = rank_json
    if only_lower_bound(r):
        return int(r["rank_min"]), int(r["rank_max"])
    return int(r["rank"]), int(r["rank"])


def rank_text(rank_json: dict) -> str:
    """A rank as the tables print it: the count, 'lo..hi' for an open window, and 'rank >= lo'
    where the window's top is only the trivial min(M, T)."""
    lo, hi = rank_window(rank_json)
    if lo == hi:
        return str(lo)
    trivial = min(int(rank_json.get("M", hi)), int(rank_json.get("T", hi)))
    return f">= {lo}" if hi >= trivial else f"{lo}..{hi}"


def window_order(a: tuple[int, int], b: tuple[int, int], strict: bool = True) -> bool | None:
    """a > b (a >= b when not strict) for two rank windows: True when it holds for every count in
    them, False when it fails for every one, None (undecided) when the windows overlap so that
    either could be."""
    if (a[0] > b[1]) if strict else (a[0] >= b[1]):
        return True
    if (a[1] <= b[0]) if strict else (a[1] < b[0]):
        return False
    return None


def paper_csv(name: str) -> list[dict]:
    path = os.path.join(PAPER_DIR, name)
    with open(path) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def mean_and_interval(diffs: list[float], alpha: float = 0.05) -> tuple[float, tuple[float, float]]:
    """The mean of paired differences and its 1 - alpha Student-t interval (n >= 2): the one
    interval the summaries and the claims table print."""
    from scipy import stats
    n = len(diffs)
    mean = statistics.mean(diffs)
    half = stats.t.ppf(1 - alpha / 2, n - 1) * statistics.stdev(diffs) / math.sqrt(n)
    return mean, (mean - half, mean + half)


def fmt(x: float) -> str:
    return f"{x:.0f}" if x >= 1000 else f"{x:.1f}"


def plus_minus(mean: float, std: float) -> str:
    """mean ± std, both with the mean's precision."""
    return f"{mean:.0f} ± {std:.0f}" if mean >= 1000 else f"{mean:.1f} ± {std:.1f}"


def mean_std(xs: list[float]) -> str:
    if not xs:
        return "-"
    if len(xs) == 1:
        return fmt(xs[0])
    return plus_minus(statistics.mean(xs), statistics.stdev(xs))


def machine_line() -> str:
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem = next(int(line.split()[1]) for line in open("/proc/meminfo")
                   if line.startswith("MemTotal")) / 2**20
    except (OSError, StopIteration):
        mem = float("nan")

    def run(*cmd: str) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                                  check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return "?"

    commit = provenance.source_state().label
    torch = run("dpkg-query", "-W", "-f=${Version}", "libtorch-dev")
    os_name = "?"
    try:
        os_name = next(line.split("=", 1)[1].strip().strip('"') for line in
                       open("/etc/os-release") if line.startswith("PRETTY_NAME="))
    except (OSError, StopIteration):
        pass
    return (f"{cpu}, {os.cpu_count()} cores, {mem:.0f} GiB RAM, {os_name} "
            f"({platform.machine()}), LibTorch {torch} (CPU), commit {commit}, "
            f"tables written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")


def profile_header(w, profile) -> None:
    """The first lines of every profile's summary.md: title, the command, the scaling."""
    w(f"# Profile `{profile.name}`: {profile.description}\n")
    w(f"Produced by `make reproduce PROFILE={profile.name}` (`/usr/bin/python3 pipeline/"
      f"reproduce.py --profile {profile.name}`), profile `pipeline/profiles/{profile.name}.toml`.\n")
    w(f"**Scaled down:** {profile.scaled_down}\n")
    if getattr(profile, "prediction", ""):
        w(f"**Prediction, written before the runs** (the profile's `prediction`): "
          f"{profile.prediction}\n")
    state = provenance.source_state()
    if state.dirty:
        w(f"> **Made from a tree with uncommitted changes** (`--allow-dirty`): commit "
          f"{state.commit} plus changes to {', '.join(state.changed[:5])}"
          f"{' and more' if len(state.changed) > 5 else ''}. No commit reproduces these tables.\n")
    made_at = provenance.runs_made_at([r.dir for r in profile.runs()])
    if made_at:
        w("**Runs made at:** " + "; ".join(f"{c} ({n} run{'s' if n != 1 else ''})"
                                           for c, n in made_at.items()) +
          (" (the commit of each run's last stage; its stages.json records every stage's)"
           if len(made_at) > 1 else "") + ".\n")


def wall_time_rows(w, runs, stages_of, names, global_timings: dict) -> None:
    """One row per run: the seconds of each stage in `names` (stages_of(run): its stages.json),
    and its total; then the profile-wide stages and the sum of everything."""
    grand = 0.0
    for r in runs:
        st = stages_of(r)
        secs = [st[n]["seconds"] if n in st else None for n in names]
        total = sum(s for s in secs if s is not None)
        grand += total
        w(f"| {r.label} | " + " | ".join("-" if s is None else format_duration(s) for s in secs) +
          f" | {format_duration(total)} |")
    extra = sum(v.get("seconds", 0.0) for v in global_timings.values())
    grand += extra
    w(f"\nPlot and tables: {format_duration(extra)}. **All stages: {format_duration(grand)}** "
      "(sum of the recorded stage times, interrupted attempts included).\n")
    lanes = global_timings.get("runs_wall")
    if lanes:  # the driver's wall clock over the runs (reproduce.py: every invocation adds its own)
        wall = lanes["wall_seconds"] + extra
        w(f"**Wall time: {format_duration(wall)}** ({format_duration(lanes['wall_seconds'])} "
          f"for the runs, {lanes['jobs']} at a time with {lanes['threads']} "
          f"thread{'s' if lanes['threads'] != 1 else ''} each, then the plot and tables; "
          "every invocation of the driver counted)." + invocations_text(lanes) + "\n")


def invocations_text(lanes: dict) -> str:
    """' In N invocations: X (stages), Y (stages).' when the runs took more than one."""
    done = lanes.get("invocations") or []
    if len(done) < 2:
        return ""
    return (f" In {len(done)} invocations: " +
            ", ".join(f"{format_duration(d['seconds'])} "
                      f"({', '.join(d['stages']) if d.get('stages') else 'stages not recorded'})"
                      for d in done) + ".")


def write_markdown(path: str, lines: list[str]) -> str:
    """Writes the lines to path atomically (a temporary file renamed into place)."""
    write_text_atomically(path, "\n".join(lines) + "\n")
    return path
