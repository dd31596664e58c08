"""results/<profile>/summary.md and test_error.{png,svg} of a classifier profile (trainer =
"classifier"): test error %, test NLL and the training criterion on the test set, mean ± std over
seeds per head, beside the spherical-family paper's MNIST figures (results/paper/
spherical_mnist.csv), and the rank of each head's first-seed dump. Reads only what the runs wrote
(final.json through final_json.py, rank.json, stages.json, config.toml). The classifier kind's
report (trainer_kinds.py).
"""

from __future__ import annotations

import csv
import os
import statistics

import head_facts
from atomic_io import save_figure_pair
from durations import format_duration
from final_json import read_final, section
from report_tables import ROOT, machine_line, profile_header, write_markdown
from run_outputs import read_json, stage_record

PAPER = os.path.join(ROOT, "results", "paper", "spherical_mnist.csv")


def paper_rows() -> dict:
    """(table, head) -> the paper's row."""
    with open(PAPER) as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    return {(int(r["table"]), r["head"]): r for r in rows}


def mean_std(xs: list[float], digits: int) -> str:
    if not xs:
        return "-"
    if len(xs) == 1:
        return f"{xs[0]:.{digits}f}"
    return f"{statistics.mean(xs):.{digits}f} ± {statistics.stdev(xs):.{digits}f}"


def _finite(values: list) -> list[float]:
    return [float(v) for v in values if v is not None]


def write_plot(profile, heads: list[str], errors: dict[str, list[float]]) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(max(6.0, 0.8 * len(heads) + 2), 4))
    means = [statistics.mean(errors[h]) if errors[h] else float("nan") for h in heads]
    stds = [statistics.stdev(errors[h]) if len(errors[h]) > 1 else 0.0 for h in heads]
    ax.bar(range(len(heads)), means, yerr=stds, capsize=4, color="tab:blue", alpha=0.8)
    for i, h in enumerate(heads):
        ax.plot([i] * len(errors[h]), errors[h], "k.", markersize=4)
    ax.set_xticks(range(len(heads)))
    ax.set_xticklabels(heads, rotation=30, ha="right")
    ax.set_ylabel("test error (%)")
    finite = [m for m in means if m == m]
    if finite:
        lo, hi = min(finite), max(finite)
        ax.set_ylim(max(0.0, lo - 2 * (hi - lo + 0.5)), hi + (hi - lo + 0.5))
    ax.set_title(f"{profile.name} profile: test error per head (mean ± std over seeds; dots: seeds)")
    fig.tight_layout()
    prefix = os.path.join(profile.out, "test_error")
    save_figure_pair(fig, prefix)


