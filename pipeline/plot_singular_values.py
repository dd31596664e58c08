#!/usr/bin/python3
"""Plot normalised singular-value spectra from rank_analysis result files.

Each input is an HDF5 file written by the `rank_analysis` binary, holding a
descending 1-D dataset `/singular_values` plus root attributes describing the
run (head, rank, tol, sigma_max, bound, bias, ...).  One curve per file is
drawn as sigma_i / sigma_max against the 1-based index i on a log y-axis, as
in Figures 1 and 2 of the Sigsoftmax paper's supplementary material.  The
Theorem 2 bound of each file is shown as a dashed vertical line and the
Numerical Recipes rank threshold (tol / sigma_max) as a dotted horizontal line.

Outputs PREFIX.png (dpi 150) and PREFIX.svg, each written atomically.
Bad input: one-line error on stderr, exit status 2, no output written.
"""
from pipeline_errors import PipelineError, EXIT_BAD_INPUT, EXIT_OK, refuse
import argparse
import os
import sys

import matplotlib

matplotlib.use("Agg")  # no display on this machine
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from atomic_io import save_figure_atomically  # noqa: E402

try:
    import h5py
except ImportError:  # wrong interpreter: numpy/matplotlib may exist but not h5py
    refuse("plot_singular_values.py: h5py not available; run with /usr/bin/python3")

REQUIRED_ATTRS = ("head", "rank", "tol", "sigma_max", "bound", "verdict",
                  "method", "M", "T", "d", "bias", "eps")
FLOOR = 1e-300  # smallest value ever handed to the log axis

# Fixed colours for known heads; other heads get the next unused cycle colour.
HEAD_COLOURS = {"softmax": "tab:blue", "sigsoftmax": "tab:red", "mos": "tab:green"}
SPARE_COLOURS = ["tab:orange", "tab:purple", "tab:brown", "tab:pink",
                 "tab:olive", "tab:cyan", "tab:gray"]


class InputError(PipelineError):
    """Problem with one input file; message already names the file."""


def as_str(value):
    """h5py may return string attributes as bytes, str, or 0-d arrays of either."""
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if isinstance(value, (bytes, np.bytes_)):
        return value.decode("utf-8")
    return str(value)


def load_result(path):
    """Read one result file and return a dict; raise InputError on bad input."""
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file")
    try:
        with h5py.File(path, "r") as f:
            if "singular_values" not in f:
                raise InputError(f"{path}: missing dataset /singular_values")
            sv = np.asarray(f["singular_values"][()], dtype=np.float64).ravel()
            missing = [a for a in REQUIRED_ATTRS if a not in f.attrs]
            if missing:
                raise InputError(f"{path}: missing attribute(s) {', '.join(missing)}")
            attrs = {a: f.attrs[a] for a in REQUIRED_ATTRS}
            # The certificate (rank.h5 since the Gram path certifies): 1 certified, 0 a window,
            # -1 none (exact). Older files lack it: the rank alone.
            window = None
            if "certified" in f.attrs and int(f.attrs["certified"]) == 0:
                window = (int(f.attrs["rank_min"]), int(f.attrs["rank_max"]))
    except InputError:
        raise
    except (OSError, ValueError, TypeError) as exc:  # not HDF5, bad dtype, ...
        raise InputError(f"{path}: cannot read HDF5 result ({exc})") from None

    if sv.size == 0:
        raise InputError(f"{path}: /singular_values is empty")
    sigma_max = float(attrs["sigma_max"])
    if not np.isfinite(sigma_max) or sigma_max <= 0:
        raise InputError(f"{path}: sigma_max must be positive, got {sigma_max}")
    # The sketch writes its k Ritz values, the top of a spectrum of min(M, T): a partial curve.
    full = min(int(attrs["M"]), int(attrs["T"]))
    return {
        "path": path,
        "sv": sv,
        "of": full if sv.size < full else None,
        "head": as_str(attrs["head"]),
        "rank": int(attrs["rank"]),
        "tol": float(attrs["tol"]),
        "sigma_max": sigma_max,
        "bound": int(attrs["bound"]),
        "bias": int(attrs["bias"]),
        "window": window,
    }


def rank_label(r):
    """The rank as the tables give it: a count, or the certified window rank_min..rank_max."""
    return f"{r['window'][0]}..{r['window'][1]}" if r["window"] else str(r["rank"])


def curve_label(r):
    """The legend's entry: the head, its rank, and, for a partial spectrum (the sketch's Ritz
    values), how many of the min(M, T) values the curve holds."""
    part = f"; top {r['sv'].size} of {r['of']}" if r["of"] else ""
    return f"{r['head']} (rank {rank_label(r)}{part})"


