#!/usr/bin/env bash
# kill -9 and Ctrl-C (SIGINT) in the middle of a real train_wordlm run, then --resume: the final
# numbers and the dumped log-output matrix must equal an uninterrupted run with the same seed and
# threads, bit for bit.
# Usage: test_kill_resume.sh TRAIN_WORDLM_BINARY CONFIG
set -euo pipefail
bin=$1 config=$2
# Without PTB (no ../shared, no `make data`): one line, and ctest reports the test as skipped.
if ! "$(dirname "$0")/../../../datasets/fetch.sh" --check ptb > /dev/null 2>&1; then
  echo "SKIPPED: corpus 'ptb' not found in datasets/ or ../shared/datasets: run \`make data\`"
  exit 0
fi
tmp=$(mktemp -d /tmp/sb_test_kill_resume.XXXXXX)
pid=
# A failed check must not leave a background run writing into the removed directory.
trap '[[ -n $pid ]] && kill -9 "$pid" 2> /dev/null; rm -rf "$tmp"' EXIT
# The binary itself is started in the background (not a shell function), so $! is its pid.
# Half the smoke config's slices (14 batches an epoch): exactness does not need more, and the test
# trains five times.
args=(--config "$config" --threads 2 --log_interval 1000 --train_tokens 10000 --valid_tokens 2000
      --test_tokens 1000)
train() { "$bin" "${args[@]}" "$@"; }

start=$SECONDS
train --out "$tmp/straight" > "$tmp/straight.log"
straight_seconds=$((SECONDS - start))

# The deadline is generous (the straight run's time plus 300 s): on a loaded CI machine the first
# epoch can take minutes; the check is that a checkpoint appears, not how fast.
wait_for_checkpoint() {  # $1: run dir; $2: pid
  local deadline=$((SECONDS + straight_seconds + 300))
  while ((SECONDS < deadline)); do
    [[ -e $1/checkpoint.pt ]] && return 0
    kill -0 "$2" 2> /dev/null || { echo "FAIL: run ended before its first checkpoint"; exit 1; }
    sleep 0.01
  done
  echo "FAIL: no checkpoint after $((straight_seconds + 300)) s"; exit 1
}

# kill -9 right after the first epoch's checkpoint: the next epoch is lost and redone.
"$bin" "${args[@]}" --out "$tmp/killed" > "$tmp/killed.log" &
pid=$!
wait_for_checkpoint "$tmp/killed" $pid
kill -9 $pid
wait $pid 2> /dev/null && { echo "FAIL: the run finished before kill -9"; exit 1; }
pid=
[[ ! -e $tmp/killed/logprobs.h5 ]] || { echo "FAIL: killed run left a dump"; exit 1; }
train --out "$tmp/killed" --resume > "$tmp/killed.resume.log"

# Ctrl-C: saves mid-epoch, exits 130; --resume continues from that batch.
"$bin" "${args[@]}" --out "$tmp/interrupted" > "$tmp/interrupted.log" &
pid=$!
wait_for_checkpoint "$tmp/interrupted" $pid
kill -INT $pid
status=0; wait $pid || status=$?
pid=
[[ $status == 130 ]] || { echo "FAIL: SIGINT exit status $status, expected 130"; exit 1; }
grep -q "interrupted: saved" "$tmp/interrupted.log" || { echo "FAIL: no save message"; exit 1; }
train --out "$tmp/interrupted" --resume > "$tmp/interrupted.resume.log"

# A second run without --resume must refuse to overwrite the checkpoint.
if train --out "$tmp/straight" > /dev/null 2> "$tmp/refuse.err"; then
  echo "FAIL: a new run overwrote an existing checkpoint"; exit 1
fi
grep -q "pass --resume" "$tmp/refuse.err" || { echo "FAIL: $(cat "$tmp/refuse.err")"; exit 1; }

/usr/bin/python3 - "$tmp" << 'PY'
import json, sys
import h5py, numpy as np
tmp = sys.argv[1]
ref = json.load(open(f"{tmp}/straight/final.json"))
with h5py.File(f"{tmp}/straight/logprobs.h5") as f:
    ref_rows, ref_ppl = f["log_probs"][...], f.attrs["ppl"]
for run in ("killed", "interrupted"):
    got = json.load(open(f"{tmp}/{run}/final.json"))
    for key in ("valid_loss", "dump_ppl", "steps", "wordlm"):
        assert got[key] == ref[key], f"{run}: {key} {got[key]!r} != uninterrupted {ref[key]!r}"
    with h5py.File(f"{tmp}/{run}/logprobs.h5") as f:
        assert np.array_equal(f["log_probs"][...], ref_rows), f"{run}: log_probs differ"
        assert f.attrs["ppl"] == ref_ppl, f"{run}: ppl attribute differs"
print(f"resumed runs equal the uninterrupted one: test ppl {ref['dump_ppl']:.4f}, "
      f"{ref['steps']} steps, {ref_rows.shape} log_probs")
PY
