# What the bench scripts share; each sources it: . "$(dirname "$0")/bench_lib.sh"

# need HINT FILE...: exits 1 naming the first FILE that is not executable, with HINT (how to
# build it), as "<script>: FILE not built (HINT)".
need() {
  local hint=$1
  shift
  for f in "$@"; do
    [ -x "$f" ] || { echo "$(basename "$0"): $f not built ($hint)" >&2; exit 1; }
  done
}

# rank_bench_setup WORK_NAME [BUILD_DIR] [WORK_DIR]: the rank benches' command line and
# binaries. Sets build (default build), work (default $TMPDIR/WORK_NAME), bin (rank_analysis),
# synth (synthetic_logprobs), py (Debian's Python: numpy, h5py) and here (bench/), and checks
# that both binaries are built.
rank_bench_setup() {
  build=${2:-build}
  work=${3:-${TMPDIR:-/tmp}/$1}
  bin="$build/analysis/rank_analysis"
  synth="$build/trainers/synthetic_logprobs"
  py=/usr/bin/python3
  here=$(cd "$(dirname "$0")" && pwd)
  need "run make build" "$bin" "$synth"
}

# bench_settings NAME=DEFAULT...: sets each shell variable NAME from the environment's
# SB_BENCH_<NAME in upper case>, else DEFAULT (the scripts' headers list them), e.g.
#   bench_settings threads=2 rounds=3     # threads=${SB_BENCH_THREADS:-2}, rounds=...
bench_settings() {
  local pair name env
  for pair in "$@"; do
    name=${pair%%=*}
    env="SB_BENCH_${name^^}"
    printf -v "$name" '%s' "${!env:-${pair#*=}}"
  done
}
