#!/usr/bin/python3
"""pipeline/seed_summary.py on fabricated run directories (no training) of the seed papers'
profiles, reached through the trainer kind's descriptor (trainer_kinds.py): the NPLM table puts our test ppl beside de Brebisson & Vincent's Table 5 figure of the
same head (read here independently from results/paper/other_seed_results.csv), the character
table our bpc (three decimals) beside the paper's text8 figures, the rank table carries every
run's verdict (bound_not_binding included), mean ± sample std over seeds, '-' for a run without
results, and the profile stages (train, analyse) in the wall-time table; the singular-value plot
named only where it exists.
"""

import csv
import json
import os
import statistics
import sys
import tempfile

from checks import ROOT, check, finish, use_build  # noqa: E402

use_build()
from tiny_profile import tiny_profile  # noqa: E402


def figures():
    with open(os.path.join(ROOT, "results", "paper", "other_seed_results.csv")) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def fabricate(out, name, seed, final, rank):
    d = os.path.join(out, f"{name}_s{seed}")
    os.makedirs(d)
    if final is not None:
        json.dump(final, open(f"{d}/final.json", "w"))
    if rank is not None:
        json.dump(rank, open(f"{d}/rank.json", "w"))
    json.dump({"train": {"seconds": 125.0}, "analyse": {"seconds": 7.0}},
              open(f"{d}/stages.json", "w"))
    open(f"{d}/config.toml", "w").write('dataset = "ptb"\nhidden = 64\nnhid = 64\n')


def row(text, first):
    return next((line for line in text.splitlines() if line.startswith(f"| {first} |")), "")


def main():
    paper = {(r["dataset"], r["head"], r["metric"]): r["value"] for r in figures()}
    with tempfile.TemporaryDirectory() as tmp:
        # NPLM: two seeds of softmax (mean ± std), one of taylor, a spherical run without results.
        out = os.path.join(tmp, "nplm")
        p = tiny_profile(os.path.join(tmp, "nplm.toml"), out,
                         ["softmax", "taylor", "spherical:eps=0.0198"], [1], name="n",
                         trainer="nplm", seeds_by_head={"softmax": [1, 2]})
        rank = {"M": 10000, "d": 64, "T": 5000, "bound": 66, "rank": 66, "rank_numpy": 20,
                "verdict": "within_bound", "theorem2_bounded": True, "spectral_gap": 1234.5}
        fabricate(out, "softmax", 1, {"valid_ppl": 200.0, "test_ppl": 190.0}, rank)
        fabricate(out, "softmax", 2, {"valid_ppl": 210.0, "test_ppl": 196.0}, rank)
        fabricate(out, "taylor", 1, {"valid_ppl": 250.0, "test_ppl": 240.5},
                  dict(rank, rank=900, verdict="exceeds_bound", theorem2_bounded=False))
        fabricate(out, "spherical", 1, None, None)
        text = open(p.kind.write_report(p, p.runs(), {})).read()
        sm = row(text, "softmax")
        mean, std = statistics.mean([190.0, 196.0]), statistics.stdev([190.0, 196.0])
        check(f"| softmax | 2 | 205.0 ± 7.1 | {mean:.1f} ± {std:.1f} | "
              f"{paper[('ptb_nplm', 'softmax', 'ppl')]} |" == sm, f"softmax row: {sm}")
        check(row(text, "taylor").endswith(f"| 240.5 | {paper[('ptb_nplm', 'taylor', 'ppl')]} |"),
              f"taylor row: {row(text, 'taylor')}")
        check(row(text, "spherical:eps=0.0198") ==
              f"| spherical:eps=0.0198 | 1 | - | - | {paper[('ptb_nplm', 'spherical', 'ppl')]} |",
              f"a run without results: {row(text, 'spherical:eps=0.0198')}")
        check("| taylor | 1 | 10000 | 64 | 5000 | 66 | **900** | 20 | exceeds_bound | no |" in text,
              "the rank row of taylor")
        check("| 1234.5 |" in text or "| 1.23e+03 |" in text, "the spectral gap")
        check("| softmax seed 2 | 2m05s | 7s | 2m12s |" in text, "wall times of train and analyse")

        # Character LM: bpc with three decimals beside the text8 figures; bound_not_binding.
        out = os.path.join(tmp, "char")
        p = tiny_profile(os.path.join(tmp, "char.toml"), out, ["softmax", "sigsoftmax"], [1],
                         name="c", trainer="charlm")
        rank = {"M": 50, "d": 64, "T": 442423, "bound": 66, "rank": 50, "rank_numpy": 50,
                "verdict": "bound_not_binding", "theorem2_bounded": True, "spectral_gap": None}
        fabricate(out, "softmax", 1, {"valid_bpc": 1.61234, "test_bpc": 1.65}, rank)
        fabricate(out, "sigsoftmax", 1, {"valid_bpc": 1.6, "test_bpc": 1.649}, rank)
        text = open(p.kind.write_report(p, p.runs(), {})).read()
        check(row(text, "softmax") == f"| softmax | 1 | 1.612 | 1.650 | "
              f"{paper[('text8', 'softmax', 'valid_bpc')]} | {paper[('text8', 'softmax', 'test_bpc')]} |",
              f"softmax bpc row: {row(text, 'softmax')}")
        check(text.count("bound_not_binding | yes | - |") == 2,
              "both char runs: bound_not_binding, no spectral gap")
        # The plot is named only where it is: its spectra are not committed, so a checkout that
        # adds runs and re-writes the tables has none.
        check("no plot in this checkout" in text and "`singular_values.png`" not in text,
              "no singular_values.png: the summary says there is no plot, and names none")
        open(os.path.join(out, "singular_values.png"), "wb").close()
        text = open(p.kind.write_report(p, p.runs(), {})).read()
        check("`singular_values.png`" in text and "no plot in this checkout" not in text,
              "with singular_values.png: the summary names it")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
