#!/usr/bin/python3
"""Plot the numerical rank of each head's epoch dumps against the epoch (make reproduce's
epoch_plot stage): one line per run (colour by head, line style by seed), x = the epoch counted
over the main phase and then finetuning (a dotted vertical line where finetuning starts), y = the
rank of the first `rows` test rows (epoch_ranks.py), with Theorem 2's softmax bound d + 2 as a
dashed horizontal line.

  plot_rank_vs_epoch.py RUN/rank_vs_epoch.json [...] --out PREFIX [--title TEXT]

Writes PREFIX.png (dpi 150) and PREFIX.svg, each atomically. Bad input: one line on stderr
naming the file and the field, exit status 2, no output.
"""
from pipeline_errors import PipelineError, EXIT_BAD_INPUT, EXIT_OK
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from atomic_io import save_figure_atomically  # noqa: E402

COLOURS = {"softmax": "tab:blue", "sigsoftmax": "tab:red", "sigmoid": "tab:orange",
           "relu": "tab:gray", "mos": "tab:green", "moss": "tab:purple"}
SPARE = ["tab:brown", "tab:pink", "tab:olive", "tab:cyan"]
STYLES = ["-", "--", ":", "-."]


class InputError(PipelineError):
    pass


def load(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})") from None
    except ValueError as e:
        raise InputError(f"{path}: not JSON ({e})") from None
    for key in ("head", "seed", "bound", "rows", "epochs"):
        if key not in data:
            raise InputError(f"{path}: field '{key}' missing")
    if not isinstance(data["epochs"], list) or not data["epochs"]:
        raise InputError(f"{path}: field 'epochs': expected a non-empty list")
    for i, e in enumerate(data["epochs"]):
        for key in ("phase", "step", "rank"):
            if key not in e:
                raise InputError(f"{path}: field 'epochs[{i}].{key}' missing")
    return data



def decorate(ax, runs, bounds, finetune_starts, tick_labels, seed_style, title):
    """The bounds, the finetuning marks, the epoch ticks ("1", ..., "ft 1", ...), the labels and
    the legend with its seed key (line styles, in black, where there are several seeds)."""
    for b in sorted(bounds):
        ax.axhline(b, color="black", linestyle="--", linewidth=1,
                   label=f"softmax bound d + 2 = {b}")
    for x in sorted(finetune_starts):
        ax.axvline(x, color="gray", linestyle=":", linewidth=1)
        ax.annotate(" finetuning", xy=(x, 1), xycoords=("data", "axes fraction"), va="top",
                    ha="left", fontsize=8, color="gray")
    ax.set_yscale("log")
    if len(tick_labels) <= 30:
        ax.set_xticks(sorted(tick_labels), [tick_labels[k] for k in sorted(tick_labels)])
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("epoch (main phase, then finetuning: ft)")
    rows = sorted({r["rows"] for r in runs})
    ax.set_ylabel(f"numerical rank of the first {', '.join(map(str, rows))} test rows")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    handles, _ = ax.get_legend_handles_labels()
    if len(seed_style) > 1:
        handles += [Line2D([], [], color="black", linestyle=style, label=f"seed {seed}")
                    for seed, style in seed_style.items()]
    ax.legend(handles=handles, fontsize=8, loc="best")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", help="rank_vs_epoch.json files (one per run)")
    ap.add_argument("--out", required=True, help="output prefix: PREFIX.png and PREFIX.svg")
    ap.add_argument("--title", default="rank of the epoch dumps")
    args = ap.parse_args()
    try:
        runs = [load(p) for p in args.files]
    except InputError as e:
        print(f"plot_rank_vs_epoch.py: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT

    fig, ax = plt.subplots(figsize=(8, 5))
    colours, labelled = {}, set()
    # One line style per seed, the same for every head, with a key of its own.
    seed_style = {seed: STYLES[i % len(STYLES)]
                  for i, seed in enumerate(sorted({r["seed"] for r in runs}))}
    bounds = set()
    finetune_starts = set()
    tick_labels = {}  # step -> "1", "2", ... in the main phase, "ft 1", ... in finetuning
    for r in runs:
        name = r["head"].split(":", 1)[0]
        colour = colours.setdefault(r["head"], COLOURS.get(name) or SPARE[len(colours) % len(SPARE)])
        steps = [e["step"] for e in r["epochs"]]
        ranks = [e["rank"] for e in r["epochs"]]
        ax.plot(steps, ranks, seed_style[r["seed"]], marker="o", markersize=3, color=colour,
                label=r["head"] if r["head"] not in labelled else None)
        labelled.add(r["head"])
        bounds.add(r["bound"])
        finetune_starts.update(e["step"] - 0.5 for e in r["epochs"]
                               if e["phase"] == "finetune" and e.get("epoch") == 1)
        for e in r["epochs"]:
            epoch = e.get("epoch", e["step"])
            tick_labels.setdefault(e["step"],
                                   f"ft {epoch}" if e["phase"] == "finetune" else str(epoch))
    decorate(ax, runs, bounds, finetune_starts, tick_labels, seed_style, args.title)
    fig.tight_layout()
    save_figure_atomically(fig, args.out + ".png", dpi=150)
    save_figure_atomically(fig, args.out + ".svg")
    print(f"wrote {args.out}.png, {args.out}.svg")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
