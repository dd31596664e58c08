#!/usr/bin/env bash
# Measures the BLAS threading pitfall in one run: tokens/s of an LSTM LM training step on the
# OpenMP OpenBLAS (what our binaries load through their rpath) versus Debian's default pthread
# OpenBLAS (forced with LD_PRELOAD, which wins over the rpath because the sonames then match).
#   bench/blas_threads.sh [BUILD_DIR]
set -euo pipefail
. "$(dirname "$0")/bench_lib.sh"
build=${1:-build}
bin="$build/bench/bench_blas_threads"
pthread_dir=/usr/lib/x86_64-linux-gnu/openblas-pthread
need "run make bench: cmake --build BUILD --target benchmarks" "$bin"
[ -e "$pthread_dir/libopenblas.so.0" ] || { echo "blas_threads.sh: $pthread_dir missing (libopenblas0-pthread)" >&2; exit 1; }

rate() {  # prints tokens/s of one benchmark run
  "$@" --benchmark_format=json 2>/dev/null |
    /usr/bin/python3 -c 'import json,sys; b=json.load(sys.stdin)["benchmarks"][0]; print(b["items_per_second"], b.get("label",""))'
}
read -r omp omp_lib < <(rate "$bin")
read -r pth pth_lib < <(LD_PRELOAD="$pthread_dir/libopenblas.so.0:$pthread_dir/libblas.so.3:$pthread_dir/liblapack.so.3" rate "$bin")
printf '| BLAS build | library loaded | tokens/s | ratio to OpenMP |\n|---|---|---|---|\n'
printf '| OpenMP (default of our binaries) | %s | %.0f | 1.00x |\n' "$omp_lib" "$omp"
printf '| pthread (Debian default) | %s | %.0f | %.2fx |\n' "$pth_lib" "$pth" "$(echo "$pth / $omp" | bc -l)"
