// libFuzzer harness: the .npy reader (analysis/npy_file.h). The input is a whole file: its header
// is parsed from memory (parse_npy_header), then the file is opened as NpyMatrix (dtype, shape
// and size checks, the mapping) and every row is read as float and as double, in blocks. A
// std::exception is the expected answer to a bad file; anything else (a crash, a sanitizer
// report, a leak, a timeout) is a finding.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string_view>
#include <vector>

#include "analysis/npy_file.h"
#include "fuzz/scratch_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    sb::analysis::parse_npy_header("fuzz.npy", bytes);
  } catch (const std::exception&) {
  }
  static sb::fuzz::ScratchFile file(".npy");
  try {
    const sb::analysis::NpyMatrix m(file.write(data, size));
    // The size check bounds rows * cols by the input's size: these buffers are small.
    const int64_t block = 7;  // not a divisor of most row counts: the last block is partial
    std::vector<float> f(static_cast<size_t>(block * m.cols()));
    std::vector<double> d(f.size());
    for (int64_t r = 0; r < m.rows(); r += block) {
      const int64_t n = std::min(block, m.rows() - r);
      m.read_rows(r, n, f.data());
      m.read_rows(r, n, d.data());
    }
  } catch (const std::exception&) {
  }
  return 0;
}
