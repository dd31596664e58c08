#!/usr/bin/python3
"""rank_analysis --mpi under `mpirun -n 2` on this machine against one process, on matrices with
known spectra (tests/fixtures/make_rank_criteria_files.py: prescribed singular values, softmax
logits and log-probabilities) and a tall softmax matrix: the gram method (A^T A, the partial
Gram matrices reduced onto process 0) and the sketch (Y, H and the probes added every pass).

Tolerance: two process counts add the same dot products in another order, so sigma_max and tol
agree to 1e-12 relative (the float64 rounding of T-term sums, gamma_T < 1e-13 here) and the
certified ranks, windows and verdicts exactly. Bad input: every process stops, exit status 2,
and the one line of the one-process run (mpirun -q keeps its own banner out).

  test_rank_analysis_mpi.py BUILD_DIR"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from checks import check, finish, message_lines  # tests/fixtures/checks.py (PYTHONPATH)

build = os.path.abspath(sys.argv[1])
here = os.path.dirname(os.path.abspath(__file__))
cli = os.path.join(build, "analysis", "rank_analysis")
mpirun = shutil.which("mpirun")
if not mpirun:
    print("SKIP: mpirun not found (make deps installs openmpi-bin)")
    sys.exit(0)
launch = [mpirun, "-q", "-n", "2", "--oversubscribe"] + (
    ["--allow-run-as-root"] if os.geteuid() == 0 else [])


def run(args, mpi):
    cmd = (launch + [cli, "--mpi"] if mpi else [cli]) + ["--quiet", "--threads", "1"] + args
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return p.returncode, p.stdout, p.stderr


with tempfile.TemporaryDirectory() as tmp:
    subprocess.run(["/usr/bin/python3", os.path.join(here, "..", "fixtures",
                                                     "make_rank_criteria_files.py"), tmp],
                   check=True, stdout=subprocess.DEVNULL)
    rng = np.random.default_rng(3)
    z = rng.standard_normal((3001, 12)) @ rng.standard_normal((12, 400)) + rng.standard_normal(400)
    top = z.max(axis=1, keepdims=True)
    tall = (z - top - np.log(np.exp(z - top).sum(axis=1, keepdims=True))).astype(np.float32)
    np.save(os.path.join(tmp, "tall.npy"), tall)  # 3001 rows: shares of 1501 and 1500
    facts = ["--head", "softmax", "--d", "12", "--bias", "1"]
    for name in ("wide", "logprobs", "logits", "tall"):
        path = os.path.join(tmp, name + ".npy")
        for method in (["--method", "gram", "--gram", "columns", "--spectrum"],
                       ["--method", "sketch"]):
            args = ["--json", "--eps", "float32"] + method + facts + [path]
            s1, o1, e1 = run(args, mpi=False)
            s2, o2, e2 = run(args, mpi=True)
            if s1 != 0 or s2 != 0:
                check(False, f"{name} {method[1]}: exit {s1} / {s2}: {e1.strip()} {e2.strip()}")
                continue
            one, two = json.loads(o1), json.loads(o2)
            same = all(one[k] == two[k] for k in ("rank", "rank_min", "rank_max", "certified",
                                                  "verdict", "bound", "input", "method", "gram"))
            close = all(abs(one[k] - two[k]) <= 1e-12 * abs(one[k]) for k in ("sigma_max", "tol"))
            check(same and close and two["processes"] == 2 and one["processes"] == 1
                  and len(o2.strip().splitlines()) == 1,
                  f"{name}, {method[1]}: 2 processes give rank {two['rank']} "
                  f"[{two['rank_min']}, {two['rank_max']}] certified={two['certified']} as one "
                  f"(sigma_max {one['sigma_max']:.15g} vs {two['sigma_max']:.15g}), one JSON line")

    # Bad input: the same one line, exit 2, from every process count.
    nan = tall.copy()
    nan[2500, 7] = np.nan  # in process 1's share
    np.save(os.path.join(tmp, "nan.npy"), nan)
    cases = [
        ("a NaN in the second process's rows", ["--method", "gram"] + facts,
         os.path.join(tmp, "nan.npy")),
        ("a NaN, sketch", ["--method", "sketch"] + facts, os.path.join(tmp, "nan.npy")),
        ("logits declared as log-probabilities", ["--method", "gram"] + facts,
         os.path.join(tmp, "declared_bad.h5")),
        ("--method exact with --mpi", ["--method", "exact"] + facts, os.path.join(tmp, "tall.npy")),
        ("--gram rows with --mpi", ["--method", "gram", "--gram", "rows"] + facts,
         os.path.join(tmp, "tall.npy")),
    ]
    for what, args, path in cases:
        s1, _, e1 = run(args + [path], mpi=False)
        s2, o2, e2 = run(args + [path], mpi=True)
        lines = message_lines(e2)
        expected_same = "--mpi" not in what
        check(s2 == 2 and len(lines) == 1 and lines[0].startswith("rank_analysis: ")
              and o2 == "" and (not expected_same or (s1 == 2 and message_lines(e1) == lines)),
              f"{what}: exit {s2}, one line: {lines[0] if lines else '(none)'}")

sys.exit(finish())
