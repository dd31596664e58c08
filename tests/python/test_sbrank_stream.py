#!/usr/bin/python3
"""sbrank.analyse over a stream of row blocks that is never stored (analysis/stream_source.h):
the same rank, certificate and verdict as the same matrix analysed from a file, on log-probs and
logits, by the gram path and the sketch, with blocks of uneven sizes and with or without T; the
peak memory of a 160 MB stream far below its size; every bad block refused in one ValueError line
naming the pass and the block; half-precision tensors read block by block with their own eps;
progress lines.

  test_sbrank_stream.py BUILD_DIR"""
import os
import sys
import tempfile

build = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(build, "python"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "fixtures"))
import numpy as np  # noqa: E402
import torch  # noqa: E402

import sbrank  # noqa: E402
from checks import check, finish, peak_rss_growth  # noqa: E402

SIZES = [1, 333, 1000, 17]  # uneven blocks, repeated until the rows run out


def blocks_of(matrix, sizes=SIZES, calls=None):
    def start():
        if calls is not None:
            calls.append(1)
        i, k = 0, 0
        while i < matrix.shape[0]:
            n = sizes[k % len(sizes)]
            yield matrix[i:i + n]
            i, k = i + n, k + 1
    return start


def logits_and_logprobs(rng, t, m, d):
    z = rng.standard_normal((t, d)) @ rng.standard_normal((d, m)) + rng.standard_normal(m)
    lp = z - z.max(1, keepdims=True)
    lp = lp - np.log(np.exp(lp).sum(1, keepdims=True))
    return z.astype(np.float32), lp.astype(np.float32)


rng = np.random.default_rng(3)
facts = dict(head="softmax", d=10, bias=1)
fields = ("rank", "certified", "rank_min", "rank_max", "verdict", "bound", "input", "T", "M")
z, lp = logits_and_logprobs(rng, 4000, 600, 10)
# A prescribed spectrum: U diag(s) V^T with 30 singular values from 1 down to 1e-3, then none.
u, _ = np.linalg.qr(rng.standard_normal((4000, 30)))
v, _ = np.linalg.qr(rng.standard_normal((600, 30)))
prescribed = ((u * np.geomspace(1, 1e-3, 30)) @ v.T).astype(np.float32)
tmp_keep = tempfile.mkdtemp()
with tempfile.TemporaryDirectory() as tmp:
    np.save(os.path.join(tmp_keep, "log-probs.npy"), lp)
    for name, matrix, input_ in (("log-probs", lp, "auto"), ("logits", z, "logits"),
                                 ("prescribed spectrum", prescribed, "logits")):
        path = os.path.join(tmp, name + ".npy")
        np.save(path, matrix)
        for method in ("gram", "sketch"):
            ref = sbrank.analyse(path, method=method, input=input_, threads=1, **facts)
            for known_t in (None, matrix.shape[0]):
                calls = []
                r = sbrank.analyse(blocks_of(matrix, calls=calls), M=matrix.shape[1], T=known_t,
                                   method=method, input=input_, threads=1, **facts)
                same = all(r[k] == ref[k] for k in fields)
                close = abs(r["sigma_max"] - ref["sigma_max"]) <= 1e-12 * ref["sigma_max"]
                check(same and close and r["passes"] == len(calls),
                      f"{name}, {method}, T {'given' if known_t else 'counted'}: the file's "
                      f"rank {ref['rank']} ({r['rank']}), certificate, verdict {r['verdict']}; "
                      f"{r['passes']} passes = {len(calls)} calls")

# Memory: streams of 20000 and 80000 rows x 1000 (80 and 320 MB of float32) generated block by
# block, never whole. The peak RSS (reset first: /proc/self/clear_refs) rises by the analysis's
# own buffers (the gram path's M x M, its float64 blocks, the generator's block), the same for
# both lengths: O(M^2 + block), not O(T M).
M = 1000
w = np.random.default_rng(5).standard_normal((12, M))


