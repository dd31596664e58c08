#!/usr/bin/python3
"""Does the character-level tie of the sigsoftmax supplementary (D: softmax and sigsoftmax equal
when M < d, because softmax is not bottlenecked there) appear with longer training? Trained for
the config's 4 epochs (trainers/configs/char_ptb_cpu.toml), the char profile found sigsoftmax
better by 0.065 bpc (2 seeds) with the validation bpc still falling fast (2.68, 2.38, 2.21, 2.11),
far from the converged models the paper compares. The profile now trains 4x the epochs (16) over
three seeds; this probe reads its runs (or trains its own at the same setting: --work elsewhere)
and reports the gap softmax - sigsoftmax in validation bpc after every epoch (mean over seeds,
95% t interval) and in test bpc at the end. If the gap shrinks toward 0 with training, the
4-epoch contradiction is a property of short training; if it stays, it is not.

Runs are read from --work (one directory per head and seed, as make reproduce PROFILE=char
writes them): a finished one is read, a missing one trained there and an interrupted one resumed
(train_charlm --resume).

    make reproduce PROFILE=char
    /usr/bin/python3 bench/char_tie_probe.py [--work results/char] [--build build] [--epochs 16]
        [--seeds 141,142,143] [--threads 2] [--out results/bench/char_tie_probe.md]
"""
from __future__ import annotations

import probe_cli
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipeline"))
from pipeline_errors import refuse  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADS = ("softmax", "sigsoftmax")


def run(head: str, seed: int, args) -> dict:
    out = os.path.join(args.work, f"{head}_s{seed}")
    final = os.path.join(out, "final.json")
    cmd = [probe_cli.binary("char_tie_probe", args.build, "train_charlm"), "--config",
           os.path.join(ROOT, "trainers", "configs", "char_ptb_cpu.toml"), "--head", head,
           "--seed", str(seed), "--epochs", str(args.epochs), "--threads", str(args.threads),
           "--out", out]
    probe_cli.train_or_resume("char_tie_probe", cmd, out,
                              f"{head} seed {seed}, {args.epochs} epochs")
    sys.path.insert(0, os.path.join(ROOT, "pipeline"))
    from final_json import read_final, section
    read = read_final(final, "charlm")
    if read is None:
        refuse(f"char_tie_probe: {final} is missing or not JSON")
    result = {**read, **section(read)}  # the trainer's keys (test_bpc) at the top
    with open(os.path.join(out, "metrics.jsonl")) as f:
        valid = [json.loads(line) for line in f if '"valid"' in line]
    result["valid_by_epoch"] = {r["epoch"]: r["valid_bpc"] for r in valid
                                if r.get("event") == "valid"}
    return result


def interval(softmax: list[float], sigsoftmax: list[float]) -> tuple[float, float, float, float]:
    """Mean of softmax - sigsoftmax, its 95% t interval and the paired t-test's p (the claims
    table's statistics, pipeline/claim_tests.py); NaN interval and p for one pair."""
    if len(softmax) < 2:
        return softmax[0] - sigsoftmax[0], math.nan, math.nan, math.nan
    sys.path.insert(0, os.path.join(ROOT, "pipeline"))
    from claim_tests import directional
    v = directional(softmax, sigsoftmax)  # effect = mean of softmax - sigsoftmax
    return v.effect, v.ci[0], v.ci[1], v.p


def gap_cells(m: float, lo: float, hi: float, p: float) -> str:
    """'gap [lo, hi] | p', or 'gap | -' with one seed (no interval)."""
    if math.isnan(lo):
        return f"{m:+.4f} | -"
    return f"{m:+.4f} [{lo:+.4f}, {hi:+.4f}] | {p:.2g}"


