#!/usr/bin/python3
"""The converged fits of fit_logprob_matrix as a table, a plot and findings computed from them:

    /usr/bin/python3 pipeline/fit_report.py results/fit/fit.json     (make fit runs both)

writes beside the JSON: fit.md (KL and rank per head and d, each fit beside its restart), fit.png /
fit.svg (KL against d per head, the rank of the fitted log-matrices against d), and findings.json.

A fit's uncertainty is the disagreement of its two fits from different seeds, |KL_1 - KL_2|. Head
h fits closer than softmax at d when KL_softmax - KL_h exceeds the sum of both fits' disagreements;
worse when KL_h - KL_softmax exceeds it; otherwise they tie at that d. A head "fits closer than
softmax at every d" when it does at each d of the sweep. Theorem 2 holds at d (theorem2_at) when
d + 2 is below the target's rank, the fitted softmax log-matrix's rank is at most d + 2, and the KL
of both fits exceeds the fit's resolution, its absolute stopping tolerance settings.abs_tol
(pipeline/claims_theory.py's row reads the same function); a fit that did not converge is named and
counts as a tie. Beside each verdict, the size of the difference:
the gain 1 - KL_h / KL_softmax (first fits), so a "closer" by a hair reads apart from a large one.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_errors import EXIT_BAD_INPUT, EXIT_OK  # noqa: E402
from atomic_io import save_figure_pair, write_json_atomically, write_text_atomically  # noqa


def kls(fit: dict) -> list[float]:
    """The KL of the fit and of its restart (when there is one)."""
    return [fit["kl"]] + ([fit["restart"]["kl"]] if fit.get("restart") else [])


def theorem2_at(report: dict, fit: dict) -> bool:
    """Theorem 2 at this softmax fit's d (docstring): its bound d + 2 is below the target's rank,
    the fitted rank within it, and both fits' KL above the fit's resolution (abs_tol)."""
    return (fit["rank"] <= fit["d"] + 2 < report["target"]["rank"]
            and min(kls(fit)) > report["settings"]["abs_tol"])


def read(directory: str, name: str = "fit.json") -> dict | None:
    """A JSON file of results/fit: the report (fit.json), or the provenance record `make fit`
    writes beside it (made_at.json: provenance.py record); None when absent or unreadable."""
    try:
        with open(os.path.join(directory, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def spread(fit: dict) -> float:
    """The fit's uncertainty: the disagreement with its restart (0 without one)."""
    r = fit.get("restart")
    return abs(fit["kl"] - r["kl"]) if r else 0.0


def compare(soft: dict, other: dict) -> str:
    """'closer', 'worse' or 'tie': other's KL against softmax's at the same d (docstring)."""
    if not (soft["converged"] and other["converged"]):
        return "tie"
    margin = spread(soft) + spread(other)
    if soft["kl"] - other["kl"] > margin:
        return "closer"
    if other["kl"] - soft["kl"] > margin:
        return "worse"
    return "tie"


def findings(report: dict) -> dict:
    fits = report["fits"]
    by = {(f["head"], f["d"]): f for f in fits}
    ds = sorted({f["d"] for f in fits})
    heads = list(dict.fromkeys(f["head"] for f in fits))
    rank = report["target"]["rank"]
    out = {"target_rank": rank, "ds": ds, "heads": heads, "softmax_above_zero": None,
           "versus_softmax": {}, "not_converged": [f"{f['head']} d = {f['d']}" for f in fits
                                                   if not f["converged"]]}
    if "softmax" in heads:
        capped = [d for d in ds if d + 2 < rank and ("softmax", d) in by]
        out["softmax_above_zero"] = {
            "ds": capped, "kl": {d: by[("softmax", d)]["kl"] for d in capped},
            "all": all(theorem2_at(report, by[("softmax", d)]) for d in capped) if capped
            else None}
        for h in heads:
            if h == "softmax":
                continue
            per_d = {d: compare(by[("softmax", d)], by[(h, d)]) for d in ds
                     if ("softmax", d) in by and (h, d) in by}
            gain = {d: 1 - by[(h, d)]["kl"] / by[("softmax", d)]["kl"] for d in per_d
                    if by[("softmax", d)]["kl"] > 0}
            out["versus_softmax"][h] = {"per_d": per_d, "gain": gain,
                                        "closer_at_every_d": all(v == "closer"
                                                                 for v in per_d.values()),
                                        "worse_at_every_d": all(v == "worse"
                                                                for v in per_d.values())}
    return out


