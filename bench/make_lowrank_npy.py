#!/usr/bin/python3
"""Writes a softmax log-probability (or logit) matrix of a model with hidden size d as a float32
.npy of shape (T, M), row block by row block, so that a matrix larger than RAM can be made:
H (T x d) and W (d x M) standard normal scaled to logits of std `scale`, a bias b (M) unless
--no-bias, Z = H W + b in float64, rows log_softmax(Z) (or Z with --logits) rounded to float32.
Rank in exact arithmetic: d + 1 + bias for log-probabilities, d + bias for logits.

  make_lowrank_npy.py OUT.npy --T 100000 --M 128256 --d 512 [--no-bias] [--logits] [--seed 0]

Progress with an ETA on stderr. The file is written to OUT.npy.tmp and renamed when complete."""
import argparse
import os
import sys
import time

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--T", type=int, required=True)
    p.add_argument("--M", type=int, required=True)
    p.add_argument("--d", type=int, required=True)
    p.add_argument("--no-bias", action="store_true")
    p.add_argument("--logits", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scale", type=float, default=2.0, help="std of the logits")
    p.add_argument("--block-rows", type=int, default=2048)
    a = p.parse_args()
    if min(a.T, a.M, a.d, a.block_rows) < 1:
        sys.exit("make_lowrank_npy.py: --T, --M, --d and --block-rows must be >= 1")
    rng = np.random.default_rng(a.seed)
    w = rng.standard_normal((a.d, a.M)) * (a.scale / np.sqrt(a.d))  # (d, M)
    b = np.zeros(a.M) if a.no_bias else 0.5 * rng.standard_normal(a.M)  # (M,)
    tmp = a.out + ".tmp"
    out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(a.T, a.M))
    start = last = time.perf_counter()
    for r in range(0, a.T, a.block_rows):
        n = min(a.block_rows, a.T - r)
        z = rng.standard_normal((n, a.d)) @ w + b  # (n, M)
        if not a.logits:
            top = z.max(axis=1, keepdims=True)
            z -= top + np.log(np.exp(z - top).sum(axis=1, keepdims=True))
        out[r:r + n] = z
        now = time.perf_counter()
        if now - last > 10 or r + n == a.T:
            last = now
            done = (r + n) / a.T
            print(f"make_lowrank_npy: {r + n} / {a.T} rows ({100 * done:.1f}%), "
                  f"{now - start:.0f}s, ETA {(now - start) * (1 - done) / done:.0f}s",
                  file=sys.stderr, flush=True)
    out.flush()
    del out
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
