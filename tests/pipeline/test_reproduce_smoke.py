#!/usr/bin/python3
"""make reproduce PROFILE=smoke end to end, as make test runs it: every stage, then the checks
that make it a test of the science and of the driver, not only a run.

  tests/pipeline/test_reproduce_smoke.py BUILD_DIR OUT_DIR

- Theorem 2 on trained models: the softmax dump's numerical rank equals d + 2 exactly (decoder
  bias), and the rank of every other head that learned exceeds d + 2 (the paper's Table 3
  pattern). "Learned" = its test perplexity beats the add-one unigram model of the same training
  slice, computed here from the corpus; softmax and sigsoftmax must learn. A head that has not
  learned outputs nearly one row for every context, so its rank says nothing about the head: the
  test prints it and asserts nothing about it.
- Every run's dump agrees with its final.json (test ppl) and with an independent numpy
  recomputation of exp(-mean log p(target)) from the HDF5 file (rel. tol 1e-6: float32 rows
  summed in float64 by both sides, only the summation order differs).
- summary.md holds a perplexity row and a rank row per head and the paper's figures; the plot
  exists in PNG and SVG.
- Rank during training: every run has rank_vs_epoch.json with one entry per epoch (3 main + 1
  finetuning), each the rank of the first 400 test rows; softmax's never exceeds d + 2 (Theorem 2
  holds at every epoch); mixtures carry their prior/expert statistics within the ranges of their
  definitions; the epoch dumps are deleted once ranked; the plot and the summary's table exist.
- A second run skips every stage, each line naming the files that prove it (outputs checked,
  nothing recomputed: the dumps' mtimes stay).
- A profile with a bad field fails with exit status 2 and a message naming the file and field.
"""

import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

from checks import ROOT, check, finish, import_pipeline, skip_without_corpus  # noqa: E402

import_pipeline()
from final_json import read_final, section  # noqa: E402  (any layout: schema 2 or the old)

DRIVER = os.path.join(ROOT, "pipeline", "reproduce.py")


def run_driver(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["/usr/bin/python3", DRIVER, "--allow-dirty", *args], cwd=ROOT, text=True,
                          capture_output=True)


def unigram_ppl(run_dir: str) -> float:
    """Add-one unigram perplexity on the run's test rows, counts from its training slice. Ids as
    the trainer's: first-seen order over the whole training split, <eos> after every line."""
    import tomllib
    config = tomllib.load(open(os.path.join(run_dir, "config.toml"), "rb"))
    for base in (os.path.join(ROOT, "datasets"), os.path.join(ROOT, "..", "shared", "datasets")):
        path = os.path.join(base, "ptb", "ptb.train.txt")
        if os.path.exists(path):
            break
    ids, vocab = [], {}
    for line in open(path):
        for w in line.split() + ["<eos>"]:
            ids.append(vocab.setdefault(w, len(vocab)))
    counts = np.bincount(ids[:config["train_tokens"]], minlength=len(vocab)).astype(np.float64)
    with h5py.File(os.path.join(run_dir, "logprobs.h5"), "r") as f:
        targets = f["targets"][:]
    p = (counts[targets] + 1) / (counts.sum() + len(vocab))
    return math.exp(-np.mean(np.log(p)))


