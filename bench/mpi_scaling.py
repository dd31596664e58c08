#!/usr/bin/python3
"""rank_analysis --mpi: 1 against 2 processes on a PTB-size synthetic softmax matrix (T = 82430,
M = 10000, d = 400, bias; 3.3 GB of float32), for the gram method (rank-only) and the sketch, and
a model for N nodes built from the rates measured here. Markdown on stdout, progress on stderr.

On a 2-core machine the two processes share the same cores (1 BLAS thread each against 2 threads
for one process): the comparison shows that the split and the reduction cost little and change
nothing in the result, not a speed-up.

Model (one node = this machine's measured rates; the network's bandwidth is an assumption,
stated): the gram method on N nodes takes T M^2 / (N R_syrk) for the partial Gram matrices, then a
binomial-tree MPI_Reduce of the 8 M^2-byte Gram, ceil(log2 N) 8 M^2 / B, then the solve on node 0
(measured); the sketch takes, per pass, 2 T M (2k + 40) / (N R_gemm) and a ring MPI_Allreduce of
Y (8 M k bytes), 2 (N - 1) / N 8 M k / B.

  bench/mpi_scaling.py BUILD_DIR WORK_DIR"""
import json
import math
import os
import shutil
import subprocess
import sys
import time

from sketch_model import sketch_flops

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipeline"))
from pipeline_errors import refuse  # noqa: E402

build, work = sys.argv[1], sys.argv[2]
cli = os.path.join(build, "analysis", "rank_analysis")
synth = os.path.join(build, "trainers", "synthetic_logprobs")
os.makedirs(work, exist_ok=True)
T, M, D = 82430, 10000, 400
B_NET = 12.5e9  # bytes/s: 100 Gb/s (InfiniBand EDR), an assumption, not measured here


def log(text):
    print("mpi_scaling: " + text, file=sys.stderr, flush=True)


def run(cmd):
    log(" ".join(cmd))
    start = time.perf_counter()
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    return time.perf_counter() - start, json.loads(out.strip().splitlines()[-1])


mpirun = shutil.which("mpirun")
if not mpirun:
    refuse("mpi_scaling.py: mpirun not found (make deps installs openmpi-bin)")
launch = [mpirun, "-q", "-n", "2", "--oversubscribe"] + (
    ["--allow-run-as-root"] if os.geteuid() == 0 else [])
path = os.path.join(work, f"synthetic_softmax_{T}x{M}_d{D}.h5")
if not os.path.exists(path):
    subprocess.run([synth, "--head", "softmax", "--T", str(T), "--M", str(M), "--d", str(D),
                    "--seed", "0", "--out", path], check=True, stdout=subprocess.DEVNULL)

results = {}
for method in (["--method", "gram", "--rank-only"], ["--method", "sketch"]):
    name = method[1]
    results[name, 1] = run([cli, "--quiet", "--json", "--threads", "2"] + method + [path])
    results[name, 2] = run(launch + [cli, "--mpi", "--quiet", "--json", "--threads", "1"] +
                           method + [path])

print(f"### 1 and 2 processes on one 2-core machine: T = {T}, M = {M}, d = {D}, bias "
      f"(bound {D + 2}), float32\n")
print("| method | processes x BLAS threads | wall s | partial sums s | reduction s | solve s | "
      "rank | certificate | sigma_max |")
print("|---|---|---|---|---|---|---|---|---|")
for (name, n), (wall, j) in results.items():
    cert = "certified" if j.get("certified") else f"{j.get('rank_min')}..{j.get('rank_max')}"
    print(f"| {name} | {n} x {2 // n} | {wall:.1f} | {j['seconds_accumulate']:.1f} | "
          f"{j['seconds_reduce']:.2f} | {j['seconds_solve']:.1f} | {j['rank']} | {cert} | "
          f"{j['sigma_max']:.15g} |")
print()
g1, g2 = results["gram", 1][1], results["gram", 2][1]
s1, s2 = results["sketch", 1][1], results["sketch", 2][1]
for a, b, name in ((g1, g2, "gram"), (s1, s2, "sketch")):
    print(f"- {name}: ranks {a['rank']} / {b['rank']}, sigma_max relative difference "
          f"{abs(a['sigma_max'] - b['sigma_max']) / a['sigma_max']:.1e} (summation order only)")

r_syrk = T * M * M / g1["seconds_accumulate"]  # flops/s of one node (2 cores)
b_local = 8 * M * M / max(g2["seconds_reduce"], 1e-9)
k = s1["sketch_k"]
passes = s1["sketch_passes"]
r_gemm = sketch_flops(s1)[0] / s1["seconds_accumulate"]  # bench/sketch_model.py
print(f"- measured here: dsyrk {r_syrk / 1e9:.0f} GFLOP/s (T M^2 flops over the 1-process partial "
      f"sums), the sketch's products {r_gemm / 1e9:.0f} GFLOP/s, MPI_Reduce of the 8 M^2 = "
      f"{8 * M * M / 1e9:.2f} GB Gram between 2 processes on this machine {b_local / 1e9:.1f} "
      f"GB/s (shared memory); the model takes B = {B_NET / 1e9:.1f} GB/s between nodes "
      "(100 Gb/s, assumed)\n")


def gram_time(n, t, m, solve):
    return t * m * m / (n * r_syrk) + math.ceil(math.log2(n)) * 8 * m * m / B_NET + solve


def sketch_time(n, t, m, k, passes):
    """The measured run's passes (start, full, checks) at T = t, M = m and k."""
    flops = sketch_flops({**s1, "T": t, "M": m, "sketch_k": k})[0]
    return flops / (n * r_gemm) + passes * 2 * (n - 1) / n * 8 * m * k / B_NET


nodes = [1, 2, 4, 8, 16, 32, 64]
wt2 = (245570, 33278)
print(f"### Model: N nodes like this one (2 cores, {r_syrk / 1e9:.0f} GFLOP/s dsyrk)\n")
print("| N | WT2 size, gram rank-only (8.9 GB Gram per node) | WT2 size, sketch (k = 412, "
      f"{passes} passes) | M = 128256, T = 100000, d = 512: sketch (k = 523, {passes} passes; "
      "the Gram, 131 GB, fits no node) |")
print("|---|---|---|---|")
for n in nodes:
    print(f"| {n} | {gram_time(n, *wt2, g1['seconds_solve']):,.0f} s | "
          f"{sketch_time(n, *wt2, 412, passes):,.0f} s | "
          f"{sketch_time(n, 100000, 128256, 523, passes):,.0f} s |")
print()
print(f"- Gram: the reduction, {math.ceil(math.log2(64)) * 8 * wt2[1] ** 2 / B_NET:.0f} s at 64 "
      "nodes, stays below the partial sums until the rows per node are few; the solve "
      f"({g1['seconds_solve']:.0f} s measured at M = {M}; the inertia count on node 0) does not "
      "split. Measured at WT2 size on one node: 2258 s (results/bench/rank_wt2_rank_only.md).")
print("- Sketch: each pass moves 8 M k bytes per node (0.5 GB at M = 128256, k = 523) against "
      "4 T M k / N flops, so it scales as long as T / N rows keep the products busy.")
