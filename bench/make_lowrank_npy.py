#!/usr/bin/python3
"""Writes a softmax log-probability (or logit) matrix of a model with hidden size d as a float32
.npy of shape (T, M), row block by row block, so that a matrix larger than RAM can be made:
H (T x d) and W (d x M) standard normal scaled to logits of std `scale`, a bias b (M) unless
--no-bias, Z = H W + b in float64, rows log_softmax(Z) (or Z with --logits) rounded to float32.
Rank in exact arithmetic: d + 1 + bias for log-probabilities, d + bias for logits.

  make_lowrank_npy.py OUT.npy --T 100000 --M 128256 --d 512 [--no-bias] [--logits] [--seed 0]

Progress with an ETA on stderr. The file is written to OUT.npy.tmp and renamed when complete."""
import sys

import numpy as np

from npy_rows import shape_parser, write_rows
import os

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipeline"))
from pipeline_errors import refuse  # noqa: E402


def main():
    p = shape_parser(__doc__)
    p.add_argument("--d", type=int, required=True)
    p.add_argument("--no-bias", action="store_true")
    p.add_argument("--logits", action="store_true")
    p.add_argument("--scale", type=float, default=2.0, help="std of the logits")
    a = p.parse_args()
    if min(a.T, a.M, a.d, a.block_rows) < 1:
        refuse("make_lowrank_npy.py: --T, --M, --d and --block-rows must be >= 1")
    rng = np.random.default_rng(a.seed)
    w = rng.standard_normal((a.d, a.M)) * (a.scale / np.sqrt(a.d))  # (d, M)
    b = np.zeros(a.M) if a.no_bias else 0.5 * rng.standard_normal(a.M)  # (M,)

    def block(r, n):
        z = rng.standard_normal((n, a.d)) @ w + b  # (n, M)
        if not a.logits:
            top = z.max(axis=1, keepdims=True)
            z -= top + np.log(np.exp(z - top).sum(axis=1, keepdims=True))
        return z

    write_rows(a.out, a.T, a.M, a.block_rows, block, "make_lowrank_npy")


if __name__ == "__main__":
    main()
