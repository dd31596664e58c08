#!/usr/bin/env bash
# Training / evaluation speed of our AWD-LSTM LM against a PyTorch reference of the same model
# (bench/wordlm_reference.py, Debian's torch), as ratios measured in one run. Each round times
#   python softmax, cpp softmax, cpp sigsoftmax, python sigsoftmax, [cpp-glibc-heap sigsoftmax,
#   cpp-glibc-heap softmax,] [cpp-fused softmax, cpp-fused sigsoftmax,] python mos, cpp mos,
#   [cpp-glibc-heap mos,] [cpp-fused mos,] [python-debian-blas softmax]
# (each process: warm-up, then timed training batches, then timed evaluation batches), the order
# reversed every other round so that both sides of every ratio see the same load drift. Prints
# markdown: the ratios (median over rounds, and each round's), the phase split, the raw tokens/s,
# which BLAS each side loaded and the load average at start and end.
#   bench/bench_train_speed.sh [BUILD_DIR]
# Labels: python = the reference on the same OpenMP OpenBLAS as cpp (equal settings);
# cpp = bench_wordlm as train_wordlm starts: glibc told to keep freed memory (keep_freed_memory());
# cpp-glibc-heap = the same binary with --glibc-default-heap: glibc returns every large freed
# buffer to the kernel and page-faults it back in on the next step (what the trainer did before);
# cpp-fused = the same binary with --fused-lstm (the trainers' fused_lstm = true);
# python-debian-blas = the reference on the system's default BLAS (training only).
# Environment: SB_BENCH_THREADS (2), SB_BENCH_ROUNDS (3), SB_BENCH_BATCHES (60 timed per mode),
# SB_BENCH_WARMUP (10), SB_BENCH_EXPERTS (MoS K, 2: trainers/configs/ptb_cpu.toml trains mos:K=2
# and moss:K=2; bench/wordlm_bench_model.h's kExperts),
# SB_BENCH_GLIBC_HEAP (1: include the cpp-glibc-heap runs; 0: skip),
# SB_BENCH_FUSED (1: include the cpp-fused runs; 0: skip),
# SB_BENCH_DEBIAN_BLAS (1: include the python-debian-blas run; 0: skip).
set -euo pipefail
. "$(dirname "$0")/bench_lib.sh"
build=${1:-build}
bin="$build/bench/bench_wordlm"
py=/usr/bin/python3
here=$(cd "$(dirname "$0")" && pwd)
ref="$here/wordlm_reference.py"
bench_settings threads=2 rounds=3 batches=60 warmup=10 experts=2 glibc_heap=1 fused=1 debian_blas=1
omp_dir=/usr/lib/x86_64-linux-gnu/openblas-openmp
need "cmake --build $build --target bench_wordlm, or make bench-train" "$bin"
[ -e "$omp_dir/libblas.so.3" ] || { echo "bench_train_speed.sh: $omp_dir missing (libopenblas0-openmp)" >&2; exit 1; }

# Every side runs the same OpenBLAS kernels: on a CPU newer than Debian's OpenBLAS the library
# falls back to its generic Prescott kernels, which bench_wordlm (as the trainers) replaces with
# the best the CPU allows (common/blas_core.h); Python gets the same core through the variable.
export OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-$("$bin" --blas-core 2>/dev/null)}

log=$(mktemp)
trap 'rm -f "$log"' EXIT
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
started=$(date +%s)

# run ROUND POSITION LABEL HEAD MODE: one process; its JSON lines go to $log, prefixed.
run() {
  local round=$1 pos=$2 label=$3 head=$4 mode=$5 cmd
  local args=(--head "$head" --mode "$mode" --batches "$batches" --warmup "$warmup"
    --threads "$threads" --experts "$experts")
  case $label in
    cpp) cmd=("$bin") ;;
    cpp-glibc-heap) cmd=("$bin" --glibc-default-heap) ;;
    cpp-fused) cmd=("$bin" --fused-lstm) ;;
    python) cmd=(env LD_LIBRARY_PATH="$omp_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$py" "$ref") ;;
    python-debian-blas) cmd=("$py" "$ref") ;;
  esac
  echo "bench_train_speed: round $round/$rounds: $label $head ($mode) ..." >&2
  "${cmd[@]}" "${args[@]}" | while read -r line; do
    echo "$round $pos $label $line" >> "$log"
  done
}

