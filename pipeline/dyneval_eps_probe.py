#!/usr/bin/python3
"""Why our dynamic evaluation gains 1.4% where the paper's gains 11%: a probe of its epsilon.

Dynamic evaluation (Krause et al. 2017) moves every weight by lr g / (MS + eps), MS = the root
mean square of its gradient on the training data. The Sigsoftmax supplementary (section on the
3-layer LSTM) says it used Krause et al.'s grid (lr 3e-5..1e-4, lambda 1e-3..5e-3) with eps = 0.001,
and the dyneval profile does the same. That grid belongs to the version of Krause et al.'s code whose
MS is the root MEAN square and whose default eps is 2e-5; eps = 0.001 is the default of the older
version (and of Yang et al.'s MoS code), whose MS is the root of the SUM over the ~1859 statistics
batches, 43x larger. On our model the mean MS is ~7e-5 (dyneval.json, stats.mean_ms), so eps = 0.001
dominates the denominator and shrinks every step ~10x.

This script measures that: for each run it calls the dyneval binary once per eps on the first
--valid-tokens validation and --test-tokens test tokens (gradient statistics from --stats-tokens
training tokens), everything else the profile's, and writes a table of static and dynamic ppl and
the relative gain per eps, with the finding computed from those numbers. It is a probe on a
prefix of the splits and one seed per head, not a replacement of the profile's full runs.

    /usr/bin/python3 pipeline/dyneval_eps_probe.py --build build \\
        results/dyneval/softmax_s141 results/dyneval/sigsoftmax_s141

needs the runs' weights (best_finetune.pt), which `make reproduce PROFILE=dyneval` leaves in place.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_errors import EXIT_BAD_INPUT, EXIT_OK, refuse  # noqa: E402
from atomic_io import write_json_atomically, write_text_atomically  # noqa: E402
from report_tables import machine_line  # noqa: E402
import provenance  # noqa: E402

PREDICTION = ("With eps = 2e-5 (Krause et al.'s code for this grid) the dynamic gain on the "
              "validation prefix is at least twice the gain with eps = 0.001 (the supplementary's "
              "setting, the dyneval profile's), for every run.")


def gain(row: dict, split: str) -> float:
    """Relative ppl reduction of dynamic over static evaluation on one split."""
    return 1.0 - row["dynamic"][f"{split}_ppl"] / row["static"][f"{split}_ppl"]


def findings(rows: list[dict], eps_small: float, eps_large: float) -> dict:
    """Per run the valid gains at both eps and their ratio; the prediction holds when every
    ratio is >= 2."""
    per_run = {}
    for r in rows:
        per_run.setdefault(r["run"], {})[r["eps"]] = r
    ratios = {}
    for run, by_eps in per_run.items():
        if eps_small in by_eps and eps_large in by_eps:
            large = gain(by_eps[eps_large], "valid")
            small = gain(by_eps[eps_small], "valid")
            ratios[run] = {"gain_small_eps": small, "gain_large_eps": large,
                           "ratio": small / large if large > 0 else float("inf")}
    holds = bool(ratios) and all(v["ratio"] >= 2.0 for v in ratios.values())
    return {"ratios": ratios, "prediction_holds": holds}


def run_one(build: str, run: str, eps: float, a) -> dict:
    binary = os.path.join(build, "trainers", "dyneval")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "dyneval.json")
        cmd = [binary, "--run", run, "--eps", repr(eps), "--lr", repr(a.lr), "--lambda",
               repr(a.lam), "--valid-tokens", str(a.valid_tokens), "--test-tokens",
               str(a.test_tokens), "--stats-tokens", str(a.stats_tokens), "--threads",
               str(a.threads), "--out", out]
        print("[dyneval_eps_probe] $ " + " ".join(cmd), flush=True)
        r = subprocess.run(cmd)
        if r.returncode != 0:
            refuse(f"dyneval_eps_probe: {run}: dyneval exited {r.returncode}")
        with open(out) as f:
            d = json.load(f)
    return {"run": run, "head": d["head"], "eps": eps, "static": d["static"],
            "dynamic": d["dynamic"], "mean_ms": d["stats"]["mean_ms"],
            "seconds": d["seconds"]}


def markdown(rows: list[dict], f: dict, a, command: str) -> str:
    lines = ["# Dynamic evaluation: the step's epsilon (probe)\n",
             f"Produced by `{command}` at {provenance.source_state().label}. "
             f"{machine_line()}\n",
             f"**Probe, scaled down:** the first {a.valid_tokens} validation and {a.test_tokens} "
             f"test tokens, gradient statistics from the first {a.stats_tokens} training tokens, "
             f"lr {a.lr}, lambda {a.lam}, one seed per head; the profile's full runs are in "
             "[summary.md](summary.md).\n",
             f"**Prediction (written before the runs):** {PREDICTION}\n",
             "| run | head | eps | mean MS | static valid | dynamic valid | gain valid | static "
             "test | dynamic test | gain test | seconds |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {os.path.basename(r['run'])} | {r['head']} | {r['eps']:g} | {r['mean_ms']:.2e} | "
            f"{r['static']['valid_ppl']:.2f} | {r['dynamic']['valid_ppl']:.2f} | "
            f"{100 * gain(r, 'valid'):.2f}% | {r['static']['test_ppl']:.2f} | "
            f"{r['dynamic']['test_ppl']:.2f} | {100 * gain(r, 'test'):.2f}% | "
            f"{r['seconds']:.0f} |")
    lines.append("\n## Finding, computed from the table\n")
    for run, v in f["ratios"].items():
        lines.append(f"- {os.path.basename(run)}: valid gain {100 * v['gain_small_eps']:.2f}% at "
                     f"eps {a.eps[1]:g} against {100 * v['gain_large_eps']:.2f}% at eps "
                     f"{a.eps[0]:g}: {v['ratio']:.1f}x")
    lines.append(f"- prediction (every ratio >= 2): "
                 f"{'holds' if f['prediction_holds'] else 'does not hold'}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="example: /usr/bin/python3 pipeline/dyneval_eps_probe.py --build build "
               "results/dyneval/softmax_s141 results/dyneval/sigsoftmax_s141",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="train_wordlm run directories with best_finetune.pt")
    p.add_argument("--build", default="build")
    p.add_argument("--eps", type=float, nargs=2, default=[1e-3, 2e-5],
                   metavar=("LARGE", "SMALL"), help="the two eps (default 1e-3 2e-5)")
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--lambda", dest="lam", type=float, default=0.002)
    p.add_argument("--valid-tokens", type=int, default=5000)
    p.add_argument("--test-tokens", type=int, default=5000)
    p.add_argument("--stats-tokens", type=int, default=100000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", default="results/dyneval/eps_probe.md")
    a = p.parse_args(argv)
    for run in a.runs:
        weights = os.path.join(run, "best_finetune.pt")
        if not os.path.isfile(weights):
            print(f"dyneval_eps_probe: {weights}: no such file (expected the run's finetuned "
                  "weights; make reproduce PROFILE=dyneval makes them)", file=sys.stderr)
            return EXIT_BAD_INPUT
    rows = [run_one(a.build, run, eps, a) for run in a.runs for eps in a.eps]
    f = findings(rows, eps_small=a.eps[1], eps_large=a.eps[0])
    command = " ".join(["/usr/bin/python3", "pipeline/dyneval_eps_probe.py"] +
                       list(sys.argv[1:] if argv is None else argv))
    write_json_atomically(os.path.splitext(a.out)[0] + ".json",
                          {"prediction": PREDICTION, "rows": rows, "findings": f,
                           "options": {k: v for k, v in vars(a).items() if k != "runs"}})
    write_text_atomically(a.out, markdown(rows, f, a, command))
    print(f"[dyneval_eps_probe] wrote {a.out}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
