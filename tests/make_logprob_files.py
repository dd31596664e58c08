#!/usr/bin/python3
"""Writes log-output files with h5py, independently of the C++ writer, for the analysis tests:
one valid file plus one file per contract violation. Usage: make_logprob_files.py DIR
Also prints numpy's singular values and ranks of the valid file's matrix (float64 SVD) as
'key value...' lines, the reference the C++ test compares against."""
import sys, os
import numpy as np
import h5py

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
T, M, d = 60, 25, 3


def attrs(f, **over):
    a = dict(format_version=2, head="softmax", d=d, bias=1, M=M, T=T,
             dataset="toy", split="test", seed=0, ppl=1.0, compute_dtype="float32")
    a.update(over)
    for k, v in a.items():
        if v is not None:
            f.attrs[k] = v


def log_softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


logits = rng.standard_normal((T, d)) @ rng.standard_normal((d, M)) + rng.standard_normal(M)
lp = log_softmax(logits).astype(np.float32)
targets = lp.argmax(axis=1).astype(np.int64)


def write(name, log_probs=lp, tg=targets, **over):
    with h5py.File(os.path.join(out, name), "w") as f:
        if log_probs is not None:
            f.create_dataset("log_probs", data=log_probs, chunks=(min(16, log_probs.shape[0]),) + log_probs.shape[1:] if log_probs.ndim == 2 else None)
        if tg is not None:
            f.create_dataset("targets", data=tg)
        attrs(f, **over)


write("valid.h5", ppl=float(np.exp(-lp[np.arange(T), targets].astype(np.float64).mean())))
write("missing_log_probs.h5", log_probs=None)
write("missing_targets.h5", tg=None)
write("wrong_dtype.h5", log_probs=lp.astype(np.float16))  # float32 and float64 are valid
write("wrong_rank.h5", log_probs=lp.reshape(T, M, 1))
write("missing_attribute.h5", d=None)
write("inconsistent_shape.h5", M=M + 1)
# Format 1 named the shape vocab_size and num_tokens: still read.
write("version1.h5", format_version=1, M=None, T=None, vocab_size=M, num_tokens=T)
write("version3.h5", format_version=3)
write("unknown_head.h5", head="softmaxx")
bad_tg = targets.copy(); bad_tg[13] = M
write("target_out_of_range.h5", tg=bad_tg)
with h5py.File(os.path.join(out, "valid_vocab.h5"), "w") as f:
    f.create_dataset("log_probs", data=lp)
    f.create_dataset("targets", data=targets)
    f.create_dataset("vocab", data=[f"w{j}" for j in range(M)], dtype=h5py.string_dtype())
    attrs(f)
with h5py.File(os.path.join(out, "short_vocab.h5"), "w") as f:
    f.create_dataset("log_probs", data=lp)
    f.create_dataset("targets", data=targets)
    f.create_dataset("vocab", data=[f"w{j}" for j in range(M - 1)], dtype=h5py.string_dtype())
    attrs(f)
bad = lp.copy(); bad[7, 3] = np.nan; bad[9, 1] = np.inf; bad[11, 0] = np.nan
write("nan_inf.h5", log_probs=bad)
sp = lp.copy(); sp[2, 5] = -np.inf; sp[4, 6] = -np.inf
write("sparse_neg_inf.h5", log_probs=sp, head="sparse")
# A softmax-labelled file whose matrix is far above rank d + 2: --check must fail.
write("violates_theorem2.h5", log_probs=rng.standard_normal((T, M)).astype(np.float32))
with open(os.path.join(out, "valid.h5"), "rb") as f:
    data = f.read()
with open(os.path.join(out, "truncated.h5"), "wb") as f:
    f.write(data[: len(data) // 2])

s = np.linalg.svd(lp.astype(np.float64), compute_uv=False)
eps = float(np.finfo(np.float32).eps)
tol_nr = 0.5 * np.sqrt(M + T + 1) * s[0] * eps
print("sigma", " ".join(repr(float(x)) for x in s))
print("rank_nr", int((s > tol_nr).sum()))
# numpy.linalg.matrix_rank's default tolerance, sigma_max * max(M, T) * eps, with float32's eps.
print("rank_numpy", int(np.linalg.matrix_rank(lp.astype(np.float64), tol=s[0] * max(M, T) * eps)))
