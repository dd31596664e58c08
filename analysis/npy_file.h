#pragma once
// A 2-D float32/float64 .npy file (numpy's np.save), memory-mapped and read in row blocks: the
// way a PyTorch or JAX user hands a log-output matrix to the analysis without our HDF5 contract.
//
// Format (NPY spec, versions 1.0, 2.0, 3.0): the magic "\x93NUMPY", a major and a minor version
// byte, the header length (uint16 LE in 1.0; uint32 LE in 2.0 and 3.0), then the header, a
// Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (T, M), } padded with
// spaces to the data's alignment, then the raw T * M elements. 3.0 only allows UTF-8 in the
// header; our keys and values are ASCII either way.
//
// Accepted: descr '<f4' or '<f8' (little-endian float32/float64), 2-D shape with both sizes
// >= 1, fortran_order True or False, a file of exactly header + T * M * itemsize bytes. Anything
// else throws "<path>: <field>: expected ..., got ...": sb::FormatError for a file that is not a
// whole .npy file, sb::InputError for a dtype or shape the analysis does not take.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sb::analysis {

/// The parsed header of a .npy file.
struct NpyHeader {
  int major = 0, minor = 0;  ///< format version
  std::string descr;         ///< numpy's dtype string, e.g. "<f4"; "[...]" for a structured dtype
  bool fortran_order = false;
  std::vector<int64_t> shape;
  int64_t data_offset = 0;  ///< bytes before the first element
};

/// Parses the preamble and header dict of `file`, the whole file's bytes (a shorter view is
/// reported as a truncated file). `path` names the file in errors.
NpyHeader parse_npy_header(const std::string& path, std::string_view file);

/// True when `bytes` starts with the .npy magic string.
bool has_npy_magic(std::string_view bytes);

/// A validated, memory-mapped 2-D float .npy matrix. Rows are read in blocks and the mapping
/// behind each block is released after it is copied (madvise), so resident memory stays one
/// block whatever the file's size, as with the HDF5 reader.
class NpyMatrix {
 public:
  explicit NpyMatrix(std::string path);
  ~NpyMatrix();
  NpyMatrix(const NpyMatrix&) = delete;
  NpyMatrix& operator=(const NpyMatrix&) = delete;

  const std::string& path() const { return path_; }
  const NpyHeader& header() const { return header_; }
  int64_t rows() const { return header_.shape[0]; }
  int64_t cols() const { return header_.shape[1]; }
  bool float64() const { return itemsize_ == 8; }
  /// Rows [begin, begin + count) into out (count x cols, row-major), converted to the out type.
  void read_rows(int64_t begin, int64_t count, float* out) const;
  void read_rows(int64_t begin, int64_t count, double* out) const;

 private:
  template <class Out>
  void read_block(int64_t begin, int64_t count, Out* out) const;
  void release(int64_t run_start, int64_t end_byte) const;

  std::string path_;
  NpyHeader header_;
  int64_t itemsize_ = 0;
  int64_t file_size_ = 0;
  char* map_ = nullptr;  // the whole file, read-only
};

}  // namespace sb::analysis
