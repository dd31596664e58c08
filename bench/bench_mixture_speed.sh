#!/usr/bin/env bash
# Training speed of the mixtures relative to softmax on the cpu profile's model (2 layers, 256
# units, d = 100, K = 2: trainers/configs/ptb_cpu.toml): bench_wordlm (bench_wordlm.cpp: batch 20,
# BPTT 35, locked dropout 0.2, no weight drop) for softmax, mos and moss in turn, the order reversed
# every other round so that both sides of a ratio see the same load drift. Prints markdown: the
# ratios of training tokens/s (median over rounds and each round's) and the median ms per batch
# of forward (incl. the loss) and backward. Compare ratios, not tokens/s, across runs.
# "mos-composed" / "moss-composed" in the heads: the same head with the composed training NLL
# (bench_wordlm --composed-mixture-nll), i.e. without the fused per-expert kernel, so that the
# fusion's gain is measured in the same run.
#   bench/bench_mixture_speed.sh [BUILD_DIR]
# Environment: SB_BENCH_THREADS (2), SB_BENCH_ROUNDS (3), SB_BENCH_BATCHES (40 timed),
# SB_BENCH_WARMUP (5), SB_BENCH_EXPERTS (2), SB_BENCH_EMSIZE (100), SB_BENCH_NHID (256),
# SB_BENCH_HEADS ("softmax mos moss mos-composed").
set -euo pipefail
. "$(dirname "$0")/bench_lib.sh"
build=${1:-build}
bin="$build/bench/bench_wordlm"
bench_settings threads=2 rounds=3 batches=40 warmup=5 experts=2 emsize=100 nhid=256
read -r -a heads <<< "${SB_BENCH_HEADS:-softmax mos moss mos-composed}"
need "cmake --build $build --target bench_wordlm" "$bin"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
for ((r = 1; r <= rounds; ++r)); do
  order=("${heads[@]}")
  if ((r % 2 == 0)); then
    order=()
    for ((i = ${#heads[@]} - 1; i >= 0; --i)); do order+=("${heads[i]}"); done
  fi
  for head in "${order[@]}"; do
    echo "bench_mixture_speed: round $r/$rounds: $head ..." >&2
    flags=()
    [[ "$head" == *-composed ]] && flags=(--composed-mixture-nll)
    "$bin" --head "${head%-composed}" "${flags[@]}" --mode train --batches "$batches" --warmup "$warmup" --threads "$threads" \
      --experts "$experts" --emsize "$emsize" --nhid "$nhid" | sed "s/^/$r /" >> "$log"
  done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
/usr/bin/python3 - "$log" "$rounds" "$experts" "$emsize" "$nhid" "$threads" "$batches" "$warmup" \
  "$load_start" "$load_end" <<'PY'
import json, statistics, sys
path, rounds, k, emsize, nhid, threads, batches, warmup, load_start, load_end = sys.argv[1:]
rounds = int(rounds)
rec = {}
for line in open(path):
    r, text = line.split(" ", 1)
    d = json.loads(text)
    key = d["head"] + ("-composed" if d.get("mixture_nll") == "composed" and
                       d["head"] in ("mos", "moss") else "")
    rec[(int(r), key)] = d
heads = list(dict.fromkeys(h for _, h in rec))
print(f"2-layer AWD-LSTM, {nhid} units, d = emsize = {emsize}, PTB (M = 10000), batch 20, BPTT 35; "
      f"MoS / MoSS with K = {k}; {threads} threads; {rounds} rounds of {warmup} warm-up + "
      f"{batches} timed training batches per head, order reversed every other round. Load average "
      f"(1, 5, 15 min) at start {load_start}, at end {load_end} (2 cores).")
print()
print("| ratio of training tokens/s | median | " + " | ".join(f"round {r}" for r in range(1, rounds + 1)) + " |")
print("|---|---|" + "---|" * rounds)
for h in heads:
    if h == "softmax":
        continue
    per = [rec[(r, h)]["tokens_per_s"] / rec[(r, "softmax")]["tokens_per_s"]
           for r in range(1, rounds + 1) if (r, h) in rec and (r, "softmax") in rec]
    name = f"{h} (K={k})" if h.split("-")[0] in ("mos", "moss") else h
    print(f"| {name} / softmax | **{statistics.median(per):.2f}x** | " +
          " | ".join(f"{x:.2f}x" for x in per) + " |")
def ratio(a, b):
    per = [rec[(r, a)]["tokens_per_s"] / rec[(r, b)]["tokens_per_s"]
           for r in range(1, rounds + 1) if (r, a) in rec and (r, b) in rec]
    return statistics.median(per) if per else None
print()
for h in ("mos", "moss"):
    gain = ratio(h, h + "-composed")
    if gain is not None:
        print(f"- fused per-expert NLL vs composed, {h} (K = {k}): **{gain:.2f}x** training tokens/s")
mos = ratio("mos", "softmax")
if mos is not None:
    print(f"- target (issue 12): MoS (K = {k}) training >= 0.6x softmax's tokens/s: "
          f"{'met' if mos >= 0.6 else 'NOT met'} ({mos:.2f}x)")
print()
print("| head | tokens/s (median) | forward ms | backward ms | optimizer ms |")
print("|---|---|---|---|---|")
for h in heads:
    rs = [rec[(r, h)] for r in range(1, rounds + 1) if (r, h) in rec]
    med = lambda key: statistics.median(x[key] for x in rs)
    print(f"| {h} | {med('tokens_per_s'):.0f} | {med('forward_ms'):.1f} | {med('backward_ms'):.1f} | "
          f"{med('optimizer_ms'):.1f} |")
PY