def generated(t):
    def start():
        g = np.random.default_rng(6)
        for _ in range(t // 2000):
            zz = g.standard_normal((2000, 12)) @ w
            yield (zz - zz.max(1, keepdims=True)).astype(np.float32)
    return start


def peak_growth(t):  # the row max subtracted: one more direction, as a bias
    return peak_rss_growth(lambda: sbrank.analyse(generated(t), M=M, T=t, method="gram",
                                                  input="logits", head="softmax", d=12, bias=1))


(r1, g1), (r2, g2) = peak_growth(20000), peak_growth(80000)
check(r1["rank"] == r2["rank"] == 13 and g2 - g1 < 0.1 * 60000 * M * 4 and g2 < 80000 * M * 4 / 2,
      f"peak RSS growth {g1 / 1e6:.0f} MB for 80 MB of rows, {g2 / 1e6:.0f} MB for 320 MB: "
      f"independent of T (rank {r2['rank']})")

# Bad blocks: one line naming the pass and the block.
good = lp[:50]


def gen(*blocks):
    return lambda: iter(blocks)


shrinking = {"n": 0}


def fewer_rows_second_time():
    shrinking["n"] += 1
    yield lp[:300] if shrinking["n"] == 1 else lp[:200]


bad_nan = good.copy()
bad_nan[3, 7] = np.nan
cases = [
    (gen(good, lp[:10, :599]), dict(), "block 1: width: expected M = 600 columns, got 599"),
    (gen(good, lp[:10].astype(np.float64)), dict(), "block 1: dtype: expected float32"),
    (gen(good, bad_nan), dict(), "block 1: row 3, column 7: not finite"),
    (gen(good, "text"), dict(), "block 1: expected a numpy array or a torch tensor, got str"),
    (fewer_rows_second_time, dict(), "pass 2 yields 200 rows, the first 300"),
    (gen(good), dict(T=60), "yields 50 rows, the first 60"),
    (gen(good), dict(method="exact"), "method=exact: a stream is never stored whole"),
]
for blocks, extra, want in cases:
    try:
        sbrank.analyse(blocks, M=600, **{**facts, "method": "gram", **extra})
        check(False, f"refused: {want}")
    except ValueError as e:
        check(want in str(e) and "\n" not in str(e), f"one line: {e}")
try:
    sbrank.analyse(gen(good), **facts)
    check(False, "a stream without M is refused")
except ValueError as e:
    check("M: expected the vocabulary size" in str(e), f"no M: {e}")

# Half precision: read block by block, converted to float32 on the host, eps of the stored
# precision; the same result as the whole float32 copy analysed with that eps.
for dtype in (torch.float16, torch.bfloat16):
    t = torch.from_numpy(lp).to(dtype)
    r = sbrank.analyse(t, method="gram", **facts)
    eps = repr(torch.finfo(dtype).eps)
    ref = sbrank.analyse(t.float().numpy(), method="gram", eps=eps, **facts)
    check(r["rank"] == ref["rank"] and r["tol"] == ref["tol"] and
          r["eps"] == torch.finfo(dtype).eps and r["passes"] >= 1,
          f"{dtype}: block by block, eps {r['eps']:.3g}: rank {r['rank']} as the float32 copy's")

# The caller's own exception (a model's CUDA out-of-memory is a RuntimeError) comes back as
# itself, with its traceback and the pass and block as a note; not as sbrank.FormatError.
class ModelFailed(RuntimeError):
    pass


def failing(at):
    def start():
        for i in range(10):
            if i == at:
                raise ModelFailed("CUDA out of memory (simulated)")
            yield lp[i * 100:(i + 1) * 100]
    return start


for at in (0, 3):
    try:
        sbrank.analyse(failing(at), M=600, method="gram", **facts)
        check(False, "a stream raising its own error is refused")
    except ModelFailed as e:
        notes = getattr(e, "__notes__", [])
        check(type(e) is ModelFailed and not isinstance(e, sbrank.FormatError) and
              any(f"block {at}" in n for n in notes) and e.__traceback__ is not None,
              f"the stream's ModelFailed at block {at} reaches the caller as itself ({notes})")


def callable_fails():
    raise ModelFailed("no model")


try:
    sbrank.analyse(callable_fails, M=600, method="gram", **facts)
except ModelFailed as e:
    check(any("pass 1" in n for n in getattr(e, "__notes__", [])),
          f"a callable that raises: its own error, pass 1 noted ({e.__notes__})")


def interrupted():
    yield lp[:100]
    raise KeyboardInterrupt


try:
    sbrank.analyse(interrupted, M=600, method="gram", **facts)
    check(False, "Ctrl-C inside the stream stops analyse")
except KeyboardInterrupt:
    check(True, "Ctrl-C inside the stream reaches the caller as KeyboardInterrupt")
# A bad block is still sbrank's own refusal (not the caller's error).
try:
    sbrank.analyse(lambda: iter([lp[:100], lp[:50, :599]]), M=600, method="gram", **facts)
except sbrank.InputError as e:
    check("block 1" in str(e), f"a bad block: sbrank.InputError naming it ({e})")

# A full-rank sigsoftmax matrix (T = 4000, M = 2000, d = 64, bias: rank 2000 in float32) held in
# float16 or bfloat16: NR's tol at their eps swallows all but the rows' mean direction, so the
# count is 1 "within" the bound 66; the verdict must say the precision cannot decide it, and the
# rows (normalised to the dtype's rounding) are still read as log-probabilities.
rng16 = np.random.default_rng(3)
z16 = rng16.standard_normal((4000, 64)) @ (rng16.standard_normal((64, 2000)) / 8) + \
    rng16.standard_normal(2000) / 2
lf16 = z16 - np.logaddexp(0, -z16)  # log(exp(z) sigmoid(z))
sig16 = (lf16 - np.logaddexp.reduce(lf16, axis=1, keepdims=True)).astype(np.float32)
facts16 = {"head": "sigsoftmax", "d": 64, "bias": 1}
full = sbrank.analyse(sig16, method="gram", **facts16)
check(full["rank"] == 2000 and full["verdict"] == "exceeds_bound",
      f"float32 sigsoftmax: rank {full['rank']}, {full['verdict']}")
for dtype in (torch.float16, torch.bfloat16):
    r = sbrank.analyse(torch.from_numpy(sig16).to(dtype), method="gram", **facts16)
    check(r["verdict"] == "unresolved_at_precision" and r["rank"] < 66 and
          r["precision_limited"] and r["eps_to_resolve"] <= torch.finfo(torch.float32).eps and
          r["input"] == "logprobs" and r["input_from"] == "detected",
          f"{dtype}: rank {r['rank']} below the bound is {r['verdict']} (never within_bound), "
          f"read as {r['input']} ({r['input_from']})")

# estimate_d: the model's d read off the stream's spectrum, as off the file's.
est_file = sbrank.analyse(os.path.join(tmp_keep, "log-probs.npy"), method="gram", estimate_d=True,
                          **facts)["estimate_d"]
est_stream = sbrank.analyse(blocks_of(lp), M=600, method="gram", estimate_d=True,
                            **facts)["estimate_d"]
check(est_stream["d"] == est_file["d"] == 10 and est_stream["gap"] == est_file["gap"],
      f"estimate_d: d = {est_stream['d']} from the stream, {est_file['d']} from the file")

lines = []
sbrank.analyse(blocks_of(lp), M=600, method="gram", progress=lines.append, **facts)
check(any("rows" in line for line in lines), f"progress lines reach the callback ({lines[:1]})")
import shutil  # noqa: E402
shutil.rmtree(tmp_keep)
sys.exit(finish())
