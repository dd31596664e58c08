#!/usr/bin/python3
"""The sketch's power steps with one row stream against several lanes (analysis/residual_power.h,
"Lanes"), paired in one run: the same file, options and seed, the order alternated by round.

  bench/bench_power_lanes.py BUILD FILE.npy [--rounds 3] [--threads 2] [-- RANK_ANALYSIS_OPTIONS]

FILE.npy: a float32 matrix whose count the sketch certifies through power steps, e.g.
  /usr/bin/python3 bench/make_spectrum_npy.py /tmp/wide.npy --T 60000 --M 33278 --count 300 --tail 600
(WikiText-2's width: the power step's row blocks and GEMM shapes are those of the full test set).
Default options: --method sketch --head sigsoftmax --d 100 --bias 1. Each run is
`rank_analysis --json --threads THREADS --sketch-power-lanes L`, L = 1 (one stream with every
BLAS thread, reads overlapped) and L = THREADS; both must report the same certified count.

Prints markdown: each round's median seconds per power step (from the progress lines, whole
seconds) for both, their ratio, both runs' wall times and their difference per step (the passes
before the steps are the same in both), the step's FLOP model (4 T M p) at the dgemm rate of the step's
own shape (block_rows x M by M x p, measured here with the same OpenBLAS) and its byte model (the
file read once, `cat FILE > /dev/null` timed here after a first read).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipeline"))
from pipeline_errors import EXIT_OK, refuse  # noqa: E402

STEP = re.compile(r"power step (\d+) on c = (\d+)\) in ((?:\d+h)?(?:\d+m)?\d+s):")


def seconds(text: str) -> int:
    """'1m29s' -> 89 (common/duration.cpp's format)."""
    total = 0
    for value, unit in re.findall(r"(\d+)([hms])", text):
        total += int(value) * {"h": 3600, "m": 60, "s": 1}[unit]
    return total


def run(binary: str, path: str, lanes: int, threads: int, options: list[str]) -> dict:
    cmd = [binary, "--json", "--threads", str(threads), "--sketch-power-lanes", str(lanes)] + \
        options + [path]
    start = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - start
    if p.returncode != 0:
        refuse(f"bench_power_lanes.py: {' '.join(cmd)} exited {p.returncode}: "
               f"{p.stderr.strip().splitlines()[-1:]}")
    steps = [seconds(m.group(3)) for m in STEP.finditer(p.stderr)]
    return {"json": json.loads(p.stdout.strip().splitlines()[-1]), "steps": steps, "wall": wall}


def read_seconds(path: str) -> float:
    """`cat FILE > /dev/null`, the second of two reads (the first warms what the cache holds)."""
    for _ in range(2):
        start = time.monotonic()
        subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)
        wall = time.monotonic() - start
    return wall


def step_gemm_gflops(rows: int, cols: int, probes: int, threads: int, core: str) -> float:
    """The dgemm rate of a power step's two products on one block (rows x cols by cols x probes,
    then its transpose), with the OpenMP OpenBLAS rank_analysis loads and `threads` threads."""
    code = ("import numpy as np, time\n"
            f"x = np.random.rand({rows}, {cols}); w = np.random.rand({cols}, {probes})\n"
            "z = x @ w; y = x.T @ z\n"
            "t = time.perf_counter()\n"
            "for _ in range(3): z = x @ w; y = x.T @ z\n"
            "t = time.perf_counter() - t\n"
            f"print(3 * 4 * {rows} * {cols} * {probes} / t / 1e9)")
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               OPENBLAS_CORETYPE=core,
               LD_PRELOAD="/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3")
    return float(subprocess.run(["/usr/bin/python3", "-c", code], env=env, check=True,
                                stdout=subprocess.PIPE, text=True).stdout)


