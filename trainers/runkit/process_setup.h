#pragma once
// Start-up settings every LM binary applies once, before any tensor is made (docs/design.md,
// "Conventions": one --threads setting, applied once at start-up).

#include <cstdint>

namespace sb::runkit {

/// Sets LibTorch's intra-op threads, and through the OpenMP OpenBLAS the BLAS threads, to
/// `threads` (> 0) or the number of cores (0). Returns the count set.
int set_threads(int64_t threads);

/// Tells glibc to keep freed memory for reuse: no mmap for large blocks (M_MMAP_MAX = 0) and no
/// trimming of the heap top (M_TRIM_THRESHOLD = INT_MAX). Without it, every (N, M) activation or
/// gradient buffer of a training step (28 MB at N = 700, M = 10000) is unmapped when freed and
/// page-faulted back in on the next step: measured as up to half of train_wordlm's CPU time in the
/// kernel, and by bench/bench_train_speed.sh as the cpp vs cpp-glibc-default ratio
/// (results/bench/train_speed.md). The cost is that the process's RSS stays at its peak.
/// Throws if glibc refuses a setting.
void keep_freed_memory();

/// What every binary that trains or evaluates does first: keep_freed_memory(), then
/// set_threads(threads). Returns the thread count set.
int set_up_process(int64_t threads);

}  // namespace sb::runkit
