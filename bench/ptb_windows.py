#!/usr/bin/python3
"""The cpu profile's PTB rank windows under the current Gram path, beside the ones its run
recorded: runs `rank_analysis --method gram --json` on the kept full-test dumps of the first
seed (results/cpu/<head>_s141/logprobs.h5, git-ignored: they exist after `make reproduce`) and
prints Markdown on stdout: each head's recorded window (rank.json) and the new one, with the
Gram's rounding bound and the eigensolver's error that set the window's width.

  bench/ptb_windows.py BUILD_DIR [RESULTS_DIR (default results/cpu)] [THREADS (default 2)]

A window's width is what the errors leave undecided: rank_min..rank_max brackets the true count
(analysis/rank_certificate.h); the summation by blocks (analysis/gram_block.h) shrinks the
Gram's part."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipeline"))
from pipeline_errors import refuse  # noqa: E402
from provenance import source_state  # noqa: E402

HEADS = ["softmax", "sigsoftmax", "sigmoid", "relu", "mos", "moss"]


def window(r: dict) -> str:
    lo, hi = r.get("rank_min"), r.get("rank_max")
    return str(r["rank"]) if lo is None or lo == hi else f"{lo}..{hi}"


def width(r: dict) -> str:
    lo, hi = r.get("rank_min"), r.get("rank_max")
    return "-" if lo is None else f"{100.0 * (hi - lo) / max(r['rank'], 1):.1f}%"


def main() -> None:
    build = sys.argv[1]
    results = sys.argv[2] if len(sys.argv) > 2 else "results/cpu"
    threads = sys.argv[3] if len(sys.argv) > 3 else "2"
    binary = os.path.join(build, "analysis", "rank_analysis")
    commit = source_state().label
    rows = []
    for head in HEADS:
        run = os.path.join(results, f"{head}_s141")
        dump = os.path.join(run, "logprobs.h5")
        if not os.path.exists(dump):
            refuse(f"{dump}: no dump (make reproduce keeps the first seed's; run it first)")
        with open(os.path.join(run, "rank.json")) as f:
            old = json.load(f)
        with open(os.path.join(run, "stages.json")) as f:
            old["commit"] = json.load(f)["analyse"]["commit"]
        print(f"[ptb_windows] {head}: rank_analysis --method gram on {dump}", file=sys.stderr)
        start = time.perf_counter()
        out = subprocess.run([binary, dump, "--method", "gram", "--json", "--quiet",
                              "--threads", threads], capture_output=True, text=True, check=True)
        new = json.loads(out.stdout)
        rows.append((head, old, new, time.perf_counter() - start))
    print("# PTB rank windows: the Gram path summed by blocks against the recorded run\n")
    print(f"Measured at commit {commit} with {threads} threads, by\n\n```\n"
          f"bench/ptb_windows.py {build} {results} {threads}\n```\n")
    print(f"Recorded: {results}/<head>_s141/rank.json (the profile's analyse stage, commit "
          f"{rows[0][1]['commit']}). The dumps are the same files; only "
          f"the Gram path's summation and its certificate differ.\n")
    print("| head | recorded window | width | gram_error | solver_error | new window | width | "
          "gram_error | solver_error | certified | verdict | seconds |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for head, old, new, seconds in rows:
        print(f"| {head} | {window(old)} | {width(old)} | {old['gram_error']:.3g} | "
              f"{old['solver_error']:.3g} | {window(new)} | {width(new)} | "
              f"{new['gram_error']:.3g} | {new['solver_error']:.3g} | {new['certified']} | "
              f"{new['verdict']} | {seconds:.0f} |")
    print("\ngram_error and solver_error are in eigenvalue units (sigma^2); tol^2 is about 34 here "
          "(tol ~ 5.86). Width: (rank_max - rank_min) / rank.")


if __name__ == "__main__":
    main()
