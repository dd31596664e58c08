#pragma once
// Where a training step's time goes, per operator (issue 5/5, "where the step goes"): the
// benchmark's training loop runs some steps with a RecordFunction observer on (every ATen
// operator, autograd node and user scope: its name, the range enclosing it, its start and end;
// the input shapes of GEMMs), the ranges are written one JSON line each, and every distinct GEMM
// shape the step ran is then timed alone with the same BLAS and threads, so bench/step_profile.py
// can set each operator's self time beside its FLOP count and the step beside the time its GEMMs
// would take at the rate the library reaches on their own shapes.
//
// Not LibTorch's profiler: its event blocks, allocated during the steps, land between the
// step's large buffers in glibc's heap, so every profiled step page-faulted ~100 MB of fresh
// memory and ran 3x slower (measured: 285 against 88 ms a step, 25k more minor faults a step).
// The observer's storage is allocated and touched before the steps and does not grow.
//
// The file (JSON lines):
//   {"k":"meta","seconds":s,"minor_faults":f,"ranges":n,"other_thread_ranges":o}
//   {"k":"range","i":index,"p":parent index (-1: none),"n":name,"t0":us,"t1":us,"s":[[shape]...]}
//   {"k":"gemm","op":name,"m":m,"n":n,"k_dim":k,"batch":b,"gflops":rate,"seconds":s,"reps":r}
// The training loop opens user scopes named "phase::<name>" (data, zero_grad, forward,
// loss_item, backward, optimizer) around its parts; ranges of other threads are only counted.

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sb::bench {

/// Runs `steps` with the observer on and writes its ranges to `path` as JSON lines (the format
/// above); returns the GEMM shapes seen, as "op m n k batch" keys, for time_gemm_shapes.
std::vector<std::string> profile_to_file(const std::string& path,
                                         const std::function<void()>& steps);

/// Times each GEMM shape (aten::mm / addmm: (m, k) x (k, n); aten::bmm: batch of them) alone on
/// contiguous float32 operands with the present threads, repeated for at least min_seconds, and
/// appends one "gemm" line per shape to `path`.
void time_gemm_shapes(const std::string& path, const std::vector<std::string>& shapes,
                      double min_seconds = 0.2);

}  // namespace sb::bench
