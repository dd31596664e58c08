// libFuzzer harness: the IDX reader (datasets/idx_file.h), plain or gzip-compressed. The input is
// a whole file; the dimensions read_idx expects come from its magic number's last byte when that
// is 1 to 4 (the fuzzer then explores 1-D label files and 3-D image files alike), else 3. A
// std::exception is the expected answer to a bad file; anything else (a crash, a sanitizer
// report, a leak, a timeout, an allocation past -malloc_limit_mb) is a finding.

#include <cstddef>
#include <cstdint>
#include <exception>

#include "datasets/idx_file.h"
#include "fuzz/scratch_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static sb::fuzz::ScratchFile file(".idx");
  const int ndims = size >= 4 && data[3] >= 1 && data[3] <= 4 ? data[3] : 3;
  try {
    const auto array = sb::data::read_idx(file.write(data, size), ndims);
    // What the image datasets rely on: dims as asked, data = product of dims bytes.
    int64_t total = 1;
    for (const auto d : array.dims) total *= d;
    if (static_cast<int>(array.dims.size()) != ndims ||
        static_cast<int64_t>(array.data.size()) != total)
      __builtin_trap();
  } catch (const std::exception&) {
  }
  return 0;
}
