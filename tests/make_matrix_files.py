#!/usr/bin/python3
"""Writes the matrix inputs rank_analysis accepts besides the trainers' HDF5 files, with numpy and
h5py (independently of the C++ readers), plus broken ones. Usage: make_matrix_files.py DIR

The matrix: log-softmax of rank-3 logits plus a bias (T = 60, M = 25, so Theorem 2's rank is
d + 2 = 5), computed in float64 ("lp64") and rounded to float32 ("lp32"). Written as
  c_f32.npy, f_f32.npy, c_f64.npy, f_f64.npy   C and Fortran order (f_* is np.save of the paper's
                                               M x T matrix A-hat transposed: no copy, F order)
  v2_f32.npy, v3_f64.npy                       NPY format versions 2.0 and 3.0
  plain_f32.h5, plain_f64.h5                   only a /log_probs dataset, no attributes
  contract_f64.h5                              the full contract with a float64 /log_probs
  grid_c.npy, grid_f.npy, grid_f32f.npy        150 x 130 random float64/float32 (C, F, F order),
                                               larger than the reader's 64 x 64 transpose tiles
and the broken inputs archive.npz, bad_magic.npy, truncated.npy, object.npy, one_d.npy, three_d.npy, nan.npy,
int.npy, big_endian.npy, nan_plain.h5.

Prints numpy's reference values as 'key value...' lines: the singular values of lp32 and lp64
(float64 SVD), their NR ranks under the eps of their dtype and under float32's eps, and a few
grid entries (row col repr)."""
import os
import sys

import h5py
import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
T, M, d = 60, 25, 3


def log_softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


lp64 = log_softmax(rng.standard_normal((T, d)) @ rng.standard_normal((d, M)) + rng.standard_normal(M))
lp32 = lp64.astype(np.float32)
path = lambda name: os.path.join(out, name)

np.save(path("c_f32.npy"), lp32)
np.savez(path("archive.npz"), log_probs=lp32)
np.save(path("c_f64.npy"), lp64)
a_hat32 = np.ascontiguousarray(lp32.T)  # the paper's M x T matrix
np.save(path("f_f32.npy"), a_hat32.T)   # F-contiguous (T, M): written with fortran_order True
np.save(path("f_f64.npy"), np.asfortranarray(lp64))
for name, arr, version in [("v2_f32.npy", lp32, (2, 0)), ("v3_f64.npy", np.asfortranarray(lp64), (3, 0))]:
    with open(path(name), "wb") as f:
        np.lib.format.write_array(f, arr, version=version)

for name, arr in [("plain_f32.h5", lp32), ("plain_f64.h5", lp64)]:
    with h5py.File(path(name), "w") as f:
        f["log_probs"] = arr
targets = lp64.argmax(axis=1).astype(np.int64)
with h5py.File(path("contract_f64.h5"), "w") as f:
    f["log_probs"] = lp64
    f["targets"] = targets
    for k, v in dict(format_version=1, head="softmax", d=d, bias=1, vocab_size=M, num_tokens=T,
                     dataset="toy", split="test", seed=0, compute_dtype="float64",
                     ppl=float(np.exp(-lp64[np.arange(T), targets].mean()))).items():
        f.attrs[k] = v

grid = rng.standard_normal((150, 130))
np.save(path("grid_c.npy"), grid)
np.save(path("grid_f.npy"), np.asfortranarray(grid))
np.save(path("grid_f32f.npy"), np.asfortranarray(grid.astype(np.float32)))

# Broken inputs.
with open(path("bad_magic.npy"), "wb") as f:
    f.write(b"PK\x03\x04 this is a zip archive (np.savez), not an .npy file" + bytes(200))
with open(path("c_f32.npy"), "rb") as f:
    data = f.read()
with open(path("truncated.npy"), "wb") as f:
    f.write(data[: len(data) // 2])
np.save(path("object.npy"), np.array([[1.0, "x"], [None, 2]], dtype=object), allow_pickle=True)
np.save(path("one_d.npy"), lp32[0])
np.save(path("three_d.npy"), lp32.reshape(T, M, 1))
bad = lp32.copy()
bad[7, 3] = np.nan
np.save(path("nan.npy"), bad)
with h5py.File(path("nan_plain.h5"), "w") as f:
    f["log_probs"] = bad
np.save(path("int.npy"), np.arange(T * M, dtype=np.int64).reshape(T, M))
np.save(path("big_endian.npy"), lp32.astype(">f4"))


def report(key, x, eps):
    s = np.linalg.svd(x.astype(np.float64), compute_uv=False)
    tol = 0.5 * np.sqrt(M + T + 1) * s[0] * eps
    print(f"sigma_{key}", " ".join(repr(float(v)) for v in s))
    return int((s > tol).sum())


eps32, eps64 = float(np.finfo(np.float32).eps), float(np.finfo(np.float64).eps)
print("rank_f32", report("f32", lp32, eps32))
print("rank_f64", report("f64", lp64, eps64))
s64 = np.linalg.svd(lp64, compute_uv=False)
print("rank_f64_eps32", int((s64 > 0.5 * np.sqrt(M + T + 1) * s64[0] * eps32).sum()))
for r, c in [(0, 0), (17, 5), (63, 64), (64, 63), (149, 129), (100, 127)]:
    print("grid", r, c, repr(float(grid[r, c])))
