#!/bin/bash
# Runs each fuzz harness for SECONDS, one after the other, and prints one line per harness:
# executions, executions per second, coverage and whether it found anything.
#   fuzz/run_fuzzers.sh BUILD_DIR SECONDS HARNESS...      (make fuzz runs it)
# The working corpus of a harness grows in BUILD_DIR/corpus/<harness>/ (kept between runs; the
# checked-in seeds in fuzz/seeds/<harness>/ are read, never written); a crashing, leaking,
# timing-out or over-allocating input is written to BUILD_DIR/findings/<harness>/ and its log
# is BUILD_DIR/logs/<harness>.log. Exit status 1 when any harness found something.
set -u
build=$1 seconds=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
status=0
printf '%-20s %12s %8s %7s %7s  %s\n' harness executions exec/s cov ft result
for h in "$@"; do
  corpus=$build/corpus/$h findings=$build/findings/$h log=$build/logs/$h.log
  mkdir -p "$corpus" "$findings" "$(dirname "$log")"
  # libhdf5 1.10.8 crashes (SEGV in H5HG_read), loops forever and allocates GiBs on some corrupt
  # global heaps (variable-length strings; fuzz/upstream/): the HDF5 harness runs its inputs in
  # one child process (-fork=1) whose crashes, timeouts and out-of-memory ends are counted, not
  # fatal; their inputs are kept in findings/ and fuzz/triage.sh names the frame each ended in.
  fork=()
  [ "$h" = fuzz_logprob_file ] && fork=(-fork=1 -ignore_timeouts=1 -ignore_ooms=1 -ignore_crashes=1)
  # -timeout: one input taking longer is a hang; -rss_limit_mb (and malloc_limit_mb, which follows
  # it): an input making the reader hold more than 2 GiB is a finding too.
  "$build/fuzz/$h" "${fork[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$findings/" "$corpus" "$here/seeds/$h" >"$log" 2>&1
  rc=$?
  stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -1; }
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  execs=$(stat number_of_executed_units) rate=$(stat average_exec_per_sec) note=""
  if [ ${#fork[@]} -gt 0 ]; then  # fork mode: "#N: cov: .. ft: .. oom/timeout/crash: a/b/c"
    execs=$(sed -n 's/^#\([0-9]*\):.*/\1/p' <<<"$last")
    rate=$((${execs:-0} / seconds))  # the line's exec/s is the last job's
    note=" ($(sed -n 's/.*oom\/timeout\/crash: \([0-9]*\)\/\([0-9]*\)\/\([0-9]*\).*/\1 oom, \2 timeouts, \3 crashes/p' <<<"$last"))"
  fi
  if [ "$rc" -eq 0 ]; then
    result="no crash$note"
  else
    what=$(grep -m1 -E 'runtime error:|Assertion .* failed|==[0-9]+== ?ERROR' "$log" | cut -c1-120)
    result="FOUND (exit $rc): $what; input: $findings/$(ls -t "$findings" | head -1); log: $log"
    status=1
  fi
  printf '%-20s %12s %8s %7s %7s  %s\n' "$h" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" \
    "$result"
done
exit $status