def round_rows(rounds: list[dict], lanes: int) -> list[float]:
    """The table of the rounds; returns each round's ratio of seconds per step (1 lane / lanes)."""
    print(f"| round | order | 1 lane: s / step (median) | {lanes} lanes: s / step (median) "
          f"| 1 lane / {lanes} lanes | steps | wall s (1, {lanes}) | wall saved per step, s "
          f"| count | certified |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    ratios = []
    for r, res in enumerate(rounds):
        one, many = res[1], res[lanes]
        if not one["steps"] or not many["steps"]:
            print(f"| {r + 1} | - | no power steps in the runs | | | | | | | |")
            continue
        a1, an = statistics.median(one["steps"]), statistics.median(many["steps"])
        ratios.append(a1 / an)
        same = one["json"]["rank"] == many["json"]["rank"] and \
            one["json"].get("certified") == many["json"].get("certified")
        print(f"| {r + 1} | {' then '.join(str(n) for n in res)} | {a1:.0f} | {an:.0f} | "
              f"{a1 / an:.2f}x | {len(one['steps'])}, {len(many['steps'])} | "
              f"{one['wall']:.1f}, {many['wall']:.1f} | "
              f"{(one['wall'] - many['wall']) / len(many['steps']):.1f} | "
              f"{one['json']['rank']}, {many['json']['rank']}{'' if same else ' (DIFFER)'} | "
              f"{one['json'].get('certified')}, {many['json'].get('certified')} |")
    return ratios


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("build")
    ap.add_argument("file")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("options", nargs="*", help="rank_analysis options (after --)")
    a = ap.parse_args()
    binary = os.path.join(a.build, "analysis", "rank_analysis")
    if not os.access(binary, os.X_OK):
        refuse(f"bench_power_lanes.py: {binary} not built (run make build)")
    try:
        t, m = np.load(a.file, mmap_mode="r").shape
    except (OSError, ValueError) as e:
        refuse(f"bench_power_lanes.py: {a.file}: not a 2-D .npy ({e})")
    options = a.options or ["--method", "sketch", "--head", "sigsoftmax", "--d", "100",
                            "--bias", "1"]
    lanes = a.threads
    here = os.path.dirname(os.path.abspath(__file__))  # the tree as the runs start
    commit = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"],
                            stdout=subprocess.PIPE, text=True).stdout.strip() or "?"
    dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                           stdout=subprocess.PIPE, text=True).stdout.strip()
    load0 = os.getloadavg()
    started = time.monotonic()
    rounds = []
    for r in range(a.rounds):
        order = [1, lanes] if r % 2 == 0 else [lanes, 1]
        rounds.append({n: run(binary, a.file, n, a.threads, options) for n in order})
    read_s = read_seconds(a.file)
    first = rounds[0][1]["json"]
    core = first.get("blas_core", "?")
    probes = 40
    for i, opt in enumerate(options):
        if opt == "--sketch-probes" and i + 1 < len(options):
            probes = int(options[i + 1])
    block_rows = max(1, (256 << 20) // (8 * m))  # analysis/sketch_budget.cpp's sketch_block_rows
    gflops = {n: step_gemm_gflops(block_rows, m, probes, n, core) for n in (1, a.threads)}
    flops = 4 * t * m * probes
    print("# Power steps: one row stream against lanes\n")
    print(f"Measured {time.strftime('%Y-%m-%d')} at commit {commit}"
          f"{' (with uncommitted changes)' if dirty else ''}:\n")
    print(f"`bench/bench_power_lanes.py {a.build} {a.file} --rounds {a.rounds} --threads "
          f"{a.threads}` with `{' '.join(options)}`; {t} x {m} float32; BLAS: "
          f"{first.get('blas_library', '?')}, core {core}, {a.threads} threads; load average at "
          f"start {' '.join(f'{x:.2f}' for x in load0)}, at end "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{(time.monotonic() - started) / 60:.0f} min in all.\n")
    ratios = round_rows(rounds, lanes)
    if ratios:
        print(f"\nMedian ratio: **{statistics.median(ratios):.2f}x** (seconds per step, one "
              f"stream over {lanes} lanes).\n")
    print(f"- FLOP model of a step: 4 T M p = {flops / 1e12:.2f} TFLOP; at the dgemm rate of the "
          f"step's shape ({block_rows} x {m} by {m} x {probes} and back) measured here, "
          f"{gflops[a.threads]:.1f} GFLOP/s with {a.threads} threads = "
          f"{flops / gflops[a.threads] / 1e9:.1f} s, {gflops[1]:.1f} GFLOP/s with 1 thread = "
          f"{flops / gflops[1] / 1e9:.1f} s per thread ({flops / gflops[1] / 1e9 / lanes:.1f} s "
          f"for {lanes} lanes side by side)")
    print(f"- Byte model: the file read once per step, `cat FILE > /dev/null` {read_s:.1f} s "
          f"({t * m * 4 / 1e9:.1f} GB)")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
