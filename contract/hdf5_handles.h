#pragma once
// Thin RAII over the HDF5 C API (hid_t handles) plus typed attribute helpers, for the two file
// formats of this folder (logprob_file.h, rank_result.h). Errors are typed (common/errors.h):
// sb::InputError / sb::FormatError naming the file and the object, sb::WriteError for an output;
// HDF5's own error stack printing is switched off.

#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sb::contract::h5 {

/// Owns one hid_t and closes it with the right H5?close.
class Handle {
 public:
  Handle() = default;
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = H5I_INVALID_HID; }
  Handle& operator=(Handle&& o) noexcept;
  ~Handle() { reset(); }
  void reset();
  /// Closes now and returns the close function's status (< 0: it failed, e.g. a full disk).
  herr_t close_now();
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  hid_t id_ = H5I_INVALID_HID;
  herr_t (*close_)(hid_t) = nullptr;
};

/// Silences HDF5's automatic error printing for the process (we report errors ourselves), and
/// before the library's first use keeps it from closing files at exit (H5dont_atexit): a file
/// whose writes or close failed (a full disk) stays in HDF5's table, and closing it again at exit
/// crashes HDF5 1.10 (a segmentation fault after the program has reported the error). Every
/// file we write is closed explicitly (finish_file) or abandoned with its temporary removed.
void quiet();

Handle open_file(const std::string& path, bool write);
/// Creates (truncates) `path`; errors name `shown` (the final name of a temporary file) when given.
Handle create_file(const std::string& path, const std::string& shown = "");
bool has_dataset(hid_t file, const std::string& name);
Handle open_dataset(hid_t file, const std::string& name, const std::string& path_for_errors);

bool has_attribute(hid_t obj, const std::string& name);
void write_attribute(hid_t obj, const std::string& name, int64_t value);
void write_attribute(hid_t obj, const std::string& name, double value);
void write_attribute(hid_t obj, const std::string& name, const std::string& value);
/// Readers throw "<path>: attribute '<name>' ..." when missing, of the wrong class, or not one
/// value: a scalar or a 1-element array (h5py's f.attrs[k] = [3]) is read; shape (2,) is refused.
int64_t read_int_attribute(hid_t obj, const std::string& name, const std::string& path);
double read_double_attribute(hid_t obj, const std::string& name, const std::string& path);
std::string read_string_attribute(hid_t obj, const std::string& name, const std::string& path);

/// Dimensions of a dataset's dataspace.
std::vector<hsize_t> dims(hid_t dataset);

/// Throws "<path>: dataset '/<name>' storage: expected ..." unless `dataset`'s elements are
/// stored in the file: storage allocated (not only fill values), no more than the file holds, and
/// as large as the shape (uncompressed) or 1/1032 of it (compressed). A header may claim any
/// shape; this bounds what a reader allocates for the dataset by the file's size.
void require_stored(hid_t dataset, const std::string& name, const std::string& path);

/// Writes a whole 1-D float64 dataset.
void write_vector(hid_t file, const std::string& name, const std::vector<double>& values);

/// Writes a whole 1-D dataset of variable-length UTF-8 strings.
void write_strings(hid_t file, const std::string& name, const std::vector<std::string>& values);
/// Reads a whole 1-D string dataset (variable or fixed length); errors name `path` and the field.
std::vector<std::string> read_strings(hid_t file, const std::string& name, const std::string& path);
/// Creates group `name` (its parent must exist).
Handle create_group(hid_t file, const std::string& name);
/// Writes a whole N-D dataset, row-major (dims[0] varies slowest): float32 or int64 values.
void write_array(hid_t file, const std::string& name, const std::vector<hsize_t>& dims,
                 const float* values);
void write_array(hid_t file, const std::string& name, const std::vector<hsize_t>& dims,
                 const int64_t* values);

/// Creates dataset `name` of `file_type` with `dims`, chunked by `chunk` (empty: contiguous);
/// throws sb::WriteError naming `path` and the dataset when any step fails.
Handle create_dataset(hid_t file, const std::string& name, hid_t file_type,
                      const std::vector<hsize_t>& dims, const std::vector<hsize_t>& chunk,
                      const std::string& path);

/// Rows [begin, begin + count) of a 1-D or 2-D dataset (every column): its file space with the
/// rows selected and a memory space of their shape. Throws sb::FormatError naming `path` and the
/// dataset when a step fails (rows outside the dataset).
struct RowSlab {
  Handle file_space, memory_space;
};
RowSlab select_rows(hid_t dataset, hsize_t begin, hsize_t count, const std::string& path);
/// H5Dwrite / H5Dread of a slab in `memory_type`; false when HDF5 reports a failure (the caller
/// names the file and what it means: a full disk when writing, a truncated file when reading).
[[nodiscard]] bool write_slab(hid_t dataset, hid_t memory_type, const RowSlab& slab,
                              const void* values);
[[nodiscard]] bool read_slab(hid_t dataset, hid_t memory_type, const RowSlab& slab, void* out);
/// Asks the kernel to start reading, in the background, the file bytes that hold rows [from, to)
/// of a 2-D dataset (posix_fadvise POSIX_FADV_WILLNEED): contiguous storage, or chunks stored in
/// row order. A hint: nothing happens for another file driver, a layout it cannot place, or a
/// failing call.
void advise_will_need(hid_t file, hid_t dataset, hsize_t from, hsize_t to, hsize_t row_bytes);
/// H5Dread of a whole dataset; false on failure.
[[nodiscard]] bool read_all(hid_t dataset, hid_t memory_type, void* out);

/// A dataset's element type: its class and size in bytes.
struct ElementType {
  H5T_class_t type_class = H5T_NO_CLASS;
  size_t size = 0;
};
ElementType element_type(hid_t dataset);

/// Throws sb::WriteError "<path>: not written: it needs <X> (<what>), the filesystem has <Y>
/// free" when the filesystem holding `path` has less than `bytes` available to this user, before
/// anything is created (a full-test WikiText-2 dump is 32.7 GB: better refused at its start than
/// at row 180000). Unknown free space (statvfs fails) passes: the write itself then says. The
/// environment variable SB_SKIP_SPACE_CHECK=1 skips it (the tests of a disk that fills
/// mid-write).
void require_free_space(const std::string& path, double bytes, const std::string& what);

/// "path.tmp.<pid>": where outputs are written before the atomic rename into `path`.
std::string temporary_path(const std::string& path);
/// rename(2) tmp -> path, throwing with both names on failure.
void commit_file(const std::string& tmp, const std::string& path);
/// The end of every HDF5 write: flush, close (both checked: a full disk or an I/O error fails
/// here, not silently), fsync(2) the temporary file, then commit_file. Throws naming `path` and
/// leaves `tmp` for the caller to remove; nothing is renamed unless every step succeeded.
void finish_file(Handle& file, const std::string& tmp, const std::string& path);

}  // namespace sb::contract::h5
