#!/usr/bin/python3
"""Training and evaluation tokens/s of the adaptive heads against the full softmax / sigsoftmax
at WikiText-2's vocabulary (M = 33278), measured in one run: bench_wordlm (the benchmark model of
bench/wordlm_bench_model.h: 2 x 200 AWD-LSTM, d = 200, batch 20, BPTT 35) on a synthetic corpus
with Zipf frequencies (--zipf-vocab: PTB has 10000 words, and only WikiText-2's valid/test splits
are at hand), cutoffs 2000,10000. Rounds alternate the order; ratios are medians over rounds.
Prints Markdown (progress on stderr), with a FLOP model of the output layer beside the times.

  bench/bench_adaptive_speed.py BUILD_DIR [ROUNDS=3]
"""
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipeline"))
from pipeline_errors import refuse  # noqa: E402

build = sys.argv[1] if len(sys.argv) > 1 else "build"
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
binary = os.path.join(build, "bench", "bench_wordlm")
M, D, CUTOFFS = 33278, 200, (2000, 10000)
BATCHES, WARMUP = 40, 5
PAIRS = (("softmax", "adaptive"), ("sigsoftmax", "adaptive_sigsoftmax"))
if not os.access(binary, os.X_OK):
    refuse(f"bench_adaptive_speed: {binary} not built (cmake --build {build} --target "
             "bench_wordlm)")


def run(head):
    cmd = [binary, "--head", head, "--mode", "both", "--zipf-vocab", str(M), "--batches",
           str(BATCHES), "--warmup", str(WARMUP), "--threads", "2",
           "--cutoffs", ",".join(map(str, CUTOFFS))]
    print("bench_adaptive_speed: " + " ".join(cmd), file=sys.stderr, flush=True)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return {j["mode"]: j for j in map(json.loads, out.strip().splitlines())}


def zipf_fractions():
    """The share of tokens in the head cluster and in each tail (Zipf, p(k) ~ 1/(k+1))."""
    h = [0.0]
    for k in range(1, M + 1):
        h.append(h[-1] + 1.0 / k)
    edges = (0,) + CUTOFFS + (M,)
    return [(h[b] - h[a]) / h[M] for a, b in zip(edges, edges[1:])]


def head_flops_per_token():
    """Multiply-adds x 2 of the output layer's forward per token: the full head (M x d), and the
    adaptive head (c_1 + n rows of d for every token; tail i's projection d x d_i and its
    |V_i| x d_i output only for the share of tokens in tail i, in training)."""
    full = 2 * M * D
    shares = zipf_fractions()
    n = len(CUTOFFS)
    adaptive = 2 * (CUTOFFS[0] + n) * D
    edges = CUTOFFS + (M,)
    for i in range(n):
        di = max(1, D // 4 ** (i + 1))
        adaptive += shares[i + 1] * 2 * (D * di + (edges[i + 1] - edges[i]) * di)
    return full, adaptive, shares


results = {h: [] for pair in PAIRS for h in pair}
for r in range(rounds):
    order = [h for pair in PAIRS for h in pair]
    if r % 2:
        order.reverse()
    for head in order:
        results[head].append(run(head))

full, adaptive, shares = head_flops_per_token()
print(f"Synthetic Zipf corpus, M = {M}, cutoffs {','.join(map(str, CUTOFFS))}: "
      f"{shares[0]:.1%} of tokens in the head cluster, "
      + ", ".join(f"{s:.1%} in tail {i + 1}" for i, s in enumerate(shares[1:]))
      + f"; {rounds} rounds of {BATCHES} timed batches per mode, order alternating.\n")
print("| heads | mode | tokens/s (full) | tokens/s (adaptive) | adaptive / full (median) | "
      "each round |")
print("|---|---|---|---|---|---|")
for a, b in PAIRS:
    for mode in ("train", "eval"):
        ta = [x[mode]["tokens_per_s"] for x in results[a]]
        tb = [x[mode]["tokens_per_s"] for x in results[b]]
        ratios = [y / x for x, y in zip(ta, tb)]
        print(f"| {a} vs {b} | {mode} | {statistics.median(ta):,.0f} | "
              f"{statistics.median(tb):,.0f} | **{statistics.median(ratios):.2f}x** | "
              + ", ".join(f"{x:.2f}" for x in ratios) + " |")
print()
print(f"FLOP model of the output layer's forward per token (training: only the target's tail; "
      f"the backward about twice that): full {full / 1e6:.1f} MFLOP, adaptive "
      f"{adaptive / 1e6:.2f} MFLOP ({full / adaptive:.0f}x fewer). The LSTM's forward is "
      f"{2 * 4 * (D + 200) * 200 * 2 / 1e6:.1f} MFLOP per token (two layers of 200 units), so "
      "the adaptive heads leave the recurrent layers as the larger part. Evaluation here is the "
      "loss (the target's cluster only, as in training); the dump assembles every word's "
      "log-probability (all tails for every token) and gains less.")
