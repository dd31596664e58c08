#pragma once
// The matrix a rank analysis reads, whatever file holds it: T rows (tokens), M columns
// (vocabulary), the element dtype, and row blocks on request. Two kinds of file:
//   HDF5 (logprob_file.h): a contract file, or a plain one (a 2-D /log_probs and no
//         format_version attribute), float32 or float64;
//   .npy  (npy_file.h): numpy's format, float32 or float64, C or Fortran order, memory-mapped.

#include <cstdint>
#include <memory>
#include <string>

#include "contract/logprob_file.h"

namespace sb::analysis {

class MatrixSource {
 public:
  virtual ~MatrixSource() = default;
  virtual const std::string& path() const = 0;
  virtual int64_t rows() const = 0;  ///< T
  virtual int64_t cols() const = 0;  ///< M
  virtual bool float64() const = 0;  ///< element dtype as stored: float64, else float32
  /// The contract header (head, d, bias, dataset, ...), or nullptr for a plain matrix.
  virtual const contract::LogProbHeader* header() const = 0;
  /// Names the data in messages: "/log_probs", "the array".
  virtual std::string data_name() const = 0;
  /// Names a plain file's kind in messages: "a .npy file", "an HDF5 file without format_version".
  virtual std::string plain_kind() const = 0;
  /// What the file says its rows hold: "logprobs", "logits" (the HDF5 attribute 'input', on
  /// contract and plain files alike), or "" when it says nothing (every .npy).
  virtual std::string declared_input() const { return ""; }
  /// The file's attribute 'final_norm' (contract and plain HDF5 alike), "" when it has none.
  virtual std::string declared_final_norm() const { return ""; }
  /// Rows [begin, begin + count) into out (count x M, row-major), converted to the out type.
  virtual void read_rows(int64_t begin, int64_t count, float* out) const = 0;
  virtual void read_rows(int64_t begin, int64_t count, double* out) const = 0;
};

/// A MatrixSource over another one (a decorator: a row share, a check on the rows read) that
/// answers every question with the inner source's answer; a subclass overrides what it changes
/// (rows(), read_rows) and reads the inner source through inner().
class ForwardingSource : public MatrixSource {
 public:
  explicit ForwardingSource(const MatrixSource& inner) : inner_(inner) {}
  const std::string& path() const override { return inner_.path(); }
  int64_t rows() const override { return inner_.rows(); }
  int64_t cols() const override { return inner_.cols(); }
  bool float64() const override { return inner_.float64(); }
  const contract::LogProbHeader* header() const override { return inner_.header(); }
  std::string data_name() const override { return inner_.data_name(); }
  std::string plain_kind() const override { return inner_.plain_kind(); }
  std::string declared_input() const override { return inner_.declared_input(); }
  std::string declared_final_norm() const override { return inner_.declared_final_norm(); }

 protected:
  const MatrixSource& inner() const { return inner_; }

 private:
  const MatrixSource& inner_;
};

/// Opens `path` by its first bytes: the .npy magic (or, for the magic's own error, a name ending
/// in .npy) gives a .npy matrix, a zip archive (.npz, torch.save) an error, anything else an
/// HDF5 file read with Contract::allow_plain.
/// Throws sb::FormatError "<path>: ..." (no such file, not a regular file, not HDF5 / .npy) and
/// each reader's validation errors (sb::InputError).
std::unique_ptr<MatrixSource> open_matrix(const std::string& path);

}  // namespace sb::analysis
