"""What bench's matrix writers (make_lowrank_npy.py, make_spectrum_npy.py) share: the command
line's shape options, and a float32 .npy of shape (T, M) written row block by row block, so a
matrix larger than RAM can be made, with progress and an ETA on stderr, to OUT.npy.tmp renamed to
OUT.npy when complete."""
import argparse
import os
import sys
import time

import numpy as np


def shape_parser(doc):
    """An ArgumentParser with OUT, --T, --M, --seed (0) and --block-rows (2048)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--T", type=int, required=True)
    p.add_argument("--M", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--block-rows", type=int, default=2048)
    return p


def write_rows(path, T, M, block_rows, block, name):
    """Writes rows [r, r + n) = block(r, n), an (n, M) array, for every block; returns seconds."""
    tmp = path + ".tmp"
    out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(T, M))
    start = last = time.perf_counter()
    for r in range(0, T, block_rows):
        n = min(block_rows, T - r)
        out[r:r + n] = block(r, n)
        now = time.perf_counter()
        if now - last > 10 or r + n == T:
            last = now
            done = (r + n) / T
            print(f"{name}: {r + n} / {T} rows ({100 * done:.1f}%), {now - start:.0f}s, "
                  f"ETA {(now - start) * (1 - done) / done:.0f}s", file=sys.stderr, flush=True)
    out.flush()
    del out
    os.replace(tmp, path)
    return time.perf_counter() - start
