#!/usr/bin/env bash
# Two cores, two ways: one training run with 2 threads against two runs side by side with 1
# thread each (what make reproduce's lanes do: a profile's `threads = 1, jobs = 0`). The cpu
# profile's model (trainers/configs/ptb_cpu.toml: emsize 100, 2 x 256 units, batch 20, BPTT 35,
# M = 10000, fused_lstm) trains with bench/bench_wordlm for SB_BENCH_BATCHES batches after a
# warm-up; rounds alternate the order of the two settings so both see the same drift. Prints
# markdown: tokens/s of each setting per head and round, and the ratio (side by side / alone),
# median over rounds.
#   bench/parallel_runs.sh [BUILD_DIR]
# Environment: SB_BENCH_ROUNDS (3), SB_BENCH_BATCHES (60), SB_BENCH_WARMUP (10),
# SB_BENCH_HEADS ("softmax mos").
# FLOP model of one batch (700 tokens): the output layer 3 * 2 * 700 * 100 * 10000 = 4.2 GFLOP
# (forward, two backward products), the LSTMs 3 * 2 * 700 * (356 * 1024 + 356 * 400) = 2.1 GFLOP:
# per-step GEMMs of 20 rows, too small to keep two threads busy.
set -euo pipefail
. "$(dirname "$0")/bench_lib.sh"
build=${1:-build}
bin="$build/bench/bench_wordlm"
need "cmake --build $build --target bench_wordlm" "$bin"
bench_settings rounds=3 batches=60 warmup=10 heads="softmax mos"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
model="--mode train --emsize 100 --nhid 256 --fused-lstm --experts 2 --batches $batches --warmup $warmup"
tps() { /usr/bin/python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["tokens_per_s"])' "$1"; }
alone() { "$bin" --head "$1" $model --threads 2 > "$tmp/alone.json" 2>/dev/null; tps "$tmp/alone.json"; }
side() {
  "$bin" --head "$1" $model --threads 1 > "$tmp/a.json" 2>/dev/null &
  local pid=$!
  "$bin" --head "$1" $model --threads 1 > "$tmp/b.json" 2>/dev/null
  wait $pid
  /usr/bin/python3 -c 'import sys; print(float(sys.argv[1]) + float(sys.argv[2]))' "$(tps "$tmp/a.json")" "$(tps "$tmp/b.json")"
}
echo "# Two runs side by side with one thread each, against one run with two"
echo
echo "Measured $(date -u +%F) at commit $(/usr/bin/python3 pipeline/provenance.py label 2>/dev/null || echo '?'), $(nproc) cores, OpenBLAS core $("$bin" --blas-core 2>/dev/null || echo "?"), load average at start $(cut -d' ' -f1-3 /proc/loadavg)."
echo
echo '```'
echo "bench/parallel_runs.sh $build"
echo '```'
echo
echo "| head | round | alone, 2 threads (tokens/s) | side by side, 1 thread each (tokens/s, sum) | ratio |"
echo "|---|---|---|---|---|"
for head in $heads; do
  ratios=()
  for r in $(seq 1 "$rounds"); do
    if (( r % 2 )); then a=$(alone "$head"); s=$(side "$head"); else s=$(side "$head"); a=$(alone "$head"); fi
    ratio=$(/usr/bin/python3 -c 'import sys; print(f"{float(sys.argv[2]) / float(sys.argv[1]):.2f}")' "$a" "$s")
    ratios+=("$ratio")
    printf '| %s | %d | %.0f | %.0f | %sx |\n' "$head" "$r" "$a" "$s" "$ratio"
  done
  median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}')
  echo "| **$head** | median | | | **${median}x** |"
done
echo
echo "Load average at end: $(cut -d' ' -f1-3 /proc/loadavg)."
