#!/usr/bin/python3
"""auto's hand-over (analysis/analyse.h, AnalysisPlan::sketch_fallback): a Gram path that leaves a
window hands the file to the sketch, which certifies the count, and says why in one line; a window
too close to full rank, or within 1% of its upper end, stays the Gram path's.

The matrices: float32 .npy with a prescribed spectrum (U diag(s) V^T in float64, numpy's QR for
U and V), `count` values from sigma_1 down to 3 tol then `tail` over [0.2, 0.9] tol: the count is
exact by construction (float32 storage moves each sigma by ~1e-9 sigma_1, tol is 3.9e-6), and the
Gram path's rounding bound for data of mixed sign (gamma_T ||A||_F^2) lies above the tail's top.

  test_auto_fallback.py RANK_ANALYSIS"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

RANK_ANALYSIS = sys.argv[1]
T, M = 3000, 1200
FACTS = ["--head", "sigsoftmax", "--d", "50", "--bias", "1"]


def spectrum_npy(path, count, tail, seed, near=()):
    """`near`: values given in units of tol, after the tail's (a window of a few counts)."""
    tol = 0.5 * np.sqrt(M + T + 1) * float(np.finfo(np.float32).eps)
    s = np.concatenate([np.geomspace(1.0, 3 * tol, count), tol * np.linspace(0.9, 0.2, tail),
                        tol * np.asarray(near, dtype=float)])
    rng = np.random.default_rng(seed)
    u, _ = np.linalg.qr(rng.standard_normal((T, len(s))))
    v, _ = np.linalg.qr(rng.standard_normal((M, len(s))))
    np.save(path, ((u * s) @ v.T).astype(np.float32))


def analyse(path, extra=()):
    out = subprocess.run([RANK_ANALYSIS, "--quiet", "--json", *FACTS, *extra, path],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    failures = 0

    def check(cond, what):
        nonlocal failures
        print(("ok   " if cond else "FAIL ") + what)
        failures += not cond

    with tempfile.TemporaryDirectory() as tmp:
        low = os.path.join(tmp, "low.npy")
        spectrum_npy(low, count=240, tail=600, seed=1)
        gram = analyse(low, ["--method", "gram"])
        check(gram["certified"] is False and gram["rank_min"] <= 240 < gram["rank_max"],
              f"the Gram path leaves a window around 240: {gram['rank_min']}..{gram['rank_max']}")
        auto = analyse(low)
        check(auto["method"] == "sketch", f"auto hands it to the sketch: {auto['method']}")
        check(auto.get("certified") is True and auto["rank"] == 240,
              f"the sketch certifies the count 240: {auto['rank']}, certified {auto['certified']}")
        note = auto.get("method_note", "")
        check(note.startswith("auto: the Gram path left rank ") and note.endswith(": the sketch"),
              f"the hand-over says why in one line: {note!r}")
        check(auto["seconds"] > gram["seconds"] * 0.5,
              "the result's time includes the Gram path's")

        # A sketch held to two passes without power steps stops with its window open above
        # (the probes' residual sees the tail); the Gram path's window bounds it from above.
        short = ["--sketch-max-passes", "2", "--sketch-power-steps", "0"]
        alone = analyse(low, ["--method", "sketch", *short])
        check(alone["certified"] is False and alone["rank_max"] == min(T, M),
              f"the sketch alone, held to two passes, leaves {alone['rank_min']}.."
              f"{alone['rank_max']} open")
        both = analyse(low, short)
        lo, hi = both["rank_min"], both["rank_max"]
        check(both["method"] == "sketch" and lo <= 240 <= hi,
              f"auto's window {lo}..{hi} holds the true count 240")
        check(hi <= gram["rank_max"] < min(T, M),
              f"its upper end is the Gram path's: {hi} <= {gram['rank_max']}")
        check(lo >= gram["rank_min"], f"its lower end is at least the Gram path's: {lo}")
        check("the window is both's" in both.get("method_note", ""),
              f"the note says the window is both's: {both.get('method_note')!r}")
        check(both["certified"] == (lo == hi) and lo <= both["rank"] <= hi,
              f"the nominal rank {both['rank']} lies in the window, certified iff it is closed")

        high = os.path.join(tmp, "high.npy")
        spectrum_npy(high, count=700, tail=400, seed=2)
        near_full = analyse(high)
        check(near_full["method"] == "gram" and "method_note" not in near_full,
              f"a window past half of min(T, M) stays the Gram path's: {near_full['method']} "
              f"{near_full.get('rank_min')}..{near_full.get('rank_max')}")
        check(near_full["rank_min"] <= 700 <= near_full["rank_max"],
              "and the window holds the true count 700")

        # Two values astride tol and nothing else below 3 tol: the Gram path's window is
        # 240..242, within 1% of its upper end, so auto keeps it and says so.
        narrow = os.path.join(tmp, "narrow.npy")
        spectrum_npy(narrow, count=240, tail=0, seed=3, near=(1.02, 0.98))
        kept = analyse(narrow)
        lo, hi = kept["rank_min"], kept["rank_max"]
        check(kept["method"] == "gram" and kept["certified"] is False and lo < hi
              and 100 * (hi - lo) <= hi and lo <= 241 <= hi,
              f"a window within 1% ({lo}..{hi}) stays the Gram path's: {kept['method']}")
        check(kept.get("method_note", "").endswith("within 1% of its upper end: kept, the "
                                                   "sketch not tried"),
              f"and says why in one line: {kept.get('method_note')!r}")
    print(f"{failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
