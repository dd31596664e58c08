#!/usr/bin/python3
"""pipeline/classify_summary.py on fabricated classifier runs (no training): per head the mean ±
sample std over seeds of test error, NLL and loss (checked against the statistics module), the
paper's MNIST Table 1 row beside ours (from results/paper/spherical_mnist.csv), mse without an
NLL, a sparse head whose labels fall outside the top k shown as inf with the count, the rank table
from rank.json, the dataset caveat, and the plot files. Then the classify profile through the
Slurm backend's dry run: every analyse job waits for its run's classify job.
"""

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

from checks import ROOT, build_dir, check, finish, use_build  # noqa: E402

use_build()
from repro_profile import load_profile  # noqa: E402


def main():
    rng = random.Random(11)
    with tempfile.TemporaryDirectory() as tmp:
        p = load_profile(os.path.join(ROOT, "pipeline", "profiles", "classify.toml"))
        p.out = tmp
        p.heads = ["softmax", "mse", "sparse:k=2"]
        p.seeds = [1, 2, 3]
        runs = p.runs()
        made = {}
        for run in runs:
            os.makedirs(run.dir)
            err = rng.uniform(8, 12)
            nll = None if run.name == "mse" else rng.uniform(0.2, 0.4)
            outside = 0
            if run.name == "sparse" and run.seed == 2:
                nll, outside = None, 7
            final = {"test_error_pct": err, "test_nll": nll, "test_loss": rng.uniform(0.1, 0.5),
                     "train_loss": rng.uniform(0.1, 0.5), "best_epoch": run.seed + 1,
                     "test_outside_support": outside, "dataset": "fashion-mnist",
                     "split": "random", "train_images": 10000, "valid_images": 2000,
                     "test_images": 10000, "d": 500, "classes": 10}
            made[(run.head, run.seed)] = final
            json.dump(final, open(os.path.join(run.dir, "final.json"), "w"))
            json.dump({"classify": {"seconds": 40.0}}, open(os.path.join(run.dir, "stages.json"), "w"))
            if run.name == "softmax":
                json.dump({"T": 10000, "M": 10, "d": 500, "bound": 502, "rank": 10,
                           "rank_numpy": 10, "verdict": "within_bound"},
                          open(os.path.join(run.dir, "rank.json"), "w"))
        path = p.kind.write_report(p, runs, {})
        check(p.kind.report.function == ("classify_summary", "write_summary") and
              p.kind.report_stage == "classify_report",
              "the classifier's report is classify_summary.write_summary")
        text = open(path).read()
        lines = text.splitlines()

        def row(head, source):
            return next((l for l in lines if l.startswith(f"| {head} | {source} |")), "")

        errs = [made[("softmax", s)]["test_error_pct"] for s in (1, 2, 3)]
        nlls = [made[("softmax", s)]["test_nll"] for s in (1, 2, 3)]
        want = f"{statistics.mean(errs):.2f} ± {statistics.stdev(errs):.2f}"
        check(f"| softmax | ours | 3 | {want} | " in text, f"softmax error mean ± std {want}")
        want_nll = f"{statistics.mean(nlls):.4f} ± {statistics.stdev(nlls):.4f}"
        check(want_nll in row("softmax", "ours"), f"softmax NLL mean ± std {want_nll}")
        check("| 0.812 ± 0.104 | 0.0433 ± 0.0080 |" in row("softmax", "paper (MNIST)"),
              "the paper's Table 1 softmax row beside ours")
        check("0.0035 ± 0.00036 (mse)" in row("mse", "paper (MNIST)"), "the paper's mse loss")
        check("- (no probabilities)" in row("mse", "ours"), "mse: no NLL")
        check("inf (7 labels outside the top k)" in row("sparse:k=2", "ours"),
              "sparse: NLL inf with the count of labels outside the top k")
        check(not row("sparse:k=2", "paper (MNIST)"), "no paper row for sparse (none published)")
        check(sum(1 for l in lines if l.startswith("| softmax | ") and "within_bound" in l) == 3,
              "the rank table lists each softmax dump")
        check("The dataset differs from the paper's" in text, "the dataset caveat is stated")
        check("0.716" in text and "0.688" in text, "Table 2 (official split) figures quoted")
        for ext in (".png", ".svg"):
            f = os.path.join(tmp, "test_error" + ext)
            check(os.path.exists(f) and os.path.getsize(f) > 1000, f"plot {f} written")

    r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "pipeline", "reproduce.py"),
                        "--profile", "classify", "--scheduler", "slurm", "--dry-run",
                        "--build", build_dir(), "--out", "/nonexistent/classify"],
                       capture_output=True, text=True, cwd=ROOT)
    graph = [l.strip() for l in r.stdout.splitlines() if l.startswith("  ") and "/" in l.split()[0]]
    analyse = [l for l in graph if l.split()[0].endswith("/analyse")]
    check(r.returncode == 0, f"slurm dry run of classify exits 0 ({r.stderr.strip()[-300:]})")
    check(len(analyse) == 30 and all(
        f"afterok {l.split()[0].split('/')[0]}/classify" in l for l in analyse),
        f"slurm: the 30 analyse jobs each wait for their run's classify job ({analyse[:2]})")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
