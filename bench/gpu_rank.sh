#!/usr/bin/env bash
# Rank analysis on a GPU (rank_analysis_torch --device cuda: A^T A accumulated in float64 on the
# device, then its eigenvalues there, or the certified inertia count on the host with --rank-only)
# against rank_analysis on the host's cores (the LAPACK Gram path), same file, one run each:
#   bench/gpu_rank.sh [BUILD_DIR] [WORK_DIR]      (BUILD_DIR: a CUDA LibTorch build; docs/clusters-and-gpus.md, "CUDA builds")
# Shapes (synthetic softmax log-outputs, synthetic_logprobs --head softmax, float32, with bias):
#   ptb:  T = 82430, M = 10000, d = 400   (PTB's test set, 3.3 GB)
#   wt2v: T = 40000, M = 33278, d = 400   (WikiText-2's vocabulary, 5.3 GB; G is 8.9 GB of float64)
# SB_GPU_RANK_SHAPES picks some ("ptb wt2v" by default); SB_GPU_RANK_CPU says which shapes also run
# on the host: 1 (all, the default), 0 (none) or a list ("ptb": the wt2v host run takes over 5 min).
# Prints markdown: wall s, the analysis' own split, rank and certificate, and the FLOP model
# (M^2 T multiply-adds of the Gram at the float64 matrix-product rate measured on the device).
set -euo pipefail
. "$(dirname "$0")/bench_lib.sh"
build=${1:-build}
work=${2:-${TMPDIR:-/tmp}/sb_gpu_rank}
shapes=${SB_GPU_RANK_SHAPES:-ptb wt2v}
run_cpu=${SB_GPU_RANK_CPU:-1}
gpu_bin="$build/analysis/torch/rank_analysis_torch"
cpu_bin="$build/analysis/rank_analysis"
synth="$build/trainers/synthetic_logprobs"
root=$(cd "$(dirname "$0")/.." && pwd)
py=${SB_PYTHON:-python3}
need "a CUDA LibTorch build: docs/clusters-and-gpus.md, \"CUDA builds\"" "$gpu_bin" "$cpu_bin" "$synth"
mkdir -p "$work"

gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -n 1 || echo "no nvidia-smi")
# The float64 matrix-product rate of the device (torch.matmul, 8192^3), for the FLOP model.
rate=$("$py" -c '
import torch, time
a = torch.rand(8192, 8192, dtype=torch.float64, device="cuda"); b = a.clone()
a @ b; torch.cuda.synchronize()
t = time.perf_counter()
for _ in range(5): a @ b
torch.cuda.synchronize(); t = time.perf_counter() - t
print(f"{5 * 2 * 8192**3 / t / 1e12:.2f}")')

echo "# Rank analysis on a GPU ($gpu)"
echo
echo "Measured $(date -u +%F) at commit $(/usr/bin/python3 "$root/pipeline/provenance.py" label 2>/dev/null || echo unknown) (BLAS: $("$build/analysis/rank_analysis" --blas 2>/dev/null || echo unknown)) with"
echo "\`bench/gpu_rank.sh $build\`; host: $(nproc) cores. float64 matrix product on the device: $rate TFLOP/s."
echo
echo "| shape | T x M | path | wall s | read s | accumulate s | solve s | rank | bound | certified | Gram model s | wall / model |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for shape in $shapes; do
  case $shape in
    ptb) T=82430 M=10000 ;;
    wt2v) T=40000 M=33278 ;;
    *) echo "gpu_rank.sh: unknown shape '$shape' (ptb, wt2v)" >&2; exit 2 ;;
  esac
  file="$work/softmax_${T}x${M}.h5"
  [ -f "$file" ] || "$synth" --head softmax --T "$T" --M "$M" --d 400 --seed 0 --out "$file" >&2
  runs=("gpu gram|$gpu_bin --device cuda --method gram --spectrum"
        "gpu rank-only|$gpu_bin --device cuda --method gram --rank-only")
  if [ "$run_cpu" = 1 ] || [[ " $run_cpu " == *" $shape "* ]]; then runs+=("host gram ($(nproc) threads)|$cpu_bin --method gram --spectrum"); fi
  for r in "${runs[@]}"; do
    label=${r%%|*}; cmd=${r#*|}
    echo "gpu_rank: $shape $label ..." >&2
    start=$EPOCHREALTIME
    json=$($cmd --json "$file" | tail -n 1)
    wall=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN {print b - a}')
    "$py" - "$json" "$wall" "$shape" "$label" "$rate" <<'PY'
import json, sys
r = json.loads(sys.argv[1]); wall = float(sys.argv[2]); shape, label = sys.argv[3:5]
rate = float(sys.argv[5]) * 1e12
M, T = r["M"], r["T"]
model = M * M * T / rate  # syrk: M^2 T multiply-adds = M^2 T FLOPs for the symmetric half
f = lambda k: f"{r[k]:.2f}" if isinstance(r.get(k), (int, float)) else "-"
cert = r.get("certified")
print(f"| {shape} | {T} x {M} | {label} | {wall:.1f} | {f('seconds_read')} | {f('seconds_accumulate')} | "
      f"{f('seconds_solve')} | {r['rank']} | {r['bound']} | {'-' if cert is None else cert} | "
      f"{model:.2f} | {wall / model:.1f}x |")
PY
  done
done
echo
echo "Gram model: M^2 T FLOPs (the symmetric product A^T A) at the measured float64 rate; the host"
echo "rows' model is the device's, so their ratio shows the device's advantage, not the host's efficiency."
