#!/usr/bin/python3
"""Self-contained test for pipeline/plot_singular_values.py.

Run as:  /usr/bin/python3 tests/pipeline/test_plot_singular_values.py
Builds synthetic rank_analysis result files in a temp dir, runs the script
via subprocess and checks its outputs.  Last line: "N failure(s)".
"""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

from checks import ROOT, check, finish

PY = "/usr/bin/python3"  # Debian Python with numpy/h5py/matplotlib
SCRIPT = os.path.join(ROOT, "pipeline", "plot_singular_values.py")


def write_result(path, sv, head, rank, bound, bias, d, as_bytes=False, with_sv=True, window=None,
                 m=None):
    """Write a synthetic result file matching the rank_analysis schema."""
    sv = np.asarray(sv, dtype=np.float64)
    s = (lambda v: v.encode()) if as_bytes else (lambda v: v)  # exercise both string kinds
    sigma_max = float(sv[0])
    tol = 0.5 * np.sqrt(sv.size + 1.0) * sigma_max * np.finfo(np.float64).eps
    with h5py.File(path, "w") as f:
        if with_sv:
            f.create_dataset("singular_values", data=sv)
        a = f.attrs
        a["head"] = s(head)
        a["rank"] = np.int64(rank)
        a["tol"] = np.float64(tol)
        a["sigma_max"] = np.float64(sigma_max)
        a["bound"] = np.int64(bound)
        a["verdict"] = s("within_bound" if rank <= bound else "exceeds_bound")
        a["method"] = s("svd")
        a["M"] = np.int64(m or sv.size)  # m > sv.size: a partial spectrum (the sketch's)
        a["T"] = np.int64(max(200, m or 0))
        a["d"] = np.int64(d)
        a["bias"] = np.int64(bias)
        a["eps"] = np.float64(1e-12)
        if window:  # a certificate that left a window (rank.h5's certified = 0)
            a["certified"] = np.int64(0)
            a["rank_min"], a["rank_max"] = np.int64(window[0]), np.int64(window[1])


def run(args):
    return subprocess.run([PY, SCRIPT] + args, capture_output=True, text=True)


def svg_of(prefix):
    """The SVG a run wrote at prefix, or None where it wrote none (its exit check says why)."""
    if not os.path.isfile(prefix + ".svg"):
        return None
    with open(prefix + ".svg", encoding="utf-8") as fh:
        return fh.read()