def draw_curves(ax, results, colours, lw=1.5, label=True):
    """One curve per result; softmax (the curve the bound is about) last, so no other curve or
    the bound line hides it."""
    order = sorted(results, key=lambda r: r["head"] == "softmax")
    for r in order:
        x = np.arange(1, r["sv"].size + 1)
        # Exact zeros (or negative round-off) cannot go on a log axis; dropping
        # them (NaN = gap) beats clipping to FLOOR, which would stretch the
        # axis down to 1e-300 and flatten the informative part of the curve.
        y = r["sv"] / r["sigma_max"]
        y = np.where(y > 0, y, np.nan)
        softmax = r["head"] == "softmax"
        colour = head_colour(r["head"], colours)
        ax.plot(x, y, color=colour, lw=lw * (1.6 if softmax else 1),
                zorder=4 if softmax else 3, label=curve_label(r) if label else None)
        if r["of"]:  # a partial spectrum ends in a bar: the values past it were not computed
            ax.plot(x[-1:], y[-1:], color=colour, marker="|", ms=8, zorder=4)


def head_colour(head, assigned):
    """Same colour for the same head name across all curves in one plot."""
    if head not in assigned:
        if head in HEAD_COLOURS:
            assigned[head] = HEAD_COLOURS[head]
        else:
            used = set(assigned.values())
            free = [c for c in SPARE_COLOURS if c not in used]
            assigned[head] = free[0] if free else SPARE_COLOURS[len(assigned) % len(SPARE_COLOURS)]
    return assigned[head]


def make_figure(results, title):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    colours = {}
    draw_curves(ax, results, colours)

    # One dashed line per distinct (bound, bias) pair, behind the curves; label depends on bias.
    bounds = sorted({(r["bound"], r["bias"]) for r in results})
    for bound, bias in bounds:
        name = "d+2" if bias == 1 else "d+1"
        ax.axvline(bound, color="black", ls="--", lw=0.8, zorder=2, label=f"{name} = {bound}")

    # One dotted line per distinct normalised tolerance; label only the first
    # so the legend does not repeat "NR tol".
    tols = sorted({r["tol"] / r["sigma_max"] for r in results})
    for k, t in enumerate(tols):
        ax.axhline(max(t, FLOOR), color="gray", ls=":", lw=1,
                   label="NR tol" if k == 0 else None)

    ax.set_yscale("log")
    # Show three decades below the lowest tolerance, no more: further down lie only round-off
    # values (the Gram path resolves sigma to ~1.5e-8 sigma_max; a collapsed head's tail can
    # reach 1e-160 and would flatten every other curve).
    finite = [np.nanmin(np.where(r["sv"] > 0, r["sv"] / r["sigma_max"], np.nan))
              for r in results if np.any(r["sv"] > 0)]
    if finite and tols:
        ax.set_ylim(bottom=max(min(finite), max(tols[0], FLOOR) * 1e-3), top=2)
    ax.set_xlabel("index i")
    ax.set_ylabel(r"$\sigma_i / \sigma_{\max}$")
    if title:
        ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize="small")
    # Where the bound sits in the first 5% of the axis, an inset shows indices 1..3 x bound:
    # the drop (or not) at the bound that the whole-axis view squeezes into one pixel column.
    top_bound = max(b for b, _ in bounds)
    length = max(r["sv"].size for r in results)
    if 20 * top_bound < length:
        inset = ax.inset_axes([0.42, 0.12, 0.3, 0.38])
        draw_curves(inset, results, colours, lw=1.2, label=False)
        for bound, _ in bounds:
            inset.axvline(bound, color="black", ls="--", lw=0.8, zorder=2)
        for t in tols:
            inset.axhline(max(t, FLOOR), color="gray", ls=":", lw=1)
        inset.set_yscale("log")
        inset.set_xlim(0, 3 * top_bound)
        inset.set_ylim(ax.get_ylim())
        inset.tick_params(labelsize=6)
        inset.set_title(f"i = 1..{3 * top_bound}", fontsize=7)
    fig.tight_layout()
    return fig



def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Overlay normalised singular-value spectra (sigma_i / sigma_max, "
                    "log scale) from rank_analysis HDF5 result files, marking the "
                    "Theorem 2 bound and the Numerical Recipes rank threshold.",
        epilog="Writes PREFIX.png (dpi 150) and PREFIX.svg. Exit status 2 on bad input.")
    p.add_argument("results", nargs="+", metavar="RESULT.h5",
                   help="result file(s) written by rank_analysis")
    p.add_argument("--out", required=True, metavar="PREFIX",
                   help="output path prefix; '.png' and '.svg' are appended")
    p.add_argument("--title", default=None, metavar="TEXT", help="optional plot title")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    prog = os.path.basename(sys.argv[0])
    # Load and validate every input before writing anything.
    try:
        results = [load_result(p) for p in args.results]
    except InputError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT

    out_dir = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(out_dir):
        print(f"{prog}: error: output directory {out_dir} does not exist", file=sys.stderr)
        return EXIT_BAD_INPUT

    # Keep text as <text> elements in the SVG (searchable, smaller file).
    plt.rcParams["svg.fonttype"] = "none"
    fig = make_figure(results, args.title)
    save_figure_atomically(fig, args.out + ".png", dpi=150)
    save_figure_atomically(fig, args.out + ".svg")
    plt.close(fig)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