# "label head mode": neighbours in this list are the pairs that the ratios compare.
order=("python softmax both" "cpp softmax both" "cpp sigsoftmax both" "python sigsoftmax both")
[ "$glibc_heap" = 1 ] && order+=("cpp-glibc-heap sigsoftmax both" "cpp-glibc-heap softmax both")
[ "$fused" = 1 ] && order+=("cpp-fused softmax both" "cpp-fused sigsoftmax both")
order+=("python mos both" "cpp mos both")
[ "$glibc_heap" = 1 ] && order+=("cpp-glibc-heap mos both")
[ "$fused" = 1 ] && order+=("cpp-fused mos both")
[ "$debian_blas" = 1 ] && order+=("python-debian-blas softmax train")
for ((r = 1; r <= rounds; ++r)); do
  runs=("${order[@]}")
  if ((r % 2 == 0)); then  # reversed
    runs=()
    for ((i = ${#order[@]} - 1; i >= 0; --i)); do runs+=("${order[i]}"); done
  fi
  pos=0
  for entry in "${runs[@]}"; do
    pos=$((pos + 1))
    read -r label head mode <<< "$entry"
    run "$r" "$pos" "$label" "$head" "$mode"
  done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
minutes=$(( ($(date +%s) - started + 30) / 60 ))
rpath=$(readelf -d "$bin" | sed -n 's/.*R\(UN\)\{0,1\}PATH.*\[\(.*\)\]/\2/p' | head -n1)
torch_blas=$("$py" -c 'import torch; print(torch.__config__.show())' |
  grep -o 'BLAS_INFO=[^,]*' | head -n1)
system_blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3)

"$py" - "$log" "$threads" "$rounds" "$batches" "$warmup" "$experts" "$load_start" "$load_end" \
  "$minutes" "$rpath" "$torch_blas" "$system_blas" "$omp_dir" "$OPENBLAS_CORETYPE" <<'PY'
import json, statistics, sys

(path, threads, rounds, batches, warmup, experts, load_start, load_end, minutes, rpath,
 torch_blas, system_blas, omp_dir, core) = sys.argv[1:]
rounds = int(rounds)
rows = []  # (round, position, label, record)
for line in open(path):
    r, pos, label, text = line.split(" ", 3)
    rows.append((int(r), int(pos), label, json.loads(text)))
rec = {(r, label, d["head"], d["mode"]): d for r, _, label, d in rows}
blas = {label: d["blas"] for _, _, label, d in rows}
labels = {label for _, _, label, _ in rows}
heads = ["softmax", "sigsoftmax", "mos"]
name = lambda h: f"mos (K={experts})" if h == "mos" else h
median = lambda xs: statistics.median(xs) if xs else float("nan")

def tps(r, label, head, mode):
    d = rec.get((r, label, head, mode))
    return d["tokens_per_s"] if d else None

def ratio_row(text, target, num, den):
    if num[0] not in labels or den[0] not in labels:
        return
    per = []
    for r in range(1, rounds + 1):
        a, b = tps(r, *num), tps(r, *den)
        per.append(a / b if a and b else None)
    med = median([x for x in per if x is not None])
    met = "" if target is None else ("yes" if med >= target else "**no**")
    cells = " | ".join("-" if x is None else f"{x:.2f}x" for x in per)
    tgt = "-" if target is None else f">= {target:g}x"
    print(f"| {text} | {tgt} | **{med:.2f}x** | {met} | {cells} |")

print(f"2-layer 200-unit tied AWD-LSTM LM on PTB (M = 10000), batch 20, BPTT 35, locked dropout "
      f"0.2 (input, between layers, output, MoS contexts), no embedding dropout, no weight drop, "
      f"AR 2 / TAR 1, clip 0.25, SGD lr 20; MoS with K = {experts} experts of 200. "
      f"{threads} threads on both sides; {rounds} rounds, each process {warmup} warm-up + "
      f"{batches} timed batches per mode (train, then eval: no grad, validation split); the order "
      f"reversed every other round; {minutes} min in all.")
print()
print(f"Runs (BLAS loaded, from /proc/self/maps of each process; OpenBLAS core {core} on every "
      f"side, OPENBLAS_CORETYPE):")
print(f"- cpp: bench_wordlm as built, `{blas.get('cpp', '?')}` (DT_RPATH `{rpath}`); started as "
      f"train_wordlm: glibc keeps freed memory (mallopt M_MMAP_MAX = 0, M_TRIM_THRESHOLD = "
      f"INT_MAX; trainers/runkit/process_setup.h)")
if "cpp-glibc-heap" in labels:
    print(f"- cpp-glibc-heap: the same binary with --glibc-default-heap: glibc's defaults, which "
          f"unmap every large freed buffer and page-fault it back on the next step")
print(f"- python: bench/wordlm_reference.py, `{blas.get('python', '?')}` (Debian torch, "
      f"{torch_blas}; run with LD_LIBRARY_PATH={omp_dir}: the same BLAS as cpp, equal settings)")
if "python-debian-blas" in labels:
    print(f"- python-debian-blas: the same script on the system default, "
          f"`{blas['python-debian-blas']}` (libblas.so.3 -> {system_blas}); training only, "
          f"reference")
print()
print(f"Load average (1, 5, 15 min) at start: {load_start}; at end: {load_end} (2 cores).")
print()
print("| ratio of tokens/s | target | median | met | " +
      " | ".join(f"round {r}" for r in range(1, rounds + 1)) + " |")
print("|---|---|---|---|" + "---|" * rounds)
for h in heads:
    ratio_row(f"train, cpp / python: {name(h)}", 1.0, ("cpp", h, "train"), ("python", h, "train"))
ratio_row("train, cpp sigsoftmax / cpp softmax", 0.95, ("cpp", "sigsoftmax", "train"),
          ("cpp", "softmax", "train"))
ratio_row(f"train, cpp {name('mos')} / cpp softmax", 0.7, ("cpp", "mos", "train"),
          ("cpp", "softmax", "train"))
# fused_lstm (issue 5/5's targets: >= 1.5x PyTorch on the same BLAS; sigsoftmax within 5% of
# softmax; MoS >= 0.7x softmax).
for h in heads:
    ratio_row(f"train, cpp-fused / python: {name(h)}", 1.5, ("cpp-fused", h, "train"),
              ("python", h, "train"))
for h in heads:
    ratio_row(f"train, cpp-fused / cpp: {name(h)}", None, ("cpp-fused", h, "train"),
              ("cpp", h, "train"))
ratio_row("train, cpp-fused sigsoftmax / cpp-fused softmax", 0.95,
          ("cpp-fused", "sigsoftmax", "train"), ("cpp-fused", "softmax", "train"))
ratio_row(f"train, cpp-fused {name('mos')} / cpp-fused softmax", 0.7,
          ("cpp-fused", "mos", "train"), ("cpp-fused", "softmax", "train"))
for h in heads:
    ratio_row(f"cpp-fused eval / cpp-fused train: {name(h)}", None, ("cpp-fused", h, "eval"),
              ("cpp-fused", h, "train"))
for h in heads:
    ratio_row(f"cpp eval / cpp train: {name(h)}", 3.0, ("cpp", h, "eval"), ("cpp", h, "train"))
for h in heads:
    ratio_row(f"train, cpp-glibc-heap / python: {name(h)}", None, ("cpp-glibc-heap", h, "train"),
              ("python", h, "train"))
for h in heads:
    ratio_row(f"train, cpp / cpp-glibc-heap (gain of keep_freed_memory): {name(h)}", None,
              ("cpp", h, "train"), ("cpp-glibc-heap", h, "train"))
for h in heads:
    ratio_row(f"cpp-glibc-heap eval / cpp-glibc-heap train: {name(h)}", None,
              ("cpp-glibc-heap", h, "eval"), ("cpp-glibc-heap", h, "train"))
for h in heads:
    ratio_row(f"eval, cpp / python: {name(h)}", None, ("cpp", h, "eval"), ("python", h, "eval"))
ratio_row("train, python sigsoftmax / python softmax", None, ("python", "sigsoftmax", "train"),
          ("python", "softmax", "train"))
for h in heads:
    ratio_row(f"python eval / python train: {name(h)}", None, ("python", h, "eval"),
              ("python", h, "train"))
ratio_row("train, python-debian-blas / python: softmax", None,
          ("python-debian-blas", "softmax", "train"), ("python", "softmax", "train"))

print()
print("Where the training time goes: median over rounds of ms per batch (forward = detach + "
      "zero_grad + forward + loss + AR/TAR + loss.item(); optimizer = clip + SGD), and the median "
      "of the per-round cpp / python ratio of each phase.")
print()
impls = [l for l in ("cpp", "cpp-fused", "cpp-glibc-heap", "python") if l in labels]
print("| head | phase | " + " | ".join(f"{l} ms" for l in impls) +
      " | cpp / python | cpp-fused / python | cpp-glibc-heap / python |")
print("|---|---|" + "---|" * (len(impls) + 3))
for h in heads:
    for phase in ("forward", "backward", "optimizer"):
        key = phase + "_ms"
        def ms(label, r):
            d = rec.get((r, label, h, "train"))
            return d[key] if d else None
        cells = []
        for l in impls:
            cells.append(f"{median([x for r in range(1, rounds + 1) if (x := ms(l, r))]):.1f}")
        for l in ("cpp", "cpp-fused", "cpp-glibc-heap"):
            q = [ms(l, r) / ms("python", r) for r in range(1, rounds + 1)
                 if ms(l, r) and ms("python", r)]
            cells.append(f"{median(q):.2f}x" if q else "-")
        print(f"| {name(h)} | {phase} | " + " | ".join(cells) + " |")

print()
print("Raw tokens/s (absolute numbers drift with the machine's load; compare within a round):")
print()
print("| round | position | impl | head | train tokens/s | eval tokens/s | train loss | eval loss |")
print("|---|---|---|---|---|---|---|---|")
seen = set()
for r, pos, label, d in rows:
    if (r, label, d["head"]) in seen:
        continue
    seen.add((r, label, d["head"]))
    t, e = rec.get((r, label, d["head"], "train")), rec.get((r, label, d["head"], "eval"))
    cell = lambda x, k, f: format(x[k], f) if x else "-"
    print(f"| {r} | {pos} | {label} | {name(d['head'])} | {cell(t, 'tokens_per_s', '.0f')} | "
          f"{cell(e, 'tokens_per_s', '.0f')} | {cell(t, 'mean_loss', '.4f')} | "
          f"{cell(e, 'mean_loss', '.4f')} |")
print()
print("The losses above are not the check that both sides compute the same model: that is "
      "`ctest -R 'PyTorch reference'` (tests/trainers/lm/test_reference_parity.py), which starts both "
      "from the same weights on the same tokens and compares every step (float64 within 1e-10). "
      "Here each side starts from its own (equal) initialisation and masks, but float32 rounding "
      "differences of ~1e-7 grow about 2x per step at lr 20, so the mean losses over the timed "
      "steps can differ (most for MoS) although the models agree.")
PY
echo
echo "The GEMM FLOP model of a training step (\`bench/train_flop_model.py --experts $experts\`): at equal FLOP rates MoS runs at the last column's fraction of softmax's speed; a measured MoS / softmax ratio above it means MoS's step reaches a higher FLOP rate than softmax's."
echo
/usr/bin/python3 "$here/train_flop_model.py" --experts "$experts"
