#pragma once
// A MatrixSource over a matrix already in memory (a numpy array handed over by the Python module,
// python/sbrank_module.cpp): T x M float32 or float64 elements at any strides, so a C-order
// array, a Fortran-order view (the transpose of the paper's M x T A-hat) and a memory-mapped
// .npy (numpy.memmap) are all read where they lie, without a copy. Row blocks are gathered as
// every other source hands them out: row-major, converted to the reader's type.

#include <cstdint>
#include <string>

#include "analysis/matrix_source.h"

namespace sb::analysis {

/// What the array is: its first element, shape, strides in bytes (any sign) and element type.
struct ArrayView {
  const void* data = nullptr;
  int64_t rows = 0, cols = 0;
  int64_t row_stride = 0, col_stride = 0;  ///< bytes between (r, c) and (r + 1, c) / (r, c + 1)
  bool float64 = false;
  std::string name = "<array>";  ///< names the array in messages
  std::string input;             ///< what the rows hold, if the caller knows: logprobs | logits
};

class ArraySource final : public MatrixSource {
 public:
  /// Throws sb::InputError "<name>: ..." for a null pointer with elements, or zero rows or
  /// columns (as the file readers refuse them); sb::OptionError for an input other than logprobs
  /// or logits.
  explicit ArraySource(ArrayView view);
  const std::string& path() const override { return view_.name; }
  int64_t rows() const override { return view_.rows; }
  int64_t cols() const override { return view_.cols; }
  bool float64() const override { return view_.float64; }
  const contract::LogProbHeader* header() const override { return nullptr; }
  std::string data_name() const override { return "the array"; }
  std::string plain_kind() const override { return "an array"; }
  std::string declared_input() const override { return view_.input; }
  void read_rows(int64_t begin, int64_t count, float* out) const override;
  void read_rows(int64_t begin, int64_t count, double* out) const override;

 private:
  template <class Out>
  void gather(int64_t begin, int64_t count, Out* out) const;
  ArrayView view_;
};

}  // namespace sb::analysis
