#!/usr/bin/python3
"""Why Taylor softmax has a higher test NLL than softmax in the classify profile, where the
spherical-family paper (de Brebisson & Vincent 2016, Table 2, MNIST) has it lower: runs of
train_classifier itself (the classify profile's conv net and split, trainers/configs/
classify_fashion.toml) per variant, paired by seed, that separate two candidate causes:

- the learning rate (the profile uses lr 0.05 for every head; the paper tuned it per loss):
  softmax and Taylor at lr 0.2 beside the profile's 0.05, the profile's 5 epochs (a smaller lr
  cannot help a head whose training loss is already the higher one after 5 epochs);
- the training length (the profile stops after at most 5 epochs; the paper's runs stopped early
  after 22-60): both heads at lr 0.05 for up to 20 epochs with the paper's schedule (lr halved
  after 5 epochs without validation improvement, a stop after 15), test NLL at the best
  validation epoch.

Taylor softmax (Vincent et al. 2015): p_i = (1 + z_i + z_i^2 / 2) / sum_j (1 + z_j + z_j^2 / 2).
Its output grows as z^2, not e^z, so a confident prediction needs far larger logits, and the
gradient of -log p_t in z_t is (1 + z_t) / (1 + z_t + z_t^2 / 2) - p_t (1 + z_t) / ...: smaller
than softmax's at the same margin. If that is the cause, Taylor needs more steps or a larger lr
to reach softmax's training loss; the paper's dataset (MNIST, ~0.7% error) is the other
difference, which this machine cannot test (no MNIST package), and is named, not probed.

Per variant: mean test NLL, test error and final training loss per head, the paired difference
taylor - softmax with its 95% t interval and p (paired t-test over seeds), and the best epoch.
The profile's own variant is read from the committed classify runs (results/classify/<head>_s<seed>/
final.json, made by `make reproduce PROFILE=classify` with the same build of train_classifier),
not trained again. The other runs are kept under --work (one directory per variant, head and
seed): a finished run is read, an interrupted one continues from its checkpoint (--resume).

    /usr/bin/python3 bench/taylor_probe.py [--build build] [--seeds 1,2,3] [--threads 2]
        [--work /tmp/taylor_probe] [--out results/bench/taylor_probe.md]
"""
from __future__ import annotations

import probe_cli
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipeline"))
from pipeline_errors import refuse  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADS = ("softmax", "taylor")
# (name, overrides) per variant; the profile's overrides first (pipeline/profiles/classify.toml).
PROFILE = {"train_size": 0, "valid_size": 10000, "test_size": 10000, "epochs": 5, "patience": 2,
           "early_stop": 3, "lr": 0.05}
VARIANTS = [
    ("lr 0.05, 5 epochs (the profile: results/classify)", dict(PROFILE)),
    ("lr 0.2, 5 epochs", dict(PROFILE, lr=0.2)),
    ("lr 0.05, up to 20 epochs (paper's schedule)", dict(PROFILE, epochs=20, patience=5,
                                                         early_stop=15)),
]


def read_result(path: str) -> dict:
    """final.json in any layout (pipeline/final_json.py), the classifier's keys at the top."""
    sys.path.insert(0, os.path.join(ROOT, "pipeline"))
    from final_json import read_final, section
    final = read_final(path, "classifier")
    if final is None:
        refuse(f"taylor_probe: {path} is missing or not JSON")
    return {**final, **section(final)}


def run(build: str, variant: int, head: str, seed: int, args) -> dict:
    if VARIANTS[variant][1] == PROFILE:
        return read_result(os.path.join(ROOT, "results", "classify", f"{head}_s{seed}",
                                        "final.json"))
    out = os.path.join(args.work, f"v{variant}_{head}_s{seed}")
    final = os.path.join(out, "final.json")
    cmd = [os.path.join(build, "trainers", "train_classifier"), "--config",
           os.path.join(ROOT, "trainers", "configs", "classify_fashion.toml"), "--head", head,
           "--seed", str(seed), "--threads", str(args.threads), "--dump_test", "false",
           "--log_interval", "1000", "--out", out]
    for key, value in VARIANTS[variant][1].items():
        cmd += [f"--{key}", str(value)]
    probe_cli.train_or_resume("taylor_probe", cmd, out,
                              f"{VARIANTS[variant][0]} | {head} seed {seed}")
    return read_result(final)


def paired(a: list[float], b: list[float]) -> tuple[float, float, float, float]:
    """Mean of b - a, its 95% t interval and the paired t-test's p: the claims table's
    statistics (pipeline/claim_tests.py's directional), the same rule as every other paired row."""
    sys.path.insert(0, os.path.join(ROOT, "pipeline"))
    from claim_tests import directional
    v = directional(b, a)  # effect = mean of b - a
    return v.effect, v.ci[0], v.ci[1], v.p