def plot(report: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fits = report["fits"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for h in dict.fromkeys(f["head"] for f in fits):
        rows = sorted((f for f in fits if f["head"] == h), key=lambda f: f["d"])
        ds = [f["d"] for f in rows]
        ax1.plot(ds, [max(f["kl"], 1e-6) for f in rows], marker="o", label=h)
        ax2.plot(ds, [f["rank"] for f in rows], marker="o", label=h)
    ds = sorted({f["d"] for f in fits})
    ax2.plot(ds, [d + 2 for d in ds], "k--", lw=1, label="softmax's bound d + 2")
    ax2.axhline(report["target"]["rank"], color="grey", lw=1, ls=":", label="rank of log P*")
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ds)
        ax.set_xticklabels([str(d) for d in ds])
        ax.set_xlabel("d")
        ax.legend(fontsize=8)
    ax1.set_yscale("log")
    ax1.set_ylabel("converged KL(P* || P_theta), nats")
    ax2.set_yscale("log")
    ax2.set_ylabel("rank of the fitted log-matrix")
    title = f"{report['target']['what']}: C = {report['target']['C']}, M = {report['target']['M']}"
    fig.suptitle(textwrap.fill(title, 130), fontsize=9)  # the target's line is long: two lines
    fig.tight_layout()
    save_figure_pair(fig, path)


def markdown(report: dict, f: dict, json_name: str, made: dict | None) -> str:
    t = report["target"]
    fitted = (f"Fitted at commit {made['source']} by `{made['command']}` ({made['seconds']:.0f} s)"
              if made else "The fits record no commit (made before `make fit` recorded it)")
    lines = ["# Expressiveness on a real distribution, fitted to convergence", "",
             f"{fitted}; written by `/usr/bin/python3 pipeline/fit_report.py {json_name}` from "
             f"`fit_logprob_matrix`'s report (`make fit`). Target: {t['what']}, C = {t['C']} "
             f"contexts x M = {t['M']} words, rank of log P* {t['rank']}, weighted entropy "
             f"{t['entropy']:.4f} nats. Each cell: converged KL(P* || P_theta) in nats (the "
             "second fit, from another seed, in brackets), the rank of the fitted log-matrix, "
             "and the steps.", "",
             "| head | " + " | ".join(f"d = {d}" for d in f["ds"]) + " |",
             "|---|" + "---|" * len(f["ds"])]
    by = {(x["head"], x["d"]): x for x in report["fits"]}
    for h in f["heads"]:
        cells = []
        for d in f["ds"]:
            x = by.get((h, d))
            if not x:
                cells.append("-")
                continue
            again = f" [{x['restart']['kl']:.4g}]" if x.get("restart") else ""
            mark = "" if x["converged"] else " (not converged)"
            cells.append(f"{x['kl']:.4g}{again}, rank {x['rank']}, {x['steps']} steps{mark}")
        lines.append(f"| {h} | " + " | ".join(cells) + " |")
    lines += ["", "![KL and rank against d](fit.png)", "", "## Findings (computed by "
              "pipeline/fit_report.py from the table)", ""]
    s = f["softmax_above_zero"]
    if s and s["ds"]:
        lines.append(f"- Theorem 2: at every d whose bound d + 2 is below the target's rank "
                     f"{t['rank']} ({', '.join(map(str, s['ds']))}), softmax's fitted rank is "
                     f"at most d + 2 and both fits' KL lies above the fit's resolution "
                     f"{report['settings']['abs_tol']:g} nats: **{'yes' if s['all'] else 'no'}**.")
    for h, v in f["versus_softmax"].items():
        per = ", ".join(f"d = {d}: {c}" + (f" ({100 * v['gain'][d]:+.1f}%)" if d in v["gain"]
                                              else "") for d, c in v["per_d"].items())
        verdict = ("closer than softmax at every d" if v["closer_at_every_d"] else
                   "worse than softmax at every d" if v["worse_at_every_d"] else
                   "a tie with softmax at every d" if set(v["per_d"].values()) == {"tie"} else
                   "mixed")
        lines.append(f"- {h}: **{verdict}** ({per}; a difference counts when it exceeds the two "
                     "fits' restart disagreements; in brackets the gain 1 - KL / KL_softmax).")
    if f["not_converged"]:
        lines.append(f"- Not converged within the step budget: {', '.join(f['not_converged'])}.")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report", help="fit_logprob_matrix's JSON report")
    args = ap.parse_args()
    try:
        with open(args.report) as fh:
            report = json.load(fh)
        report["target"]["rank"], report["fits"]  # noqa: B018 (the fields it needs)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"fit_report: {args.report}: not a fit_logprob_matrix report ({e})", file=sys.stderr)
        return EXIT_BAD_INPUT
    base = os.path.dirname(os.path.abspath(args.report))
    f = findings(report)
    write_json_atomically(os.path.join(base, "findings.json"), f)
    plot(report, os.path.join(base, "fit"))
    write_text_atomically(os.path.join(base, "fit.md"),
                          markdown(report, f, args.report, read(base, "made_at.json")))
    print(f"fit_report: wrote {os.path.join(base, 'fit.md')}, fit.png, findings.json")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