def outputs_absent(prefix):
    return not os.path.exists(prefix + ".png") and not os.path.exists(prefix + ".svg")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        n = 100
        # softmax-like: 66 O(1) values, then a 1e-9 cliff, plus an exact zero at the end.
        soft = np.concatenate([np.linspace(1.0, 0.1, 66), np.full(n - 66, 1e-10)])
        soft[-1] = 0.0
        # slowly decaying full-rank spectrum.
        slow = 2.0 * np.exp(-np.arange(n) / 40.0)
        f_soft = os.path.join(tmp, "softmax.h5")
        f_slow = os.path.join(tmp, "sigsoftmax.h5")
        f_mos = os.path.join(tmp, "mos.h5")
        write_result(f_soft, soft, "softmax", 66, 66, bias=1, d=64)
        write_result(f_slow, slow, "sigsoftmax", 100, 66, bias=1, d=64, as_bytes=True)
        write_result(f_mos, 0.5 * np.exp(-np.arange(n) / 15.0), "mos", 100, 66, bias=1, d=64)

        # --- good run -----------------------------------------------------
        prefix = os.path.join(tmp, "fig")
        r = run([f_soft, f_slow, f_mos, "--out", prefix, "--title", "test spectra"])
        check(r.returncode == 0, f"good run exit 0 (got {r.returncode}; stderr={r.stderr.strip()})")
        png, svg = prefix + ".png", prefix + ".svg"
        check(os.path.isfile(png) and os.path.getsize(png) > 0, "PNG exists and non-empty")
        check(os.path.isfile(svg) and os.path.getsize(svg) > 0, "SVG exists and non-empty")
        if os.path.isfile(png):
            with open(png, "rb") as fh:
                data = fh.read()
            check(data[:8] == b"\x89PNG\r\n\x1a\n", "PNG magic bytes")
            check(10_000 < len(data) < 5_000_000, f"PNG plausible size ({len(data)} bytes)")
        if os.path.isfile(svg):
            with open(svg, encoding="utf-8") as fh:
                text = fh.read()
            for label in ("softmax (rank 66)", "sigsoftmax (rank 100)",
                          "mos (rank 100)", "d+2 = 66", "NR tol", "test spectra"):
                check(label in text, f"SVG contains {label!r}")
        # A window is labelled as the tables give it, and a bound in the first 5% of a long axis
        # gets an inset of indices 1..3 x bound.
        long_n = 2000
        f_win = os.path.join(tmp, "window.h5")
        write_result(f_win, 2.0 * np.exp(-np.arange(long_n) / 300.0), "sigsoftmax", 120, 66,
                     bias=1, d=64, window=(117, 123))
        f_long_soft = os.path.join(tmp, "long_softmax.h5")
        write_result(f_long_soft, np.concatenate([np.linspace(1.0, 0.1, 66),
                                                  np.full(long_n - 66, 1e-10)]),
                     "softmax", 66, 66, bias=1, d=64)
        lprefix = os.path.join(tmp, "long")
        r = run([f_win, f_long_soft, "--out", lprefix])
        check(r.returncode == 0, f"long run exit 0 ({r.stderr.strip()})")
        text = svg_of(lprefix)
        if text is not None:
            check("sigsoftmax (rank 117..123)" in text, "a window is labelled rank_min..rank_max")
            check("i = 1..198" in text, "the inset around the bound is drawn")
            # softmax is drawn last (on top of every other curve), so its legend entry is last
            check(text.index("softmax (rank 66)") > text.index("sigsoftmax (rank 117..123)"),
                  "softmax is drawn after the other heads")
        # The sketch's k Ritz values of a spectrum of min(M, T): the legend says how many.
        f_part = os.path.join(tmp, "partial.h5")
        write_result(f_part, 2.0 * np.exp(-np.arange(300) / 60.0), "moss", 250, 66, bias=1, d=64,
                     m=5000)
        pprefix = os.path.join(tmp, "partial")
        r = run([f_part, f_long_soft, "--out", pprefix])
        check(r.returncode == 0, f"partial run exit 0 ({r.stderr.strip()})")
        text = svg_of(pprefix)
        if text is not None:
            check("moss (rank 250; top 300 of 5000)" in text,
                  "a partial spectrum's legend says how many values it holds")
            check("softmax (rank 66)" in text and "softmax (rank 66;" not in text,
                  "a whole spectrum's legend does not")
        leftovers = [p for p in os.listdir(tmp) if p.startswith(".tmp_")]
        check(not leftovers, f"no temp files left behind ({leftovers})")

        check(run(["--help"]).returncode == 0, "--help exits 0")

        # --- bad inputs: exit 2, file named on stderr, nothing written ------
        f_nosv = os.path.join(tmp, "nosv.h5")
        write_result(f_nosv, soft, "softmax", 66, 66, bias=1, d=64, with_sv=False)
        f_missing = os.path.join(tmp, "does_not_exist.h5")
        for bad, why in ((f_nosv, "singular_values"), (f_missing, "no such file")):
            bprefix = os.path.join(tmp, "bad_" + os.path.basename(bad))
            # Also pass a good file first: no partial output must appear.
            r = run([f_soft, bad, "--out", bprefix])
            check(r.returncode == 2, f"{bad}: exit 2 (got {r.returncode})")
            check(bad in r.stderr and why in r.stderr, f"{bad}: stderr names file ({r.stderr.strip()!r})")
            check(len(r.stderr.strip().splitlines()) == 1, f"{bad}: one-line error")
            check(outputs_absent(bprefix), f"{bad}: no PNG/SVG written")

    return finish()


if __name__ == "__main__":
    sys.exit(main())
