#!/usr/bin/python3
"""Writes the input files of analysis_cases.txt (rank_analysis's bad-input cases) into DIR, with
numpy and h5py. Usage: make_analysis_inputs.py DIR

Good files, used beside the bad ones: valid.h5 (a contract file: softmax, d = 3, bias 1, T = 60,
M = 25), valid.npy (the same matrix), again/valid.h5 (a copy under the same name). Bad ones:
  zero_rows.h5, zero_cols.h5             contract files with T = 0 / M = 0 (datasets to match)
  zero_rows.npy, zero_cols.npy           .npy of shape (0, 25) / (60, 0)
  zero_rows_plain.h5                     a plain /log_probs of shape (0, 25)
  array_attribute.h5                     d = [3, 4]
  float_attribute.h5, bool_attribute.h5  d = 3.0, bias = True (an HDF5 enum)
  missing_attribute.h5                   no d
  nan.h5                                 a NaN at row 7, column 3
  wide.npy                               1 x 1000000 float32: its Gram matrix needs 7453 GiB
  huge_unwritten.h5                      T = 2^40 declared, the datasets never written
"""
import os
import shutil
import sys

import h5py
import numpy as np

out = sys.argv[1]
os.makedirs(os.path.join(out, "again"), exist_ok=True)
path = lambda name: os.path.join(out, name)
rng = np.random.default_rng(0)
T, M, d = 60, 25, 3
z = rng.standard_normal((T, d)) @ rng.standard_normal((d, M)) + rng.standard_normal(M)
z -= z.max(axis=1, keepdims=True)
lp = (z - np.log(np.exp(z).sum(axis=1, keepdims=True))).astype(np.float32)
targets = lp.argmax(axis=1).astype(np.int64)


def contract(name, log_probs=lp, tg=targets, **over):
    a = dict(format_version=2, head="softmax", d=d, bias=1, M=M, T=T, dataset="toy",
             split="test", seed=0, ppl=1.0, compute_dtype="float32")
    a.update(over)
    with h5py.File(path(name), "w") as f:
        f["log_probs"] = log_probs
        f["targets"] = tg
        for k, v in a.items():
            if v is not None:
                f.attrs[k] = v


contract("valid.h5")
shutil.copy(path("valid.h5"), path("again/valid.h5"))
np.save(path("valid.npy"), lp)
contract("zero_rows.h5", log_probs=lp[:0], tg=targets[:0], T=0)
contract("zero_cols.h5", log_probs=lp[:, :0], M=0)
np.save(path("zero_rows.npy"), lp[:0])
np.save(path("zero_cols.npy"), lp[:, :0])
with h5py.File(path("zero_rows_plain.h5"), "w") as f:
    f["log_probs"] = lp[:0]
contract("array_attribute.h5", d=np.array([3, 4]))
contract("float_attribute.h5", d=3.0)
contract("bool_attribute.h5", bias=True)
contract("missing_attribute.h5", d=None)
bad = lp.copy()
bad[7, 3] = np.nan
contract("nan.h5", log_probs=bad)
np.save(path("wide.npy"), np.full((1, 1_000_000), -13.8, dtype=np.float32))
with h5py.File(path("huge_unwritten.h5"), "w") as f:
    f.create_dataset("log_probs", shape=(2**40, 1), dtype="f4", chunks=(4096, 1))
    f.create_dataset("targets", shape=(2**40,), dtype="i8", chunks=(4096,))
    for k, v in dict(format_version=2, head="softmax", d=d, bias=1, M=1, T=2**40, dataset="toy",
                     split="test", seed=0, ppl=1.0, compute_dtype="float32").items():
        f.attrs[k] = v
