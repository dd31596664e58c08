#include "analysis/matrix_source.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

#include "analysis/npy_file.h"
#include "common/errors.h"

namespace sb::analysis {
namespace {

/// A MatrixSource over a reader that has path(), rows(), cols(), float64() and read_rows into
/// float and double buffers (contract::LogProbReader, NpyMatrix).
template <class Reader>
class ReaderSource : public MatrixSource {
 public:
  template <class... Args>
  explicit ReaderSource(Args&&... args) : reader_(std::forward<Args>(args)...) {}
  const std::string& path() const override { return reader_.path(); }
  int64_t rows() const override { return reader_.rows(); }
  int64_t cols() const override { return reader_.cols(); }
  bool float64() const override { return reader_.float64(); }
  void read_rows(int64_t begin, int64_t count, float* out) const override {
    reader_.read_rows(begin, count, out);
  }
  void read_rows(int64_t begin, int64_t count, double* out) const override {
    reader_.read_rows(begin, count, out);
  }

 protected:
  Reader reader_;
};

class Hdf5Source final : public ReaderSource<contract::LogProbReader> {
 public:
  explicit Hdf5Source(const std::string& path)
      : ReaderSource(path, contract::Contract::allow_plain) {}
  const contract::LogProbHeader* header() const override {
    return reader_.plain() ? nullptr : &reader_.header();
  }
  std::string data_name() const override { return "/log_probs"; }
  std::string plain_kind() const override { return "an HDF5 file without format_version"; }
  std::string declared_input() const override { return reader_.header().input; }
  std::string declared_final_norm() const override { return reader_.header().final_norm; }
};

class NpySource final : public ReaderSource<NpyMatrix> {
 public:
  explicit NpySource(const std::string& path) : ReaderSource(path) {}
  const contract::LogProbHeader* header() const override { return nullptr; }
  std::string data_name() const override { return "the array"; }
  std::string plain_kind() const override { return "a .npy file"; }
};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::unique_ptr<MatrixSource> open_matrix(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    const int err = errno;  // before the strings below allocate
    throw FormatError::described(
        path, "", path + ": " + (err == ENOENT ? std::string("no such file") : std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) throw FormatError::described(path, "", path + ": not a regular file");
  std::string first(8, '\0');
  std::ifstream in(path, std::ios::binary);
  in.read(first.data(), static_cast<std::streamsize>(first.size()));
  first.resize(static_cast<size_t>(in.gcount()));
  if (has_npy_magic(first) || ends_with(path, ".npy")) return std::make_unique<NpySource>(path);
  if (first.rfind("PK\x03\x04", 0) == 0)  // what np.savez and torch.save write
    throw FormatError(path, "format", "an HDF5 or .npy file",
                      "a zip archive (np.savez or torch.save?): save the matrix with "
                      "np.save(path, array)");
  return std::make_unique<Hdf5Source>(path);
}

}  // namespace sb::analysis
