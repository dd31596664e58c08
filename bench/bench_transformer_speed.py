#!/usr/bin/python3
"""Training tokens/s of train_transformer against the same model in PyTorch (Debian's torch,
bench/transformer_reference.py: the model the parity test holds equal to ours), at equal threads,
measured in one run: rounds alternate which side goes first; the ratio is the median over rounds.
Both sides train the profile's model (trainers/configs/transformer_ptb_cpu.toml: 2 blocks, 4
heads, context 64, batch 32, M = 10000) at each d, with AdamW and clipping, dropout 0.1. Ours:
the tok/s of the progress line after a warm-up interval (the first WARMUP batches are not timed);
the reference: wall time of BATCHES steps after WARMUP on random tokens. Prints Markdown, with a
FLOP model beside the times: per token 6 x (the blocks' parameters + d M for the tied decoder)
multiply-adds x 2 (forward and backward), attention's T-dependent part left out.

  bench/bench_transformer_speed.py BUILD_DIR [ROUNDS=3] [THREADS=2]

The reference runs in a process of its own with LD_LIBRARY_PATH at the OpenMP OpenBLAS
(/usr/lib/x86_64-linux-gnu/openblas-openmp), the BLAS our binaries load (cmake/Dependencies.cmake):
with Debian's default pthread OpenBLAS beside LibTorch's OpenMP pool the two oversubscribe the
cores, which measured 20x slower here and would be a comparison of BLAS builds, not of trainers.
It also keeps glibc's freed memory as our trainers do (mallopt M_MMAP_MAX = 0, M_TRIM_THRESHOLD =
INT_MAX; trainers/runkit/process_setup.h): Debian's LibTorch has no caching CPU allocator, so
without it every (B T, M) logits buffer is unmapped at free and faulted back in at the next step.
Measured at d = 32: 2028 tok/s without, 13730 with (6.8x); log_softmax of a 2048 x 10000 float32
tensor 209 ms without, 16 ms with. --no-keep-heap measures the reference with glibc's default.
"""
import ctypes
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipeline"))
from pipeline_errors import EXIT_OK, refuse  # noqa: E402

OMP_BLAS = "/usr/lib/x86_64-linux-gnu/openblas-openmp"
KEEP_HEAP = "--no-keep-heap" not in sys.argv
sys.argv = [a for a in sys.argv if a != "--no-keep-heap"]
if len(sys.argv) > 1 and sys.argv[1] == "--reference":  # the child: one reference timing
    sys.argv = [sys.argv[0], "build", "1", sys.argv[3]] + sys.argv[2:3]
    if KEEP_HEAP:  # as sb::runkit::keep_freed_memory, which our trainers apply
        libc = ctypes.CDLL("libc.so.6")
        if libc.mallopt(-4, 0) != 1 or libc.mallopt(-1, 2**31 - 1) != 1:
            refuse("bench_transformer_speed: mallopt refused")
build = sys.argv[1] if len(sys.argv) > 1 else "build"
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
threads = int(sys.argv[3]) if len(sys.argv) > 3 else 2
here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
binary = os.path.join(build, "trainers", "train_transformer")
config = os.path.join(root, "trainers", "configs", "transformer_ptb_cpu.toml")
M, LAYERS, HEADS, CONTEXT, BATCH = 10000, 2, 4, 64, 32
WARMUP, BATCHES = 10, 30
if not os.access(binary, os.X_OK):
    refuse(f"bench_transformer_speed: {binary} not built (make build)")
sys.path.insert(0, here)
import torch  # noqa: E402
import transformer_reference as ref  # noqa: E402


def ours(d):
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [binary, "--config", config, "--d_model", str(d), "--threads", str(threads),
               "--epochs", "1", "--max_batches", str(WARMUP + BATCHES), "--log_interval",
               str(WARMUP), "--valid_tokens", "640", "--test_tokens", "640", "--dump_rows", "64",
               "--out", os.path.join(tmp, "run")]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rates = [float(x) for x in re.findall(r"tok/s\s+([0-9.]+)", out)]
    # Intervals after the first (warm-up): their mean tokens/s, weighted equally (equal batches).
    timed = rates[1:]
    return len(timed) * 1.0 / sum(1.0 / r for r in timed)


def reference(d):
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model = ref.TransformerLm(M, d, LAYERS, HEADS, CONTEXT, dropout=0.1)
    opt = ref.make_optimizer(model, 1e-3, 0.1)
    model.train()
    ids = torch.randint(0, M, (WARMUP + BATCHES, BATCH, CONTEXT + 1))
    for s in range(WARMUP + BATCHES):
        if s == WARMUP:
            start = time.perf_counter()
        ref.train_step(model, opt, ids[s][:, :-1], ids[s][:, 1:], 1.0, 1e-3)
    return BATCHES * BATCH * CONTEXT / (time.perf_counter() - start)


def reference_in_child(d):
    """reference(d) in a child process with the OpenMP OpenBLAS (the module docstring)."""
    env = dict(os.environ, LD_LIBRARY_PATH=OMP_BLAS + (":" + os.environ["LD_LIBRARY_PATH"]
                                                       if os.environ.get("LD_LIBRARY_PATH") else ""))
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--reference", str(d),
                          str(threads)] + ([] if KEEP_HEAP else ["--no-keep-heap"]),
                         check=True, capture_output=True, text=True, env=env)
    return float(out.stdout.strip().splitlines()[-1])


def flops_per_token(d):
    blocks = LAYERS * (12 * d * d)  # qkv 3d^2, out d^2, MLP 8 d^2
    return 6 * (blocks + d * M)


if len(sys.argv) > 4:  # the child (see the top): print the reference's tokens/s and stop
    print(reference(int(sys.argv[4])))
    sys.exit(EXIT_OK)
if not os.path.exists(os.path.join(OMP_BLAS, "libblas.so.3")):
    refuse(f"bench_transformer_speed: {OMP_BLAS} missing (libopenblas0-openmp)")
print(f"| d | ours tok/s | PyTorch tok/s | ratio (ours / PyTorch, median of {rounds}) | "
      "FLOP model (GFLOP/s ours) |")
print("|---|---|---|---|---|")
for d in (32, 64, 128):
    a, b = [], []
    for r in range(rounds):
        if r % 2 == 0:
            a.append(ours(d))
            b.append(reference_in_child(d))
        else:
            b.append(reference_in_child(d))
            a.append(ours(d))
        print(f"bench_transformer_speed: d = {d} round {r + 1}: ours {a[-1]:.0f}, PyTorch "
              f"{b[-1]:.0f} tok/s", file=sys.stderr, flush=True)
    ratio = statistics.median(x / y for x, y in zip(a, b))
    print(f"| {d} | {statistics.median(a):.0f} | {statistics.median(b):.0f} | {ratio:.2f}x | "
          f"{flops_per_token(d) / 1e6:.1f} MFLOP/token ({statistics.median(a) * flops_per_token(d) / 1e9:.1f}) |")