def report(results: dict, seeds: list[int], build: str, made_at: str) -> str:
    lines = ["# Taylor softmax vs softmax in the classify profile: learning rate and training length",
             "", "Written by `/usr/bin/python3 bench/taylor_probe.py --build " + build +
             "` (train_classifier, the classify profile's conv net, Fashion-MNIST random split, "
             f"seeds {', '.join(map(str, seeds))}, paired by seed). Test NLL of the best epoch by "
             "validation error (the classifier's rule, as the paper's early stopping); effect = taylor - softmax (> 0: Taylor worse); CI: 95% t interval; p: paired "
             "t-test.", "", made_at, "",
             "| variant | softmax test NLL | taylor test NLL | taylor - softmax [95% CI] | p | "
             "softmax / taylor test error % | softmax / taylor final training loss | "
             "best epoch softmax / taylor |", "|---|---|---|---|---|---|---|---|"]
    mean = lambda xs: sum(xs) / len(xs)
    findings = {}
    for v, (name, _) in enumerate(VARIANTS):
        s, t = results[v]["softmax"], results[v]["taylor"]
        nll_s, nll_t = [r["test_nll"] for r in s], [r["test_nll"] for r in t]
        eff, lo, hi, p = paired(nll_s, nll_t)
        findings[v] = (eff, lo, hi, p, mean([r["train_loss"] for r in t]) -
                       mean([r["train_loss"] for r in s]))
        lines.append(
            f"| {name} | {mean(nll_s):.4f} | {mean(nll_t):.4f} | {eff:+.4f} [{lo:+.4f}, {hi:+.4f}] "
            f"| {p:.2g} | {mean([r['test_error_pct'] for r in s]):.2f} / "
            f"{mean([r['test_error_pct'] for r in t]):.2f} | "
            f"{mean([r['train_loss'] for r in s]):.4f} / {mean([r['train_loss'] for r in t]):.4f} "
            f"| {mean([r['best_epoch'] for r in s]):.1f} / {mean([r['best_epoch'] for r in t]):.1f} |")
    lines += ["", "## What the numbers show (computed from the table)", ""]
    lines += findings_text(findings)
    return "\n".join(lines) + "\n"


def findings_text(f: dict) -> list[str]:
    """Sentences that follow from the numbers: the sign and significance of each variant's gap."""
    def verdict(v: int) -> str:
        eff, lo, hi, p, _ = f[v]
        if lo > 0:
            return f"Taylor worse ({eff:+.4f} nats, CI above 0)"
        if hi < 0:
            return f"Taylor better ({eff:+.4f} nats, CI below 0)"
        return f"no significant difference ({eff:+.4f} nats, CI [{lo:+.4f}, {hi:+.4f}])"
    out = [f"- {VARIANTS[v][0]}: {verdict(v)}; Taylor's final training loss "
           f"{'above' if f[v][4] > 0 else 'below'} softmax's by {abs(f[v][4]):.4f}." for v in f]
    profile_worse = f[0][1] > 0
    lr_helps, long_helps = f[1][2] < 0, f[2][2] < 0  # CI below 0: Taylor better
    if profile_worse and lr_helps and long_helps:
        out.append("- Both a larger learning rate (0.2) and the paper's training length reverse the "
                   "gap: Taylor is better than softmax in both, with CIs below 0. The profile's "
                   "contradiction comes from its schedule (lr 0.05 for at most 5 epochs leaves "
                   "Taylor, whose output grows as z^2 rather than e^z, undertrained), not from "
                   "the head.")
    elif profile_worse and long_helps:
        out.append("- The gap of the profile's 5 epochs reverses with the paper's training "
                   "length: the profile's contradiction comes from training too short.")
    elif profile_worse and lr_helps:
        out.append("- At lr 0.2 the gap reverses: the profile's single lr decides the "
                   "contradiction.")
    elif profile_worse:
        out.append("- Neither the learning rate nor a training length near the paper's removes "
                   "the gap: Taylor stays worse on Fashion-MNIST. What is left of the candidate "
                   "causes is the dataset (MNIST's ~0.7% error against Fashion-MNIST's ~10%), "
                   "which this probe cannot test.")
    else:
        out.append("- The profile's own variant shows no significant gap here.")
    return out


def main() -> None:
    args = probe_cli.parser(__doc__, seeds="1,2,3", work="/tmp/taylor_probe").parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    probe_cli.binary("taylor_probe", args.build, "train_classifier")
    runs = {(v, h, s): run(args.build, v, h, s, args)  # seed by seed: pairs first
            for v in range(len(VARIANTS)) for s in seeds for h in HEADS}
    results = {v: {h: [runs[(v, h, s)] for s in seeds] for h in HEADS} for v in range(len(VARIANTS))}
    profile_runs = [os.path.join(ROOT, "results", "classify", f"{h}_s{s}") for h in HEADS
                    for s in seeds]
    made_at = (probe_cli.made_at(profile_runs) + " The other variants' runs are this probe's own, "
               "trained under --work (or read there from an earlier invocation).")
    probe_cli.emit(report(results, seeds, probe_cli.build_label(args.build), made_at), args.out)


if __name__ == "__main__":
    main()
