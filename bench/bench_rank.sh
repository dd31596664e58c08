#!/usr/bin/env bash
# Rank-analysis benchmark (issues 2/4 and 14), ratios measured in one run: a PTB-size synthetic
# softmax log-output matrix (M = 10000, T = 82430, d = 400, with bias; 3.3 GB float32) through
#   rank-only (float64 A^T A by dsyrk in row blocks, the next block read beside dsyrk; then
#              sigma_max by power iteration and the certified inertia count of A^T A - tol^2 I),
#   the same with the read after each dsyrk (--no-overlap), to measure the overlap,
#   gram  (the same A^T A, then every eigenvalue by dsyevd_2stage),
#   exact (LAPACK sgesdd on the whole matrix),
#   numpy.linalg.svd(compute_uv=False) on the same float32 matrix (Debian's numpy),
# with each one's wall time, peak RSS and rank, and both Gram paths against the FLOP model
# (M^2 T syrk FLOPs at the measured dgemm rate; + the eigensolver's time for gram).
#   bench/bench_rank.sh [BUILD_DIR] [WORK_DIR]      (~17 minutes on 2 cores)
# SB_BENCH_GRAM_ONLY=1 runs the Gram paths alone (rank-only, --no-overlap, gram), for a matrix
# larger than RAM (the WikiText-2 test size: SB_BENCH_T=245570 SB_BENCH_M=33278, 32.7 GB of
# float32; ~2.3 hours on 2 cores); SB_BENCH_RANK_ONLY=1 runs rank-only alone (~45 minutes there).
set -euo pipefail
. "$(dirname "$0")/bench_lib.sh"
rank_bench_setup sb_bench_rank "$@"  # build, work, bin, synth, py, here
mkdir -p "$work"
# SB_BENCH_T/M/D shrink the problem for a quick check of the script itself.
bench_settings T=82430 M=10000 D=400 gram_only=0 rank_only=0
[ "$rank_only" = 1 ] && gram_only=1
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

echo "bench_rank: rank-only ..." >&2
only_json=$(measure "$work/only.time" "$bin" --method gram --rank-only --json "$file")
gram_json=null noov_json=null exact_json=null numpy_json=null
for t in noov gram exact numpy; do echo "- -" > "$work/$t.time"; done
if [ "$rank_only" != 1 ]; then
  echo "bench_rank: rank-only, read after dsyrk ..." >&2
  noov_json=$(measure "$work/noov.time" "$bin" --method gram --rank-only --no-overlap --json "$file")
  echo "bench_rank: gram (eigenvalues) ..." >&2
  gram_json=$(measure "$work/gram.time" "$bin" --method gram --spectrum --json "$file")
fi
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

"$py" - "$only_json" "$noov_json" "$gram_json" "$exact_json" "$numpy_json" \
  "$(cat "$work/only.time")" "$(cat "$work/noov.time")" "$(cat "$work/gram.time")" \
  "$(cat "$work/exact.time")" "$(cat "$work/numpy.time")" "$dgemm" <<'PY'
import json, sys
o, v, g, e, n = (json.loads(x) for x in sys.argv[1:6])
times = [x.split() for x in sys.argv[6:11]]
dgemm = float(sys.argv[11])
M, T = o["M"], o["T"]
syrk = M * M * T / (dgemm * 1e9)  # the FLOP limit of both Gram paths' accumulation
print(f"Synthetic softmax log-outputs: M = {M}, T = {T}, d = {o['d']}, bias {o['bias']} "
      f"(bound {o['bound']}), float32 ({4 * M * T / 1e9:.1f} GB), eps = float32")
print()
print("| method | wall s (analysis s) | numpy SVD s / analysis s | peak RSS MiB | rank (NR) | "
      "certificate | tol |")
print("|---|---|---|---|---|---|---|")
rows = [("rank-only (dsyrk + inertia count, float64)", o, times[0]),
        ("rank-only, read after dsyrk (--no-overlap)", v, times[1]),
        ("gram (dsyrk + dsyevd_2stage, float64)", g, times[2]),
        ("exact (sgesdd, float32)", e, times[3]),
        ("numpy.linalg.svd (float32)", n, times[4])]
for name, r, (wall, rss) in rows:
    if r is None:
        continue
    ratio = f"{n['seconds'] / r['seconds']:.2f}x" if n else "-"
    cert = ("certified" if r["certified"] else f"uncertain +-{r['uncertain']}") \
        if r.get("certified") is not None else "-"
    print(f"| {name} | {float(wall):.1f} ({r['seconds']:.1f}) | {ratio} | {float(rss):.0f} | "
          f"{r['rank']} | {cert} | {r['tol']:.3e} |")
print()
print("(analysis s: ours include reading the file, numpy's is the SVD call alone.)")
print(f"rank-only split: read (waited for) {o['seconds_read']:.1f} s, dsyrk "
      f"{o['seconds_accumulate']:.1f} s, sigma_max + inertia count {o['seconds_solve']:.1f} s "
      f"(power iteration {o['seconds_sigma_max']:.2f} s, {o['sigma_max_iterations']} steps, "
      f"lambda_1 bracket {o['sigma_max_rel_error']:.1e} relative; {o['solver']}); "
      f"tol window [{o['tol_lo']:.4e}, {o['tol_hi']:.4e}]")
if v:
    print(f"rank-only without the overlap: read {v['seconds_read']:.1f} s, dsyrk "
          f"{v['seconds_accumulate']:.1f} s, solve {v['seconds_solve']:.1f} s; "
          f"overlap speed-up {v['seconds'] / o['seconds']:.3f}x")
if g:
    print(f"gram split: read {g['seconds_read']:.1f} s, dsyrk {g['seconds_accumulate']:.1f} s, "
          f"{g['solver']} {g['seconds_solve']:.1f} s")
print(f"FLOP model: M^2 T = {M * M * T / 1e12:.2f} TFLOP at the measured dgemm rate {dgemm:.1f} "
      f"GFLOP/s = {syrk:.1f} s; rank-only analysis / model = {o['seconds'] / syrk:.2f}x")
if g:
    model = syrk + g["seconds_solve"]
    print(f"gram analysis / (model + its eigensolver {g['seconds_solve']:.1f} s) = "
          f"{g['seconds'] / model:.2f}x; gram / rank-only = {g['seconds'] / o['seconds']:.2f}x")
if n:
    print(f"rank-only vs numpy float32 SVD: {n['seconds'] / o['seconds']:.2f}x faster; identical "
          f"rank rank-only vs numpy: {o['rank'] == n['rank']}, gram vs numpy: "
          f"{g['rank'] == n['rank'] if g else '-'}, exact vs numpy: {e['rank'] == n['rank']}")
else:
    print(f"exact and numpy not run (SB_BENCH_GRAM_ONLY=1: the matrix is "
          f"{4 * M * T / 2**30:.1f} GiB); rank-only rank {o['rank']} vs the bound {o['bound']}")
PY
