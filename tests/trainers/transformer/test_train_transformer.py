#!/usr/bin/python3
"""train_transformer end to end on the first PTB tokens (a tiny model, ~20 s on one thread):

1. a run to the end writes config.toml, metrics.jsonl, best.pt, logprobs.h5 (every test token,
   attribute final_norm = layernorm) and final.json (schema 2, the trainer's section with d, M,
   final_norm, test_ppl = exp(test_loss));
2. the same run interrupted after 7 batches (--stop-after-batches: exit 130, a checkpoint) and
   resumed (--resume) writes a bit-identical logprobs.h5 and the same losses: the epoch's window
   order comes from (seed, epoch), the lr from the step, AdamW's state from the checkpoint;
3. rank_analysis reads the dump's final_norm: the bound is d + 1 (not d + 2 with the decoder's
   bias) and the softmax model's rank is within it, certified by the exact SVD;
4. a head it refuses (adaptive) and heads not dividing d_model are one line, exit 2.
Argument 1: the build directory.
"""
import json
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures"))
from checks import check, finish, message_lines  # noqa: E402

build = os.path.abspath(sys.argv[1])
binary = os.path.join(build, "trainers", "train_transformer")
rank = os.path.join(build, "analysis", "rank_analysis")
D = 16
TINY = ["--dataset", "ptb", "--train_tokens", "6000", "--valid_tokens", "600", "--test_tokens",
        "700", "--d_model", str(D), "--layers", "1", "--heads", "2", "--context", "16",
        "--batch_size", "8", "--epochs", "2", "--warmup", "5", "--dropout", "0.1",
        "--threads", "1", "--log_interval", "10", "--seed", "7"]


def train(out, *extra):
    return subprocess.run([binary, *TINY, "--out", out, *extra], capture_output=True, text=True)


with tempfile.TemporaryDirectory() as tmp:
    whole = os.path.join(tmp, "whole")
    r = train(whole)
    check(r.returncode == 0, f"a tiny run finishes (exit {r.returncode}: {r.stderr[-300:]})")
    if r.returncode == 0:
        final = json.load(open(os.path.join(whole, "final.json")))
        sec = final.get("transformer", {})
        check(final.get("schema") == 2 and final.get("trainer") == "transformer" and
              sec.get("d") == D and sec.get("M", 0) > 1000 and sec.get("final_norm") == "layernorm"
              and abs(sec["test_ppl"] - np.exp(sec["test_loss"])) < 1e-9 * sec["test_ppl"] and
              final.get("dump_rows") == 700,
              f"final.json: schema 2 with the trainer's section ({sorted(sec)})")
        with h5py.File(os.path.join(whole, "logprobs.h5"), "r") as f:
            lp = f["log_probs"][()]
            attrs = dict(f.attrs)
        lse = np.log(np.exp(lp.astype(np.float64)).sum(1))
        check(lp.shape == (700, sec["M"]) and attrs.get("final_norm") in (b"layernorm", "layernorm")
              and np.abs(lse).max() < 1e-4,
              f"logprobs.h5: every test token, rows normalised, final_norm layernorm "
              f"({lp.shape}, {attrs.get('final_norm')!r}, max |logsumexp| {np.abs(lse).max():.1e})")

        cut = os.path.join(tmp, "cut")
        a = train(cut, "--stop-after-batches", "7")
        b = subprocess.run([binary, *TINY, "--out", cut, "--resume"], capture_output=True,
                           text=True)
        same = False
        if a.returncode == 130 and b.returncode == 0:
            with h5py.File(os.path.join(cut, "logprobs.h5"), "r") as f:
                same = np.array_equal(f["log_probs"][()], lp)
            resumed = json.load(open(os.path.join(cut, "final.json")))
            same = same and resumed["transformer"]["test_loss"] == sec["test_loss"] and \
                resumed["valid_loss"] == final["valid_loss"]
        check(same, f"interrupted after 7 batches (exit {a.returncode}) and resumed (exit "
              f"{b.returncode}): the same dump, bit for bit, and the same losses")

        rr = subprocess.run([rank, os.path.join(whole, "logprobs.h5"), "--method", "exact",
                             "--json", "--check"], capture_output=True, text=True)
        res = json.loads(rr.stdout.strip().splitlines()[-1]) if rr.returncode in (0, 3) else {}
        check(rr.returncode == 0 and res.get("bound") == D + 1 and res.get("rank", 1e9) <= D + 1
              and res.get("final_norm") == "layernorm" and res.get("verdict") == "within_bound",
              f"rank_analysis: bound d + 1 = {D + 1} from the dump's final_norm, rank "
              f"{res.get('rank')} within it ({res.get('verdict')}, exit {rr.returncode})")

    for bad, field in ((["--head", "adaptive"], "head"), (["--heads", "3"], "heads")):
        r = train(os.path.join(tmp, "bad"), *bad)
        check(r.returncode == 2 and len(message_lines(r.stderr)) == 1 and
              field in r.stderr and not os.path.exists(os.path.join(tmp, "bad")),
              f"{' '.join(bad)}: one line naming {field}, exit 2, nothing written "
              f"({r.stderr.strip()[-160:]})")
sys.exit(finish())