def report(res: dict, seeds: list[int], epochs: int, build: str, work: str,
           run_dirs: list[str]) -> str:
    mean = lambda xs: sum(xs) / len(xs)
    lines = ["# The character-level tie (sigsoftmax supplementary D) with 4x the training",
             "", f"Written by `/usr/bin/python3 bench/char_tie_probe.py --work {work} --build "
             f"{build} --epochs {epochs} --seeds {','.join(map(str, seeds))}` over the runs of "
             "`make reproduce PROFILE=char` (train_charlm: PTB characters, M = 50, one LSTM layer "
             f"of 128 units, Adam lr 0.001; {epochs} epochs, 4x the config's 4, the profile's "
             "length before this probe). Gap = softmax - sigsoftmax in bits per "
             "character (> 0: sigsoftmax better), paired by seed; CI: 95% t interval; p: paired "
             "t-test.", "",
             probe_cli.made_at(run_dirs),
             "",
             "| after | softmax bpc | sigsoftmax bpc | gap [95% CI] | p |", "|---|---|---|---|---|"]
    gaps = {}
    for e in range(1, epochs + 1):
        s = [r["valid_by_epoch"][e] for r in res["softmax"]]
        g = [r["valid_by_epoch"][e] for r in res["sigsoftmax"]]
        gaps[e] = interval(s, g)
        m, lo, hi, p = gaps[e]
        lines.append(f"| epoch {e} (valid) | {mean(s):.4f} | {mean(g):.4f} | "
                     f"{gap_cells(m, lo, hi, p)} |")
    s = [r["test_bpc"] for r in res["softmax"]]
    g = [r["test_bpc"] for r in res["sigsoftmax"]]
    test = interval(s, g)
    lines.append(f"| epoch {epochs} (**test**) | {mean(s):.4f} | {mean(g):.4f} | "
                 f"{gap_cells(*test)} |")
    lines += ["", "## What the numbers show (computed from the table)", ""]
    lines += findings_text(gaps, test, epochs)
    return "\n".join(lines) + "\n"


def findings_text(gaps: dict, test: tuple, epochs: int) -> list[str]:
    first = min(4, epochs)
    g4, gend = gaps[first][0], gaps[epochs][0]
    out = [f"- The validation gap goes from {g4:+.4f} bpc after epoch {first} (the config's "
           f"length) to {gend:+.4f} after epoch {epochs} "
           f"({'smaller' if abs(gend) < abs(g4) else 'not smaller'}: "
           f"{abs(gend) / abs(g4):.2f} of it)." if g4 else "- No gap after epoch 4."]
    lo, hi = test[1], test[2]
    if math.isnan(lo):
        out.append(f"- One seed pair: after {epochs} epochs the test gap is {test[0]:+.4f} bpc; "
                   "no interval without a second seed (run --seeds with more seeds: finished "
                   "runs are kept).")
    elif lo > 0:
        out.append(f"- After {epochs} epochs sigsoftmax is still better on the test set "
                   f"({test[0]:+.4f} bpc, CI above 0): no tie at this training length.")
    elif hi < 0:
        out.append(f"- After {epochs} epochs softmax is better on the test set ({test[0]:+.4f} "
                   "bpc, CI below 0).")
    else:
        out.append(f"- After {epochs} epochs the test gap is not significant ({test[0]:+.4f} bpc, "
                   f"CI [{lo:+.4f}, {hi:+.4f}]): consistent with the paper's tie.")
    return out


def main() -> None:
    ap = probe_cli.parser(__doc__, seeds="141,142,143",
                          work=os.path.join(ROOT, "results", "char"))
    ap.add_argument("--epochs", type=int, default=16)
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    runs = {(h, s): run(h, s, args) for s in seeds for h in HEADS}  # seed by seed: pairs first
    res = {h: [runs[(h, s)] for s in seeds] for h in HEADS}
    dirs = [os.path.join(args.work, f"{h}_s{s}") for h in HEADS for s in seeds]
    probe_cli.emit(report(res, seeds, args.epochs, probe_cli.build_label(args.build),
                          probe_cli.build_label(args.work, "WORK"), dirs), args.out)


if __name__ == "__main__":
    main()
