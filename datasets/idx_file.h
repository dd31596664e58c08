#pragma once
// The IDX format of MNIST and Fashion-MNIST (LeCun et al., http://yann.lecun.com/exdb/mnist/):
// a 4-byte magic number 0x00 0x00 <type> <number of dimensions>, each dimension as a big-endian
// uint32, then the data in row-major order. Files may be gzip-compressed (.gz, as distributed)
// or plain: zlib reads both. Only type 0x08 (unsigned byte), the type of every MNIST file, is
// read. LibTorch-free.

#include <cstdint>
#include <string>
#include <vector>

namespace sb::data {

struct IdxArray {
  std::vector<int64_t> dims;  ///< e.g. (60000, 28, 28) for images, (60000) for labels
  std::vector<uint8_t> data;  ///< prod(dims) bytes, row-major
};

/// Reads an IDX file of unsigned bytes with `expected_ndims` dimensions. Every problem throws
/// sb::FormatError (sb::InputError for an absurd dimension) in one line naming the file and the
/// field, with the expected and the actual value:
/// "<path>: magic: expected 0x00000803 (unsigned bytes, 3 dimensions), got 0x00000801",
/// "<path>: data: expected 47040000 bytes (60000 x 28 x 28), got 1000 (truncated file)",
/// "<path>: data: expected the end of the file after 47040000 bytes, found more",
/// "<path>: gzip: ..." (a corrupted compressed stream), "<path>: cannot open (...)".
IdxArray read_idx(const std::string& path, int expected_ndims);

}  // namespace sb::data