def main() -> int:
    build, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    # Without PTB (no ../shared, no `make data`): one line, and ctest reports the test as skipped.
    skip_without_corpus("ptb")
    shutil.rmtree(out, ignore_errors=True)  # a fresh pipeline every time
    first = run_driver("--profile", "smoke", "--build", build, "--out", out)
    sys.stdout.write(first.stdout[-4000:])
    sys.stderr.write(first.stderr[-4000:])
    check(first.returncode == 0, f"reproduce.py --profile smoke exits 0 (got {first.returncode})")
    if first.returncode != 0:
        return 1

    runs = sorted(d for d in os.listdir(out) if os.path.isdir(os.path.join(out, d)))
    ranks = {d: json.load(open(os.path.join(out, d, "rank.json"))) for d in runs}
    soft = [r for d, r in ranks.items() if r["head"] == "softmax"]
    check(len(soft) == 1, "one softmax run")
    s = soft[0]
    check(s["bound"] == s["d"] + 2, f"softmax bound = d + 2 = {s['d'] + 2} (got {s['bound']})")
    check(s["rank"] == s["d"] + 2,
          f"softmax rank equals d + 2 = {s['d'] + 2} exactly (got {s['rank']}, gap "
          f"sigma_b / sigma_b+1 = {s['spectral_gap']:.3g})")
    unigram = unigram_ppl(os.path.join(out, runs[0]))
    for d, r in ranks.items():
        ppl = section(read_final(os.path.join(out, d, "final.json"), "wordlm"))["test_ppl"]
        learned = ppl < unigram
        if r["head"] in ("softmax", "sigsoftmax"):
            check(learned, f"{r['head']} learned: test ppl {ppl:.1f} < unigram {unigram:.1f}")
        if r["head"] == "softmax":
            continue
        if learned:
            check(r["rank"] > r["bound"], f"{r['head']} (test ppl {ppl:.1f}): rank {r['rank']} "
                  f"exceeds d + 2 = {r['bound']}")
        else:
            print(f"note {r['head']}: not learned in the smoke budget (test ppl {ppl:.1f} >= "
                  f"unigram {unigram:.1f}): rank {r['rank']} not asserted")

    for d in runs:
        final = section(read_final(os.path.join(out, d, "final.json"), "wordlm"))
        with h5py.File(os.path.join(out, d, "logprobs.h5"), "r") as f:
            lp, tg = f["log_probs"][:], f["targets"][:]
            attr = float(f.attrs["ppl"])
        ppl = math.exp(-np.mean(lp[np.arange(len(tg)), tg].astype(np.float64)))
        check(math.isclose(ppl, final["test_ppl"], rel_tol=1e-6) and
              math.isclose(attr, final["test_ppl"], rel_tol=1e-12),
              f"{d}: numpy ppl {ppl:.4f} = ppl attribute {attr:.4f} = final.json "
              f"{final['test_ppl']:.4f}")

    import provenance
    label = provenance.source_state().label
    for d in runs:
        st = json.load(open(os.path.join(out, d, "stages.json")))
        check(all(v.get("commit") == label for k, v in st.items() if "finished" in v),
              f"{d}: stages.json records commit {label} with every finished stage")

    for d in runs:
        rve = json.load(open(os.path.join(out, d, "rank_vs_epoch.json")))
        eps = rve["epochs"]
        check([(e["phase"], e["epoch"], e["step"]) for e in eps] ==
              [("main", 1, 1), ("main", 2, 2), ("main", 3, 3), ("finetune", 1, 4)] and
              rve["rows"] == 400,
              f"{d}: rank_vs_epoch.json has main 1-3 and finetune 1 over 400 rows")
        if rve["head"] == "softmax":
            check(all(e["rank"] <= rve["bound"] for e in eps),
                  f"softmax: rank <= d + 2 = {rve['bound']} at every epoch "
                  f"({[e['rank'] for e in eps]})")
        if rve["head"].startswith(("mos", "moss")):
            ok = all(0 <= e["mixture"]["prior_entropy"] <= e["mixture"]["mean_prior_entropy"] + 1e-9
                     <= e["mixture"]["max_prior_entropy"] + 2e-9 and
                     -1e-9 <= e["mixture"]["disagreement"] <= e["mixture"]["prior_entropy"] + 1e-9
                     for e in eps)
            check(ok, f"{d}: mixture statistics at every epoch, within their ranges")
        epoch_dir = os.path.join(out, d, "epochs")
        names = sorted(os.listdir(epoch_dir))
        check(not any(n.endswith(".h5") and not n.endswith(".rank.h5") for n in names) and
              sum(n.endswith(".rank.h5") for n in names) == 4,
              f"{d}: epoch dumps deleted once ranked, 4 rank results kept")
    for ext in ("png", "svg"):
        p = os.path.join(out, f"rank_vs_epoch.{ext}")
        check(os.path.exists(p) and os.path.getsize(p) > 1000, f"plot {p} written")

    summary = open(os.path.join(out, "summary.md")).read()
    check("## Rank during training" in summary and summary.count(f"| 141 | {s['bound']} |") == len(runs),
          "summary.md has the rank-during-training table, one row per run")
    for d, r in ranks.items():  # rows name the head spec ("mos:K=2"), rank.json the head
        ours = re.search(rf"^\| {r['head']}(:[^ |]*)? \| ours \|", summary, re.M)
        rank = re.search(rf"^\| {r['head']}(:[^ |]*)? \| 141 \|", summary, re.M)
        check(bool(ours and rank), f"summary.md has the perplexity and rank rows of {r['head']}")
    check("| softmax | paper | 10 | 61.1 ± 0.4" in summary, "summary.md shows the paper's figures")
    check("Scaled down:" in summary and "Wall time" in summary,
          "summary.md says how it is scaled down and the wall times")
    for ext in ("png", "svg"):
        p = os.path.join(out, f"singular_values.{ext}")
        check(os.path.exists(p) and os.path.getsize(p) > 1000, f"plot {p} written")

    mtimes = {d: os.path.getmtime(os.path.join(out, d, "logprobs.h5")) for d in runs}
    second = run_driver("--profile", "smoke", "--build", build, "--out", out)
    skipped = sum(1 for line in second.stdout.splitlines()
                  if ": skipped (" in line and "| profile |" not in line)
    n_run_stages = sum(1 for line in first.stdout.splitlines()
                       if line.startswith("[reproduce]") and "| elapsed" in line and
                       "| profile |" not in line)
    check(second.returncode == 0 and skipped == n_run_stages,
          f"a second run skips all {n_run_stages} run stages (skipped {skipped})")
    check(all(os.path.getmtime(os.path.join(out, d, "logprobs.h5")) == t
              for d, t in mtimes.items()), "the second run rewrote no dump")

    with tempfile.TemporaryDirectory() as tmp:
        bad = os.path.join(tmp, "bad.toml")
        with open(bad, "w") as f:
            f.write('name = "bad"\nscaled_down = "x"\nout = "x"\nconfig = "x"\n'
                    'heads = ["softmax"]\nseeds = [1, 1]\n')
        r = run_driver("--profile", bad, "--build", build)
        check(r.returncode == 2 and f"{bad}: field 'seeds'" in r.stderr,
              f"bad profile: exit 2 naming the file and field (got {r.returncode}: "
              f"{r.stderr.strip()})")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
