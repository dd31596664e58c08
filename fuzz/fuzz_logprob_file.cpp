// libFuzzer harness: the HDF5 contract reader (contract/logprob_file.h). The input is a whole
// HDF5 file; it is opened as the analysis opens its input (Contract::allow_plain: a contract file
// is checked against the whole contract, a file without format_version read as plain), then the
// header, the first rows (float and double), the targets and the vocabulary are read. A
// std::exception is the expected answer to a bad file; anything else (a crash, a sanitizer
// report, a leak, a timeout) is a finding. Only our code is instrumented: libhdf5 is Debian's.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <vector>

#include "contract/logprob_file.h"
#include "fuzz/scratch_file.h"

// libhdf5 allocates what a corrupt header asks for (an object header of 2^59 bytes); glibc's
// malloc returns NULL for such a size and HDF5 reports an error, which our reader turns into an
// exception. ASan would abort instead: let its malloc return NULL too, as in a normal build.
// fuzz/hdf5_asan.supp, fuzz/hdf5_lsan.supp: libhdf5's own over-reads and the memory it keeps
// are not reported (see there). Its endless loops on some corrupt global heaps are timeouts that
// make fuzz/run_fuzzers.sh run this harness with -fork=1 -ignore_timeouts=1.
extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1:suppressions=" SB_FUZZ_HDF5_ASAN_SUPP;
}
extern "C" const char* __lsan_default_options() { return "suppressions=" SB_FUZZ_HDF5_LSAN_SUPP; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static sb::fuzz::ScratchFile file(".h5");
  try {
    const sb::contract::LogProbReader r(file.write(data, size),
                                        sb::contract::Contract::allow_plain);
    // The reader bounds T * M by what the file stores; the harness reads at most 64 rows, so that
    // a compressed file of many rows stays quick.
    const int64_t rows = std::min<int64_t>(r.rows(), 64);
    std::vector<float> f(static_cast<size_t>(rows * r.cols()));
    std::vector<double> d(f.size());
    r.read_rows(0, rows, f.data());
    r.read_rows(0, rows, d.data());
    if (!r.plain()) {
      if (static_cast<int64_t>(r.read_targets().size()) != r.rows()) __builtin_trap();
      if (r.has_vocab() && static_cast<int64_t>(r.read_vocab().size()) != r.cols())
        __builtin_trap();
    }
  } catch (const std::exception&) {
  }
  return 0;
}
