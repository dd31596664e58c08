#!/usr/bin/env bash
# Rank-analysis benchmark (issue 2/4), ratios measured in one run: a PTB-size synthetic softmax
# log-output matrix (M = 10000, T = 82430, d = 400, with bias; 3.3 GB float32) through
#   gram  (float64 A^T A by dsyrk in row blocks + dsyevd),
#   exact (LAPACK sgesdd on the whole matrix),
#   numpy.linalg.svd(compute_uv=False) on the same float32 matrix (Debian's numpy),
# with each one's wall time, peak RSS and rank, and the gram path against its FLOP model
# (M^2 T syrk FLOPs / measured dgemm rate + measured eigensolver time).
#   bench/bench_rank.sh [BUILD_DIR] [WORK_DIR]      (~15 minutes on 2 cores)
# SB_BENCH_GRAM_ONLY=1 runs the gram path alone, for a matrix larger than RAM (the WikiText-2 test
# size: SB_BENCH_T=245570 SB_BENCH_M=33278, 32.7 GB of float32; ~75 minutes on 2 cores).
set -euo pipefail
build=${1:-build}
work=${2:-${TMPDIR:-/tmp}/sb_bench_rank}
bin="$build/analysis/rank_analysis"
synth="$build/trainers/synthetic_logprobs"
py=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)
for b in "$bin" "$synth"; do
  [ -x "$b" ] || { echo "bench_rank.sh: $b not built (run make build)" >&2; exit 1; }
done
mkdir -p "$work"
# SB_BENCH_T/M/D shrink the problem for a quick check of the script itself.
T=${SB_BENCH_T:-82430}
M=${SB_BENCH_M:-10000}
D=${SB_BENCH_D:-400}
gram_only=${SB_BENCH_GRAM_ONLY:-0}
file="$work/synthetic_softmax_${T}x${M}_d${D}.h5"

# measure TIME_FILE COMMAND...: writes "<wall seconds> <peak RSS MiB>" to TIME_FILE and the last
# line of the command's stdout to stdout; the command's stderr (progress lines) passes through.
measure() {
  "$py" - "$@" <<'PY'
import resource, subprocess, sys, time
start = time.perf_counter()
out = subprocess.run(sys.argv[2:], check=True, stdout=subprocess.PIPE, text=True).stdout
wall = time.perf_counter() - start
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(out.strip().splitlines()[-1])
with open(sys.argv[1], "w") as f:
    print(f"{wall:.2f} {rss:.0f}", file=f)
PY
}

if [ ! -f "$file" ]; then
  echo "bench_rank: writing $file ..." >&2
  "$synth" --head softmax --T "$T" --M "$M" --d "$D" --seed 0 --out "$file" >&2
fi

echo "bench_rank: gram ..." >&2
gram_json=$(measure "$work/gram.time" "$bin" --method gram --json "$file")
exact_json=null numpy_json=null
echo "- -" > "$work/exact.time"
echo "- -" > "$work/numpy.time"
if [ "$gram_only" != 1 ]; then
  echo "bench_rank: exact (sgesdd) ..." >&2
  exact_json=$(measure "$work/exact.time" "$bin" --method exact --precision float32 --json "$file")
  echo "bench_rank: numpy.linalg.svd ..." >&2
  numpy_json=$(measure "$work/numpy.time" "$py" "$here/numpy_svd.py" "$file")
fi
echo "bench_rank: dgemm rate ..." >&2
dgemm=$(LD_PRELOAD=/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3 OMP_NUM_THREADS=2 "$py" -c '
import numpy as np, time
a = np.random.rand(10000, 4096); b = np.random.rand(4096, 10000)
a @ b
t = time.perf_counter(); a @ b; t = time.perf_counter() - t
print(2 * 10000 * 4096 * 10000 / t / 1e9)')

"$py" - "$gram_json" "$exact_json" "$numpy_json" "$(cat "$work/gram.time")" \
  "$(cat "$work/exact.time")" "$(cat "$work/numpy.time")" "$dgemm" <<'PY'
import json, sys
g, e, n = (json.loads(x) for x in sys.argv[1:4])
times = [x.split() for x in sys.argv[4:7]]
dgemm = float(sys.argv[7])
M, T = g["M"], g["T"]
model = M * M * T / (dgemm * 1e9) + g["seconds_solve"]
print(f"Synthetic softmax log-outputs: M = {M}, T = {T}, d = {g['d']}, bias {g['bias']} "
      f"(bound {g['bound']}), float32 ({4 * M * T / 1e9:.1f} GB), eps = float32")
print()
print("| method | wall s (analysis s) | numpy SVD s / analysis s | peak RSS MiB | rank (NR) | tol |")
print("|---|---|---|---|---|---|")
rows = [("gram (dsyrk + dsyevd, float64)", g, times[0]), ("exact (sgesdd, float32)", e, times[1]),
        ("numpy.linalg.svd (float32)", n, times[2])]
for name, r, (wall, rss) in rows:
    if r is None:
        continue
    ratio = f"{n['seconds'] / r['seconds']:.2f}x" if n else "-"
    print(f"| {name} | {float(wall):.1f} ({r['seconds']:.1f}) | {ratio} | {float(rss):.0f} | "
          f"{r['rank']} | {r['tol']:.3e} |")
print()
print("(analysis s: ours include reading the file, numpy's is the SVD call alone.)")
print(f"gram split: read {g['seconds_read']:.1f} s, dsyrk {g['seconds_accumulate']:.1f} s, "
      f"dsyevd {g['seconds_solve']:.1f} s")
print(f"FLOP model: M^2 T = {M * M * T / 1e12:.2f} TFLOP at the measured dgemm rate {dgemm:.1f} "
      f"GFLOP/s + dsyevd = {model:.1f} s; gram analysis / model = {g['seconds'] / model:.2f}x")
if n:
    print(f"identical rank gram vs numpy: {g['rank'] == n['rank']}; "
          f"exact vs numpy: {e['rank'] == n['rank']}")
else:
    print(f"exact and numpy not run (SB_BENCH_GRAM_ONLY=1: the matrix is "
          f"{4 * M * T / 2**30:.1f} GiB); gram rank {g['rank']} vs the bound {g['bound']}")
PY
