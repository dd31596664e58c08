#!/usr/bin/python3
"""Rank during training without training: pipeline/epoch_ranks.py, plot_rank_vs_epoch.py and the
summary's tables on fabricated run directories (metrics.jsonl + epochs/<phase>_<epoch>.rank.json
as train_wordlm and rank_analysis write them).

- collect(): epochs in training order (main, then finetuning) whatever the file order, the last
  record of an epoch that a resumed run wrote twice, valid ppl and the mixture statistics joined
  from metrics.jsonl;
- is_complete(): false without rank_vs_epoch.json, when an epoch's rank is missing, when a dump
  is newer than its rank, or when the trainer reported an epoch the file does not list;
- the plot: PNG and SVG written; a file without 'epochs' exits 2 naming the file and field, and
  writes nothing;
- summary.rank_vs_epoch_section(): one rank row per run, a mixture row per epoch.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

from checks import ROOT, check, finish, import_pipeline  # noqa: E402

import_pipeline()
import epoch_ranks as er  # noqa: E402
import summary  # noqa: E402
from repro_profile import Run  # noqa: E402


def fabricate(run_dir, head, ranks, mixture=False):
    """ranks: [(phase, epoch, rank)] in training order. Writes metrics.jsonl (main 2 twice, as a
    resumed run would) and one rank.json per epoch, in reverse order on disk."""
    os.makedirs(os.path.join(run_dir, "epochs"))
    lines = [{"event": "start"}]
    for phase, epoch, rank in ranks:
        for repeat in ((0, 1) if (phase, epoch) == ("main", 2) else (1,)):
            lines.append({"event": "valid", "phase": phase, "epoch": epoch,
                          "valid_ppl": 100.0 + rank + repeat})
            if mixture:
                lines.append({"event": "mixture", "phase": phase, "epoch": epoch, "contexts": 2000,
                              "prior_entropy": 0.5, "mean_prior_entropy": 0.6,
                              "max_prior_entropy": 0.693, "disagreement": 0.01 * rank})
            lines.append({"event": "epoch_dump", "phase": phase, "epoch": epoch,
                          "ppl": 200.0 + rank + repeat, "rows": 2000})
    with open(os.path.join(run_dir, "metrics.jsonl"), "w") as f:
        f.writelines(json.dumps(x) + "\n" for x in lines)
    for phase, epoch, rank in reversed(ranks):
        with open(os.path.join(run_dir, "epochs", f"{phase}_{epoch}.rank.json"), "w") as f:
            json.dump({"rank": rank, "T": 2000, "M": 10000, "d": 100, "bound": 102,
                       "spectral_gap": 1.5, "tol": 0.1, "sigma_max": 1e4}, f)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        soft, mos = os.path.join(tmp, "softmax_s1"), os.path.join(tmp, "mos_s1")
        fabricate(soft, "softmax", [("main", 1, 60), ("main", 2, 95), ("main", 10, 102),
                                    ("finetune", 1, 102)])
        fabricate(mos, "mos:K=2", [("main", 1, 70), ("main", 2, 130), ("main", 10, 400),
                                   ("finetune", 1, 450)], mixture=True)
        c = er.collect(soft, "softmax", 1)
        check([(e["phase"], e["epoch"], e["step"]) for e in c["epochs"]] ==
              [("main", 1, 1), ("main", 2, 2), ("main", 10, 3), ("finetune", 1, 4)],
              "collect: training order (main 10 after main 2, finetuning last), steps 1..4")
        check(c["epochs"][1]["subset_ppl"] == 296.0 and c["epochs"][1]["valid_ppl"] == 196.0,
              "collect: an epoch written twice takes its last records")
        check(c["rows"] == 2000 and c["bound"] == 102 and "mixture" not in c["epochs"][0],
              "collect: rows and bound from the rank results; no mixture entry for softmax")
        m = er.collect(mos, "mos:K=2", 1)
        check(m["epochs"][3]["mixture"]["disagreement"] == 4.5, "collect: mixture statistics joined")

        check(not er.is_complete(soft), "incomplete without rank_vs_epoch.json")
        for d, data in ((soft, c), (mos, m)):
            with open(os.path.join(d, "rank_vs_epoch.json"), "w") as f:
                json.dump(data, f)
        check(er.is_complete(soft), "complete once written")
        h5 = os.path.join(soft, "epochs", "main_2.h5")
        open(h5, "w").close()
        future = time.time() + 100
        os.utime(h5, (future, future))
        check(not er.is_complete(soft), "incomplete when a dump is newer than its rank")
        os.remove(h5)
        os.remove(os.path.join(soft, "epochs", "finetune_1.rank.json"))
        check(not er.is_complete(soft), "incomplete when an epoch's rank is missing")
        with open(os.path.join(mos, "metrics.jsonl"), "a") as f:
            f.write(json.dumps({"event": "epoch_dump", "phase": "finetune", "epoch": 2,
                                "ppl": 1.0}) + "\n")
        check(not er.is_complete(mos), "incomplete when the trainer reported an unlisted epoch")

        script = os.path.join(ROOT, "pipeline", "plot_rank_vs_epoch.py")
        prefix = os.path.join(tmp, "plot")
        r = subprocess.run(["/usr/bin/python3", script, os.path.join(soft, "rank_vs_epoch.json"),
                            os.path.join(mos, "rank_vs_epoch.json"), "--out", prefix],
                           capture_output=True, text=True)
        check(r.returncode == 0 and all(os.path.getsize(prefix + e) > 1000 for e in (".png", ".svg")),
              f"plot: PNG and SVG written ({r.stderr.strip()})")
        bad = os.path.join(tmp, "bad.json")
        with open(bad, "w") as f:
            json.dump({"head": "x", "seed": 1, "bound": 3, "rows": 9}, f)
        r = subprocess.run(["/usr/bin/python3", script, bad, "--out", os.path.join(tmp, "none")],
                           capture_output=True, text=True)
        check(r.returncode == 2 and f"{bad}: field 'epochs' missing" in r.stderr and
              not any(n.startswith("none") for n in os.listdir(tmp)),
              f"plot: bad input exits 2 naming file and field, no output ({r.stderr.strip()})")

        runs = [Run("softmax", 1, "c.toml", soft), Run("mos:K=2", 1, "c.toml", mos)]
        text = "\n".join(summary.rank_vs_epoch_section(None, runs))
        check("| softmax | 1 | 102 | 60 | 95 | 102 | 102 |" in text and
              "| mos:K=2 | 1 | 102 | 70 | 130 | 400 | 450 |" in text and
              "| main 1 | main 2 | main 10 | ft 1 |" in text,
              "summary: one rank row per run, columns in training order")
        check("| mos:K=2 | 1 | ft 1 | 450 | 651.0 | 0.500 | 0.600 | 0.693 | 4.5000 |" in text,
              "summary: a mixture row per epoch")
        check(summary.rank_vs_epoch_section(None, [Run("x", 1, "c", tmp)]) == [],
              "summary: no section without rank_vs_epoch.json")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
