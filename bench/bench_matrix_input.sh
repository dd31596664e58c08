#!/usr/bin/env bash
# Reading cost of each input format, ratios measured in one run: one synthetic softmax
# log-output matrix (default T = 60000, M = 2000, d = 64, bias; 480 MB of float32) written as
#   the contract HDF5 file (synthetic_logprobs), and by numpy as .npy in C order and in Fortran
#   order (np.save of the M x T A-hat's transpose), float32, plus C-order float64,
# each analysed by `rank_analysis --method gram --threads 1` (same blocks, same dsyrk), with the
# read time (read + conversion + NaN scan), the whole analysis, peak RSS and the rank. The file
# is read once before timing each format (page cache warm: this measures the reader, not the
# disk). One BLAS thread: reading is single-threaded anyway, and an OpenMP team on a shared
# machine makes the solver's time swing by 10x between runs, which would drown the comparison.
#   bench/bench_matrix_input.sh [BUILD_DIR] [WORK_DIR]        (~2 minutes on 2 cores)
set -euo pipefail
. "$(dirname "$0")/bench_lib.sh"
rank_bench_setup sb_bench_matrix_input "$@"  # build, work, bin, synth, py, here
T=${SB_BENCH_T:-60000} M=${SB_BENCH_M:-2000} D=${SB_BENCH_D:-64}
mkdir -p "$work"
h5="$work/softmax_${T}x${M}.h5"
[ -f "$h5" ] || "$synth" --head softmax --T "$T" --M "$M" --d "$D" --seed 0 --out "$h5" >&2
"$py" - "$h5" "$work" <<'PY'
import os, sys
import h5py
import numpy as np
h5, work = sys.argv[1:]
with h5py.File(h5, "r") as f:
    a = f["log_probs"][...]
np.save(os.path.join(work, "c_f32.npy"), a)
np.save(os.path.join(work, "f_f32.npy"), np.ascontiguousarray(a.T).T)  # A-hat.T: Fortran order
np.save(os.path.join(work, "c_f64.npy"), a.astype(np.float64))
PY

# run NAME OPTIONS... FILE: rank_analysis --json on FILE with its peak RSS; one JSON line.
run() {
  local name=$1; shift
  cat "${@: -1}" > /dev/null  # warm the page cache
  "$py" - "$name" "$bin" --quiet --json --method gram --threads 1 "$@" <<'PY'
import json, resource, subprocess, sys
out = subprocess.run(sys.argv[2:], check=True, stdout=subprocess.PIPE, text=True).stdout
j = json.loads(out)
j.update(name=sys.argv[1], rss_mib=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
print(json.dumps(j))
PY
}

facts="--head softmax --d $D --bias 1"
rows=()
rows+=("$(run "HDF5 contract, float32" "$h5")")
rows+=("$(run ".npy C order, float32" $facts "$work/c_f32.npy")")
rows+=("$(run ".npy Fortran order, float32" $facts "$work/f_f32.npy")")
rows+=("$(run ".npy C order, float64" $facts --eps float32 "$work/c_f64.npy")")
"$py" - "${rows[@]}" <<'PY'
import json, sys
rows = [json.loads(x) for x in sys.argv[1:]]
h = rows[0]
print(f"Synthetic softmax log-outputs, T = {h['T']}, M = {h['M']}, d = {h['d']}, bias: "
      f"rank_analysis --method gram, page cache warm.\n")
print("| input | read s | read / HDF5 read | analysis s | peak RSS MiB | rank (NR) | sigma_max |")
print("|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['name']} | {r['seconds_read']:.2f} | {r['seconds_read'] / h['seconds_read']:.2f}x | "
          f"{r['seconds']:.2f} | {r['rss_mib']:.0f} | {r['rank']} | {r['sigma_max']:.6e} |")
print(f"\n(file sizes: {4 * h['T'] * h['M'] / 2**20:.0f} MiB float32, "
      f"{8 * h['T'] * h['M'] / 2**20:.0f} MiB float64; BLAS threads {h['blas_threads']})")
PY
