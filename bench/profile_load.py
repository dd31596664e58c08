#!/usr/bin/python3
"""How long the driver takes to load and plan a profile (`reproduce.py --profile P --plan`) with
the trainers' `--describe --json` answers asked of the binaries (cold: build/trainers/.describe
removed first) and read from the kept answers (warm), in one run, alternating cold and warm.

Model: cold - warm = (questions asked) x (one describe's cost), the questions counted as the
answers the cold run leaves in .describe/ and one describe's cost measured here as
`train_wordlm --describe --json` alone (a LibTorch binary's start: relocations of its ~290
libraries and LibTorch's operator registration).

Usage: bench/profile_load.py [BUILD_DIR] [--runs N] [--profiles smoke,cpu,...]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipeline"))
from pipeline_errors import EXIT_OK, refuse  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def seconds(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if r.returncode != 0:
        refuse(f"profile_load: {' '.join(cmd)}: exit {r.returncode}: "
                 f"{(r.stderr.strip().splitlines() or [''])[-1]}")
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Example: bench/profile_load.py build --runs 5")
    ap.add_argument("build", nargs="?", default=os.path.join(ROOT, "build"))
    ap.add_argument("--runs", type=int, default=5, help="cold and warm runs each (default 5)")
    ap.add_argument("--profiles", default="smoke,cpu,claims,dsweep,nplm",
                    help="comma-separated shipped profiles (default smoke,cpu,claims,dsweep,nplm)")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    cache = os.path.join(build, "trainers", ".describe")
    binary = os.path.join(build, "trainers", "train_wordlm")
    if not os.access(binary, os.X_OK):
        refuse(f"profile_load: {binary} not built (run make build)")
    if a.runs < 1:
        refuse("profile_load: --runs: expected >= 1")

    one = statistics.median(seconds([binary, "--describe", "--json"]) for _ in range(a.runs))
    print(f"One `train_wordlm --describe --json`: {one:.3f} s (median of {a.runs}).\n")
    print("| profile | questions | cold (s) | warm (s) | cold / warm | model: questions x "
          "describe (s) | measured cold - warm (s) |")
    print("|---|---|---|---|---|---|---|")
    for name in a.profiles.split(","):
        cmd = ["/usr/bin/python3", os.path.join(ROOT, "pipeline", "reproduce.py"), "--profile",
               name, "--build", build, "--plan"]
        cold, warm, questions = [], [], 0
        for _ in range(a.runs):
            shutil.rmtree(cache, ignore_errors=True)
            cold.append(seconds(cmd))
            questions = len(os.listdir(cache)) if os.path.isdir(cache) else 0
            warm.append(seconds(cmd))
        c, w = statistics.median(cold), statistics.median(warm)
        print(f"| {name} | {questions} | {c:.2f} | {w:.2f} | {c / w:.1f}x | "
              f"{questions * one:.2f} | {c - w:.2f} |", flush=True)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
