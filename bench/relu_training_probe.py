#!/usr/bin/python3
"""Why g:ReLU does not train at the cpu profile's setting, and what start or learning rate lets it:
short runs of train_wordlm itself (the cpu profile's model, trainers/configs/ptb_cpu.toml) per
variant, the same seed and data order. g:ReLU: p_i = (relu(z_i) + eps) / sum_j (relu(z_j) + eps),
eps = 1e-8 (sigsoftmax supplementary, eq. 15). Per variant: the mean training loss of every
logging window, whether it sits at ln M (every relu(z) = 0, every p = eps / (M eps) = 1 / M: no
gradient reaches z through a relu below zero, so the state absorbs), and the validation ppl of the
first --valid-tokens tokens after --batches batches, beside the unigram model's validation ppl
(add-one estimate on the training split) as the bar a trained model must pass.

    /usr/bin/python3 bench/relu_training_probe.py [--build build] [--batches 400] [--threads 1]

Variants (head, lr, decoder bias at start): softmax 30 / zero (the cpu profile's reference);
g:ReLU 30 / zero (the cpu profile); g:ReLU 30 / unigram (relu(b) + eps = p / p_max: every relu
starts positive, trainers/heads/unigram_bias.cpp); g:ReLU 10 and 3 / zero; g:ReLU 10 and 3 /
unigram; g:ReLU with eps = 1e-4 and 1e-2 at 3 / unigram (a target whose relu(z_t) is 0 costs
-log(eps / S), S the normaliser: 18.4 - log S nats at eps = 1e-8, and no gradient reaches z_t
through the relu to raise it; a larger eps lowers that cost but not the dead gradient); eps = 1e-2
at lr 30 / unigram, eps = 1e-1 at 3 / unigram.
--only N,N,... runs those variants alone (0-based). Prints markdown.
"""
from __future__ import annotations

import argparse
import collections
import json
import math
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipeline"))
from pipeline_errors import EXIT_OK, refuse  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VARIANTS = [("softmax", 30.0, "zero"), ("relu", 30.0, "zero"), ("relu", 30.0, "unigram"),
            ("relu", 10.0, "zero"), ("relu", 10.0, "unigram"), ("relu", 3.0, "zero"),
            ("relu", 3.0, "unigram"), ("relu:eps=0.0001", 3.0, "unigram"),
            ("relu:eps=0.01", 3.0, "unigram"), ("relu:eps=0.01", 30.0, "unigram"),
            ("relu:eps=0.1", 3.0, "unigram")]


def corpus_dir() -> str:
    for d in (os.path.join(ROOT, "datasets", "ptb"), os.path.join(ROOT, "..", "shared", "datasets", "ptb")):
        if os.path.isfile(os.path.join(d, "ptb.train.txt")):
            return d
    refuse("relu_training_probe: PTB not found (make data)")


def unigram_valid_ppl(ptb: str, valid_tokens: int) -> float:
    """The add-one unigram model of the training split on the first valid tokens (<eos> per line)."""
    def words(name):
        with open(os.path.join(ptb, name)) as f:
            for line in f:
                yield from line.split() + ["<eos>"]
    counts = collections.Counter(words("ptb.train.txt"))
    total, vocab = sum(counts.values()), len(counts)
    nll, n = 0.0, 0
    for w in words("ptb.valid.txt"):
        if n == valid_tokens:
            break
        nll -= math.log((counts[w] + 1) / (total + vocab))
        n += 1
    return math.exp(nll / n)


def run(build: str, head: str, lr: float, bias: str, args, out: str) -> dict:
    cmd = [os.path.join(build, "trainers", "train_wordlm"), "--config",
           os.path.join(ROOT, "trainers", "configs", "ptb_cpu.toml"), "--head", head, "--lr", str(lr),
           "--bias_init", bias, "--seed", "141", "--epochs", "1", "--finetune_epochs", "0",
           "--max_batches", str(args.batches), "--log_interval", str(args.window), "--valid_tokens",
           str(args.valid_tokens), "--dump_test", "false", "--threads", str(args.threads),
           "--out", out]
    start = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        refuse(f"relu_training_probe: {' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    recs = [json.loads(line) for line in open(os.path.join(out, "metrics.jsonl"))]
    train = [x["loss"] for x in recs if x.get("event") == "train"]
    valid = [x for x in recs if x.get("event") in ("valid", "epoch") and "valid_loss" in x]
    vloss = valid[-1]["valid_loss"] if valid else float("nan")
    return {"train": train, "valid_ppl": math.exp(vloss), "seconds": time.time() - start}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--batches", type=int, default=400)
    ap.add_argument("--window", type=int, default=50)
    ap.add_argument("--valid-tokens", type=int, default=20000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--only", default="", help="comma-separated variant indices (default: all)")
    args = ap.parse_args()
    ptb = corpus_dir()
    ln_m = math.log(10000)
    uni = unigram_valid_ppl(ptb, args.valid_tokens)
    print("# g:ReLU at the cpu profile's setting: what lets it train")
    print()
    print(f"`/usr/bin/python3 bench/relu_training_probe.py --batches {args.batches} --threads "
          f"{args.threads}`: train_wordlm, trainers/configs/ptb_cpu.toml, seed 141, the first "
          f"{args.batches} batches of epoch 1, mean training loss per window of {args.window} "
          f"batches; validation ppl on the first {args.valid_tokens} tokens. ln M = {ln_m:.4f}; "
          f"the add-one unigram model's validation ppl on the same tokens: **{uni:.1f}** (the bar).")
    print()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        only = {int(x) for x in args.only.split(",") if x}
        for i, (head, lr, bias) in enumerate(VARIANTS):
            if only and i not in only:
                continue
            print(f"relu_training_probe: {head} lr {lr} bias {bias} ...", file=sys.stderr)
            rows.append((head, lr, bias, run(args.build, head, lr, bias, args,
                                             os.path.join(tmp, f"v{i}"))))
    n = max(len(r[3]["train"]) for r in rows)
    heads = " | ".join(f"loss {args.window * (k + 1)}" for k in range(n))
    print(f"| head | lr | bias at start | {heads} | at ln M (last window) | valid ppl | "
          "below the unigram bar |")
    print("|---|---|---|" + "---|" * n + "---|---|---|")
    for head, lr, bias, r in rows:
        losses = " | ".join(f"{x:.3f}" for x in r["train"]) + " | -" * (n - len(r["train"]))
        stuck = abs(r["train"][-1] - ln_m) < 1e-3
        name = head.replace("relu", "g:ReLU") if head.startswith("relu") else head
        print(f"| {name} | {lr:g} | {bias} | {losses} | "
              f"{'yes' if stuck else 'no'} | {r['valid_ppl']:.1f} | "
              f"{'yes' if r['valid_ppl'] < uni else 'no'} |")
    print()
    best = min((r for r in rows if r[0].startswith("relu")), key=lambda r: r[3]["valid_ppl"])
    print(f"Best g:ReLU variant: lr {best[1]:g}, bias {best[2]}: valid ppl "
          f"{best[3]['valid_ppl']:.1f} ({'below' if best[3]['valid_ppl'] < uni else 'above'} the "
          f"unigram model's {uni:.1f}).")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
