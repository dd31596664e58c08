#!/usr/bin/python3
"""The numpy reference of bench_rank.sh: loads /log_probs (float32) and runs
numpy.linalg.svd(compute_uv=False) on it, then the Numerical Recipes rank with float32's eps.
Prints one JSON line: seconds (SVD only), rank, sigma_max, tol, rank_numpy (numpy's default
tolerance)."""
import json, sys, time
import h5py
import numpy as np

with h5py.File(sys.argv[1], "r") as f:
    a = f["log_probs"][...]
t, m = a.shape
start = time.perf_counter()
s = np.linalg.svd(a, compute_uv=False)
seconds = time.perf_counter() - start
eps = float(np.finfo(np.float32).eps)
tol = 0.5 * np.sqrt(m + t + 1) * float(s[0]) * eps
# numpy.linalg.matrix_rank's default tolerance, sigma_max max(M, T) eps.
rank_numpy = int((s > float(s[0]) * max(m, t) * eps).sum())
print(json.dumps({"seconds": seconds, "rank": int((s > tol).sum()), "sigma_max": float(s[0]),
                  "tol": tol, "rank_numpy": rank_numpy, "dtype": str(a.dtype)}))
