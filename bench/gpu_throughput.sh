#!/usr/bin/env bash
# Training throughput of the paper's models (train_wordlm, tokens/s) on a GPU, for the projected
# GPU-hours of `make reproduce PROFILE=paper` (pipeline/profiles/paper.toml, [gpu_throughput]):
#   bench/gpu_throughput.sh [BUILD_DIR] [DEVICE]        (defaults: build, cuda)
# BUILD_DIR must be a build against a CUDA LibTorch (docs/clusters-and-gpus.md, "CUDA builds"). For every head of the
# paper profile, its paper config (trainers/configs/ptb_paper_<head>.toml: softmax, sigsoftmax,
# g:sigmoid, g:relu on the 3 x 1150, d = 400 AWD-LSTM; MoS / MoSS K = 15 on 960/620, d = 280),
# plus MoS K = 15 on the 3 x 1150, d = 400 model for a like-for-like comparison with softmax:
# SB_GPU_BATCHES training batches (default 300) of which the first SB_GPU_WARMUP (default 30)
# are not timed; tokens/s = tokens / seconds over the timed batches (the trainer's per-batch
# progress records, each taken after the loss is copied to the host, so GPU work is finished).
# Prints markdown (the table and the lines to paste into paper.toml's [gpu_throughput]).
# Needs PTB (make data). DEVICE=cpu runs the same on the CPU (to check the script, not to measure).
set -euo pipefail
. "$(dirname "$0")/bench_lib.sh"
build=${1:-build}
device=${2:-cuda}
batches=${SB_GPU_BATCHES:-300}
warmup=${SB_GPU_WARMUP:-30}
bin="$build/trainers/train_wordlm"
root=$(cd "$(dirname "$0")/.." && pwd)
need "make build" "$bin"
[ "$warmup" -lt "$batches" ] || { echo "gpu_throughput.sh: SB_GPU_WARMUP ($warmup) must be < SB_GPU_BATCHES ($batches)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# label | config | head (the paper profile's spelling)
settings=(
  "softmax|ptb_paper_softmax.toml|softmax"
  "sigsoftmax|ptb_paper_sigsoftmax.toml|sigsoftmax"
  "g:sigmoid|ptb_paper_sigmoid.toml|sigmoid"
  "g:relu|ptb_paper_relu.toml|relu"
  "MoS K=15 (960/620, d=280)|ptb_paper_mos.toml|mos:K=15"
  "MoSS K=15 (960/620, d=280)|ptb_paper_moss.toml|moss:K=15"
  "MoS K=15 on 3 x 1150, d=400|ptb_paper_softmax.toml|mos:K=15 1150"
)

gpu="$device"
if [ "$device" != cpu ] && command -v nvidia-smi >/dev/null 2>&1; then
  gpu="$device: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -n 1)"
fi
echo "# Training throughput of the paper's models ($gpu)"
echo
echo "Measured $(date -u +%F) at commit $(/usr/bin/python3 "$root/pipeline/provenance.py" label 2>/dev/null || echo unknown) (BLAS: $("$build/analysis/rank_analysis" --blas 2>/dev/null || echo unknown)) with"
echo "\`bench/gpu_throughput.sh $build $device\` (SB_GPU_BATCHES=$batches, SB_GPU_WARMUP=$warmup): tokens/s"
echo "over training batches $((warmup + 1))-$batches of the first epoch, batch and BPTT as each config."
echo
echo "| setting | config | tokens/s | ms/batch | vs softmax |"
echo "|---|---|---|---|---|"
results="$tmp/results.txt"
for s in "${settings[@]}"; do
  IFS='|' read -r label config head <<< "$s"
  spec=${head%% *}
  out="$tmp/run_$(echo "$label" | tr -c 'A-Za-z0-9' '_')"
  args=(--config "$root/trainers/configs/$config" --head "$spec" --device "$device"
    --epochs 1 --finetune_epochs 0 --max_batches "$batches" --log_interval 1
    --valid_tokens 2000 --dump_test false --seed 141 --out "$out")
  if [[ "$head" == *" 1150" ]]; then args+=(--nhidlast 0); fi  # MoS on the softmax model
  echo "gpu_throughput: $label ..." >&2
  "$bin" "${args[@]}" > "$tmp/log.txt" 2>&1 || { cat "$tmp/log.txt" >&2; exit 1; }
  "${SB_PYTHON:-/usr/bin/python3}" - "$out/metrics.jsonl" "$warmup" "$label" "$config" "$head" >> "$results" <<'EOF'
import json, sys
path, warmup, label, config, head = sys.argv[1], int(sys.argv[2]), *sys.argv[3:]
recs = [r for r in map(json.loads, open(path)) if r.get("event") == "train" and r["batch"] > warmup]
seconds = sum(r["ms_per_batch"] for r in recs) / 1000
tokens = sum(r["tokens_per_s"] * r["ms_per_batch"] / 1000 for r in recs)
print(f"{label}|{config}|{head}|{tokens / seconds:.0f}|{1000 * seconds / len(recs):.1f}")
EOF
done
soft=$(awk -F'|' '$1 == "softmax" {print $4}' "$results")
awk -F'|' -v soft="$soft" '{printf "| %s | %s | %s | %s | %.2f |\n", $1, $2, $4, $5, $4 / soft}' "$results"
echo
echo "For pipeline/profiles/paper.toml:"
echo
echo '```toml'
echo "[gpu_throughput]"
echo "train_tokens_per_epoch = 929589"
echo "source = \"bench/gpu_throughput.sh, $gpu, $(date -u +%F), commit $(/usr/bin/python3 "$root/pipeline/provenance.py" label 2>/dev/null || echo unknown)\""
printf 'tokens_per_s = { '
awk -F'|' '$3 !~ / 1150$/ {printf "%s\"%s\" = %s", (n++ ? ", " : ""), $3, $4}' "$results"
echo ' }'
echo '```'
