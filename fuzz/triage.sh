#!/bin/bash
# Replays every input a harness kept in BUILD_DIR/findings/<harness>/ and prints, per input, how
# it ended and the first frame that is not the sanitizers' or libFuzzer's: in which library a
# crash, an out-of-memory or a timeout happened (ours, or libhdf5's: fuzz/README.md).
#   [TRIAGE_TIMEOUT=30] fuzz/triage.sh BUILD_DIR HARNESS
set -u
build=$1 h=$2
for f in "$build/findings/$h"/*; do
  [ -f "$f" ] || continue
  out=$(timeout "${TRIAGE_TIMEOUT:-30}" "$build/fuzz/$h" -rss_limit_mb=2048 "$f" 2>&1)
  rc=$?
  if [ "$rc" -eq 124 ]; then
    how="timeout (${TRIAGE_TIMEOUT:-30} s)" frame="-"
  elif [ "$rc" -eq 0 ]; then
    how="nothing on replay" frame="-"
  else
    how=$(grep -m1 -oE 'SEGV|heap-buffer-overflow|out-of-memory|detected memory leaks|runtime error|Assertion|deadly signal' <<<"$out")
    frame=$(grep -E '^ +#[0-9]+ 0x[0-9a-f]+ ' <<<"$out" |
      grep -vE 'fuzzer::|__sanitizer|__asan|__lsan|__interceptor|asan_|in (malloc|calloc|realloc|operator new)|libc\.so|in __mem' |
      head -1 | sed -E 's/^ +#[0-9]+ 0x[0-9a-f]+ //; s/ \(BuildId.*//')
  fi
  printf '%s\t%s\t%s\n' "$(basename "$f")" "${how:-exit $rc}" "${frame:-?}"
done
