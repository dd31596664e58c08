#!/usr/bin/env bash
# fused_lstm against at::lstm over whole cpu-profile runs (a sanity check before fused_lstm may
# become the default; one seed per head, not a test of equality): train_wordlm with
# trainers/configs/ptb_cpu.toml (one main and one finetuning epoch), the same seed, each head run
# with fused_lstm = false then true; the test-set dump is written (train_wordlm's test ppl comes
# from it) and deleted once read. Prints markdown: valid and test ppl of each, their
# relative difference, and the wall seconds of each train_wordlm process (training, validation,
# finetuning and the test evaluation).
#   bench/fused_lstm_runs.sh [BUILD_DIR] [HEADS (softmax sigsoftmax)] [SEED (141)]
set -euo pipefail
. "$(dirname "$0")/bench_lib.sh"
build=${1:-build}
heads=${2:-softmax sigsoftmax}
seed=${3:-141}
bin="$build/trainers/train_wordlm"
root=$(cd "$(dirname "$0")/.." && pwd)
need "make build" "$bin"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| head | lstm | valid ppl | test ppl | test ppl, fused / at::lstm - 1 | train_wordlm wall s | at::lstm s / fused s |"
echo "|---|---|---|---|---|---|---|"
for head in $heads; do
  for fused in false true; do
    echo "fused_lstm_runs: $head fused_lstm=$fused ..." >&2
    start=$(date +%s.%N)
    "$bin" --config "$root/trainers/configs/ptb_cpu.toml" --head "$head" --seed "$seed" \
      --fused_lstm "$fused" --out "$tmp/${head}_$fused" > "$tmp/log" 2>&1 ||
      { cat "$tmp/log" >&2; exit 1; }
    echo "$(date +%s.%N) $start" > "$tmp/${head}_$fused/seconds"
  done
  "${SB_PYTHON:-/usr/bin/python3}" - "$tmp" "$head" <<'PY'
import json, os, sys
tmp, head = sys.argv[1:]
rows = {}
for fused in ("false", "true"):
    d = os.path.join(tmp, f"{head}_{fused}")
    w = json.load(open(os.path.join(d, "final.json")))["wordlm"]
    end, start = map(float, open(os.path.join(d, "seconds")).read().split())
    rows[fused] = (w["valid_ppl"], w["test_ppl"], end - start)
a, f = rows["false"], rows["true"]
print(f"| {head} | at::lstm | {a[0]:.2f} | {a[1]:.2f} | | {a[2]:.0f} | |")
print(f"| {head} | fused | {f[0]:.2f} | {f[1]:.2f} | {f[1] / a[1] - 1:+.2%} | {f[2]:.0f} | "
      f"{a[2] / f[2]:.2f}x |")
PY
  find "$tmp" -name '*.h5' -delete
done