def _rank_section(runs, first_final: dict) -> list[str]:
    """Each analysed run's rank (T x 10: the bound cannot bind on a 10-class task)."""
    out: list[str] = []
    w = out.append
    w("## Rank of the test log-output matrix\n")
    w("rank_analysis on each head's dumps (T test images x M = 10 classes). With d = "
      f"{first_final.get('d', '?')}, Theorem 2's bound d + 2 exceeds M = 10: every T x 10 matrix "
      "is within it, so these ranks cannot show the softmax bottleneck (it needs d + 2 < M); "
      "they are listed to show that the dump and the analysis work on classifiers. No rank for "
      "mse (no probabilities) and sparse (-inf off the top k: undefined).\n")
    w("| head | seed | T | M | d | bound | rank | numpy rank | verdict |")
    w("|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        rk = read_json(os.path.join(r.dir, "rank.json")) or {}
        if rk:
            w(f"| {r.head} | {r.seed} | {rk.get('T')} | {rk.get('M')} | {rk.get('d')} | "
              f"{rk.get('bound')} | {rk.get('rank')} | {rk.get('rank_numpy', '-')} | "
              f"{rk.get('verdict', '-')} |")
    w("")

    return out


def _wall_time_section(runs, heads) -> list[str]:
    """The mean classify stage per head and the total recorded stage time."""
    out: list[str] = []
    w = out.append
    w("## Wall time\n")
    total = 0.0
    per_head = []
    for h in heads:
        secs = [stage_record(r.dir, "classify").get("seconds", 0.0) for r in runs if r.head == h]
        total += sum(secs)
        per_head.append(f"{h} {format_duration(statistics.mean(secs)) if secs else '-'}")
    w("Mean classify stage per run: " + ", ".join(per_head) + ".\n")
    analyse = sum(stage_record(r.dir, "analyse").get("seconds", 0.0) for r in runs)
    w(f"**All stages: {format_duration(total + analyse)}** (sum of the recorded classify and "
      "analyse stage times).\n")
    return out


def _error_rows(h: str, fs: list[dict], paper: dict, facts) -> list[str]:
    """The Table 1 rows of head h: ours (mean ± std over its runs' final sections fs), then the
    paper's MNIST figures where it reports the head."""
    nlls = [f.get("test_nll") for f in fs]
    outside = sum(int(f.get("test_outside_support", 0)) for f in fs)
    if not facts.is_head(h):  # not a registry head: train_classifier's mse
        nll = "- (no probabilities)"
    elif any(v is None for v in nlls):
        nll = f"inf ({outside} labels outside the top k)"
    else:
        nll = mean_std(_finite(nlls), 4)
    rows = [f"| {h} | ours | {len(fs)} | {mean_std([f['test_error_pct'] for f in fs], 2)} | "
            f"{nll} | {mean_std([f['test_loss'] for f in fs], 4)} | "
            f"{mean_std([f['train_loss'] for f in fs], 4)} | "
            f"{mean_std([float(f['best_epoch']) for f in fs], 1)} |"]
    p = paper.get((1, h.split(":")[0]))
    if p and ":" not in h:
        nll_p = f"{p['loss']} ± {p['loss_std']}" if p["loss_name"] == "nll" else "-"
        loss_p = f"{p['loss']} ± {p['loss_std']} ({p['loss_name']})"
        rows.append(f"| {h} | paper (MNIST) | 100 | {p['error_pct']} ± {p['error_pct_std']} | "
                    f"{nll_p} | {loss_p} | - | {p['epochs']} ± {p['epochs_std']} |")
    return rows


def write_summary(profile, runs, global_timings: dict) -> str:
    finals = {r.dir: read_final(os.path.join(r.dir, "final.json"), profile.trainer) for r in runs}
    final = {i: section(f) if f else {} for i, f in finals.items()}  # the classifier's keys
    heads = list(dict.fromkeys(r.head for r in runs))
    by_head = {h: [r for r in runs if r.head == h and final[r.dir]] for h in heads}
    first = next((r for r in runs if final[r.dir]), None)
    first_final = final[first.dir] if first else {}
    paper = paper_rows()
    facts = head_facts.registry()
    out: list[str] = []
    w = out.append
    profile_header(w, profile)
    ds = (finals[first.dir]["dataset"] or "?") if first else "?"
    w(f"**Our setting:** dataset {ds}, {first_final.get('split', '?')} split, "
      f"{first_final.get('train_images', '?')} train / {first_final.get('valid_images', '?')} "
      f"valid / {first_final.get('test_images', '?')} test images, d = "
      f"{first_final.get('d', '?')}, M = {first_final.get('classes', '?')} classes; "
      f"trainer config `{profile.config}` with the profile's overrides (each run's "
      "`config.toml`).\n")
    w(f"**Machine:** {machine_line()}.\n")
    if ds != "mnist":
        w(f"**The dataset differs from the paper's.** The paper's figures are MNIST; ours are "
          f"{ds}, a harder 10-class problem of the same format, so the error rates are not "
          "comparable in value: compare the ordering of the heads and the spread over seeds.\n")

    w("## Test error, NLL and loss (spherical-family paper, Table 1 analog)\n")
    w("Ours: the model with the best validation error of each run, on its test split; mean ± "
      "sample std over seeds. test loss = the training criterion on the test set (the paper's "
      "'loss' column: NLL for the likelihood heads, sparse's eq. 5 loss, mse's squared error); "
      "train loss = the mean training criterion over the best epoch. test NLL is `inf` when a "
      "label falls outside a sparse head's top k (the count is given). Paper: MNIST, 100 runs on "
      "random splits (Table 1), `results/paper/spherical_mnist.csv`.\n")
    w("| head | source | runs | test error % | test NLL | test loss | train loss | best epoch |")
    w("|---|---|---|---|---|---|---|---|")
    errors: dict[str, list[float]] = {}
    for h in heads:
        fs = [final[r.dir] for r in by_head[h]]
        errors[h] = [f["test_error_pct"] for f in fs]
        out.extend(_error_rows(h, fs, paper, facts))
    w("")
    w("Paper, Table 2 (official MNIST split, 100 runs): "
      + "; ".join(f"{r['head']} {r['error_pct']} ± {r['error_pct_std']}% error, NLL {r['loss']} ± "
                  f"{r['loss_std']}" for (t, _), r in paper.items() if t == 2) + ".\n")
    w("![test error per head](test_error.png)\n")

    out.extend(_rank_section(runs, first_final))
    out.extend(_wall_time_section(runs, heads))
    if any(errors.values()):
        write_plot(profile, [h for h in heads if errors[h]], errors)
    return write_markdown(os.path.join(profile.out, "summary.md"), out)
