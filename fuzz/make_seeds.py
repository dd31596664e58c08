#!/usr/bin/python3
"""Writes the seed corpora of the fuzz harnesses into fuzz/seeds/<harness>/ (checked in; rerun
after a format change). Small valid files of each reader's format, plus a few near misses:
the fuzzer mutates from there. Usage: /usr/bin/python3 fuzz/make_seeds.py"""

import gzip
import io
import pathlib
import shutil
import struct

import h5py
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent
SEEDS = ROOT / "seeds"


def fresh(name):
    d = SEEDS / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    return d


def npy_bytes(a, version=None):
    buf = io.BytesIO()
    if version is None:
        np.save(buf, a)
    else:
        np.lib.format.write_array(buf, a, version=version)
    return buf.getvalue()


def npy_seeds():
    d = fresh("fuzz_npy_header")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 5)).astype(np.float32)
    (d / "f4_c_3x5.npy").write_bytes(npy_bytes(a))
    f8 = np.asfortranarray(rng.standard_normal((4, 2)))
    (d / "f8_fortran_4x2.npy").write_bytes(npy_bytes(f8))
    (d / "f4_v2_2x3.npy").write_bytes(npy_bytes(a[:2, :3].copy(), version=(2, 0)))
    (d / "f4_v3_1x1.npy").write_bytes(npy_bytes(a[:1, :1].copy(), version=(3, 0)))
    # Near misses: a rejected dtype, a 1-D shape, a structured dtype.
    (d / "i8_2x2.npy").write_bytes(npy_bytes(np.arange(4, dtype="<i8").reshape(2, 2)))
    (d / "f4_1d.npy").write_bytes(npy_bytes(np.zeros(3, dtype="<f4")))
    (d / "structured.npy").write_bytes(npy_bytes(np.zeros(2, dtype=[("a", "<f4"), ("b", "<i2")])))


def idx_bytes(a):
    header = struct.pack(">BBBB", 0, 0, 0x08, a.ndim) + struct.pack(">" + "I" * a.ndim, *a.shape)
    return header + a.astype(np.uint8).tobytes()


def idx_seeds():
    d = fresh("fuzz_idx")
    images = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    labels = np.array([3, 1, 4, 1], dtype=np.uint8)
    (d / "images_2x3x3.idx").write_bytes(idx_bytes(images))
    (d / "labels_4.idx").write_bytes(idx_bytes(labels))
    (d / "images_2x3x3.idx.gz").write_bytes(gzip.compress(idx_bytes(images), mtime=0))
    (d / "labels_4.idx.gz").write_bytes(gzip.compress(idx_bytes(labels), mtime=0))


def contract_file(path, T=4, M=5, version=2, chunked=False, vocab=True):
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((T, M))
    log_probs = (logits - np.log(np.exp(logits).sum(1, keepdims=True))).astype(np.float32)
    targets = rng.integers(0, M, T).astype(np.int64)
    str_t = h5py.string_dtype("utf-8")
    with h5py.File(path, "w", libver="earliest") as f:
        f.create_dataset("log_probs", data=log_probs, chunks=(2, M) if chunked else None)
        f.create_dataset("targets", data=targets)
        if vocab:
            f.create_dataset("vocab", data=[f"w{i}" for i in range(M)], dtype=str_t)
        a = f.attrs
        a.create("format_version", version, dtype="<i8")
        a.create("head", "softmax", dtype=str_t)
        a.create("d", 3, dtype="<i8")
        a.create("bias", 1, dtype="<i8")
        a.create("M" if version == 2 else "vocab_size", M, dtype="<i8")
        a.create("T" if version == 2 else "num_tokens", T, dtype="<i8")
        a.create("dataset", "ptb", dtype=str_t)
        a.create("split", "test", dtype=str_t)
        a.create("seed", 141, dtype="<i8")
        a.create("ppl", float(np.exp(-log_probs[np.arange(T), targets].mean())), dtype="<f8")
        a.create("compute_dtype", "float32", dtype=str_t)
        a.create("config", 'head = "softmax"\n', dtype=str_t)


def h5_seeds():
    d = fresh("fuzz_logprob_file")
    contract_file(d / "contract_v2.h5")
    contract_file(d / "contract_v2_chunked_novocab.h5", chunked=True, vocab=False)
    contract_file(d / "contract_v1.h5", version=1)
    with h5py.File(d / "plain_f8.h5", "w", libver="earliest") as f:
        f.create_dataset("log_probs", data=np.zeros((3, 2)))


def toml_seeds():
    d = fresh("fuzz_config_toml")
    configs = ROOT.parent / "trainers" / "configs"
    for name in ["ptb_smoke.toml", "ptb_paper_mos.toml"]:
        shutil.copy(configs / name, d / name)
    (d / "types.toml").write_text('lr = 30\nclip = -0.0\nwdecay = 1.2e-06\nhead = "a\\u0001\\"b"\n'
                                  "dump_test = false\nseed = -9223372036854775808\n")


if __name__ == "__main__":
    npy_seeds()
    idx_seeds()
    h5_seeds()
    toml_seeds()
    for p in sorted(SEEDS.rglob("*")):
        if p.is_file():
            print(f"{p.stat().st_size:8d}  {p.relative_to(ROOT.parent)}")
