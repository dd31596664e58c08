#include "contract/hdf5_handles.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/byte_size.h"
#include "common/errors.h"

namespace sb::contract::h5 {

Handle& Handle::operator=(Handle&& o) noexcept {
  if (this != &o) {
    reset();
    id_ = o.id_;
    close_ = o.close_;
    o.id_ = H5I_INVALID_HID;
  }
  return *this;
}

void Handle::reset() { (void)close_now(); }

herr_t Handle::close_now() {
  herr_t status = 0;
  if (id_ >= 0 && close_) status = close_(id_);
  id_ = H5I_INVALID_HID;
  return status;
}

void quiet() {
  static const bool once = [] {
    H5dont_atexit();  // before the library initialises (header comment)
    return true;
  }();
  (void)once;
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

Handle open_file(const std::string& path, bool write) {
  quiet();
  if (access(path.c_str(), F_OK) != 0)
    throw FormatError::described(path, "", path + ": no such file");
  const hid_t id = H5Fopen(path.c_str(), write ? H5F_ACC_RDWR : H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0)
    throw FormatError::described(path, "",
                                 path + ": not a readable HDF5 file (truncated or corrupt?)");
  return Handle(id, H5Fclose);
}

Handle create_file(const std::string& path, const std::string& shown) {
  quiet();
  const hid_t id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (id < 0)
    throw WriteError(shown.empty() ? path : shown,
                     (shown.empty() ? path + ": cannot create HDF5 file"
                                    : shown + ": not written: cannot create " + path) +
                         "; is the directory writable and the disk not full?");
  return Handle(id, H5Fclose);
}

bool has_dataset(hid_t file, const std::string& name) {
  return H5Lexists(file, name.c_str(), H5P_DEFAULT) > 0;
}

Handle open_dataset(hid_t file, const std::string& name, const std::string& path) {
  if (!has_dataset(file, name))
    throw InputError::described(path, "dataset '" + name + "'",
                                path + ": dataset '" + name + "' is missing");
  const hid_t id = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
  if (id < 0)
    throw FormatError::described(path, "dataset '" + name + "'",
                                 path + ": cannot open dataset '" + name + "'");
  return Handle(id, H5Dclose);
}

bool has_attribute(hid_t obj, const std::string& name) { return H5Aexists(obj, name.c_str()) > 0; }

namespace {

void write_scalar(hid_t obj, const std::string& name, hid_t type, const void* value) {
  if (has_attribute(obj, name)) H5Adelete(obj, name.c_str());
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle attr(H5Acreate2(obj, name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!attr.valid() || H5Awrite(attr.get(), type, value) < 0)
    throw WriteError("", "cannot write attribute '" + name + "'");
}

// "(2,)", "(2, 3)": an attribute's shape in messages, as numpy prints it.
std::string shape_string(const std::vector<hsize_t>& d) {
  std::string s = "(";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + (d.size() == 1 ? ",)" : ")");
}

// Opens an attribute that must hold one value: a scalar (what h5py writes for f.attrs[k] = 3),
// or an array of exactly one element (h5py for f.attrs[k] = [3] or np.array([3]); MATLAB and
// other tools write those for scalars). Anything else would be read as its first element.
Handle open_attribute(hid_t obj, const std::string& name, const std::string& path) {
  const std::string field = "attribute '" + name + "'";
  if (!has_attribute(obj, name))
    throw InputError::described(path, field, path + ": attribute '" + name + "' is missing");
  Handle attr(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose);
  if (!attr.valid())
    throw FormatError::described(path, field, path + ": attribute '" + name + "' cannot be opened");
  Handle space(H5Aget_space(attr.get()), H5Sclose);
  if (!space.valid())
    throw FormatError::described(path, field,
                                 path + ": attribute '" + name + "': unreadable dataspace");
  const H5S_class_t kind = H5Sget_simple_extent_type(space.get());
  if (kind == H5S_NULL)
    throw InputError(path, field, "a scalar", "an empty attribute (h5py.Empty)");
  if (kind == H5S_SIMPLE && H5Sget_simple_extent_npoints(space.get()) != 1) {
    const int rank = H5Sget_simple_extent_ndims(space.get());
    std::vector<hsize_t> d(static_cast<size_t>(rank > 0 ? rank : 0));
    if (rank > 0) H5Sget_simple_extent_dims(space.get(), d.data(), nullptr);
    throw InputError(path, field, "a scalar", "shape " + shape_string(d));
  }
  return attr;
}

H5T_class_t attribute_class(hid_t attr) {
  Handle type(H5Aget_type(attr), H5Tclose);
  return H5Tget_class(type.get());
}

// What an attribute of the wrong class holds, for messages.
std::string class_name(H5T_class_t cls) {
  switch (cls) {
    case H5T_INTEGER:
      return "an integer";
    case H5T_FLOAT:
      return "a float";
    case H5T_STRING:
      return "a string";
    case H5T_ENUM:
      return "an enum (h5py writes numpy bools as one)";
    case H5T_COMPOUND:
      return "a compound type";
    case H5T_ARRAY:
      return "an array type";
    default:
      return "another HDF5 type class";
  }
}

void read_or_throw(herr_t status, const std::string& name, const std::string& path) {
  if (status < 0)
    throw FormatError::described(
        path, "attribute '" + name + "'",
        path + ": attribute '" + name + "': cannot be read (corrupt file?)");
}

}  // namespace

void write_attribute(hid_t obj, const std::string& name, int64_t value) {
  write_scalar(obj, name, H5T_NATIVE_INT64, &value);
}

void write_attribute(hid_t obj, const std::string& name, double value) {
  write_scalar(obj, name, H5T_NATIVE_DOUBLE, &value);
}

void write_attribute(hid_t obj, const std::string& name, const std::string& value) {
  // Variable-length UTF-8 strings: what h5py reads back as str.
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  const char* data = value.c_str();
  write_scalar(obj, name, type.get(), &data);
}

int64_t read_int_attribute(hid_t obj, const std::string& name, const std::string& path) {
  Handle attr = open_attribute(obj, name, path);
  const auto cls = attribute_class(attr.get());
  if (cls != H5T_INTEGER)
    throw InputError(path, "attribute '" + name + "'", "an integer", class_name(cls));
  int64_t value = 0;
  read_or_throw(H5Aread(attr.get(), H5T_NATIVE_INT64, &value), name, path);
  return value;
}

double read_double_attribute(hid_t obj, const std::string& name, const std::string& path) {
  Handle attr = open_attribute(obj, name, path);
  const auto cls = attribute_class(attr.get());
  if (cls != H5T_FLOAT && cls != H5T_INTEGER)
    throw InputError(path, "attribute '" + name + "'", "a number", class_name(cls));
  double value = 0;
  read_or_throw(H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &value), name, path);
  return value;
}

std::string read_string_attribute(hid_t obj, const std::string& name, const std::string& path) {
  Handle attr = open_attribute(obj, name, path);
  Handle type(H5Aget_type(attr.get()), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_STRING)
    throw InputError(path, "attribute '" + name + "'", "a string",
                     class_name(H5Tget_class(type.get())));
  if (H5Tis_variable_str(type.get()) > 0) {
    Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), H5Tget_cset(type.get()));
    char* data = nullptr;
    read_or_throw(H5Aread(attr.get(), mem.get(), &data), name, path);
    std::string out = data ? data : "";
    H5free_memory(data);
    return out;
  }
  // A fixed-length string's size is the file's word: no more than the file holds.
  const size_t size = H5Tget_size(type.get());
  hsize_t file_size = 0;
  if (H5Fget_filesize(obj, &file_size) < 0 || size == 0 || size > file_size)
    throw InputError(
        path, "attribute '" + name + "'",
        "a string of at most " + std::to_string(file_size) + " bytes (the file's size)",
        std::to_string(size));
  std::string out(size, '\0');
  read_or_throw(H5Aread(attr.get(), type.get(), out.data()), name, path);
  out.resize(std::strlen(out.c_str()));
  return out;
}

std::vector<hsize_t> dims(hid_t dataset) {
  Handle space(H5Dget_space(dataset), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  std::vector<hsize_t> d(static_cast<size_t>(rank > 0 ? rank : 0));
  if (rank > 0) H5Sget_simple_extent_dims(space.get(), d.data(), nullptr);
  return d;
}

void require_stored(hid_t dataset, const std::string& name, const std::string& path) {
  const std::string field = "dataset '/" + name + "' storage";
  {
    // An empty dataset has nothing to store (and HDF5 allocates nothing for it): the shape
    // checks of the reader name it (T or M below 1).
    Handle space(H5Dget_space(dataset), H5Sclose);
    if (space.valid() && H5Sget_simple_extent_npoints(space.get()) == 0) return;
  }
  H5D_space_status_t status{};
  if (H5Dget_space_status(dataset, &status) < 0 || status == H5D_SPACE_STATUS_NOT_ALLOCATED)
    throw InputError(path, field, "its elements written",
                     "no storage allocated (a dataset created but never written)");
  Handle file(H5Iget_file_id(dataset), H5Fclose);
  Handle type(H5Dget_type(dataset), H5Tclose);
  Handle space(H5Dget_space(dataset), H5Sclose);
  Handle plist(H5Dget_create_plist(dataset), H5Pclose);
  hsize_t file_size = 0;
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  const size_t size = H5Tget_size(type.get());
  const int filters = H5Pget_nfilters(plist.get());
  if (H5Fget_filesize(file.get(), &file_size) < 0 || n < 0 || size == 0 || filters < 0)
    throw FormatError(path, field, "a readable layout", "a corrupt one");
  const hsize_t stored = H5Dget_storage_size(dataset);
  // Uncompressed, every element takes its size in the file. Compressed, no filter HDF5 ships
  // with expands its bytes more than deflate's 1032:1 (real files: far less).
  constexpr double kMaxRatio = 1032;
  const double needed =
      static_cast<double>(n) * static_cast<double>(size) / (filters == 0 ? 1 : kMaxRatio);
  if (stored > file_size || static_cast<double>(stored) < needed)
    throw FormatError(path, field,
                      std::to_string(n) + " elements of " + std::to_string(size) + " bytes" +
                          (filters == 0 ? "" : " (compressed at most 1032:1)") +
                          " stored in a file of " + std::to_string(file_size) + " bytes",
                      std::to_string(stored) + " bytes stored");
}

void write_vector(hid_t file, const std::string& name, const std::vector<double>& values) {
  const hsize_t n = values.size();
  Handle space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  Handle ds(H5Dcreate2(file, name.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                       H5P_DEFAULT),
            H5Dclose);
  if (!ds.valid() ||
      H5Dwrite(ds.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
    throw WriteError("", "cannot write dataset '" + name + "'");
}

void write_strings(hid_t file, const std::string& name, const std::vector<std::string>& values) {
  const hsize_t n = values.size();
  Handle space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  Handle ds(H5Dcreate2(file, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT,
                       H5P_DEFAULT),
            H5Dclose);
  std::vector<const char*> ptrs;
  ptrs.reserve(values.size());
  for (const auto& v : values) ptrs.push_back(v.c_str());
  if (!ds.valid() || H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) < 0)
    throw WriteError("", "cannot write dataset '" + name + "'");
}

std::vector<std::string> read_strings(hid_t file, const std::string& name,
                                      const std::string& path) {
  Handle ds = open_dataset(file, name, path);
  Handle ftype(H5Dget_type(ds.get()), H5Tclose);
  if (H5Tget_class(ftype.get()) != H5T_STRING)
    throw InputError(path, "dataset '/" + name + "' dtype", "strings");
  const auto d = dims(ds.get());
  if (d.size() != 1)
    throw InputError(path, "dataset '/" + name + "' rank", "1", std::to_string(d.size()));
  std::vector<std::string> out(d[0]);
  if (H5Tis_variable_str(ftype.get()) > 0) {
    Handle mtype(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mtype.get(), H5T_VARIABLE);
    H5Tset_cset(mtype.get(), H5Tget_cset(ftype.get()));
    std::vector<char*> ptrs(d[0], nullptr);
    if (H5Dread(ds.get(), mtype.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()) < 0)
      throw FormatError::described(path, "dataset '/" + name + "'",
                                   path + ": reading dataset '/" + name + "' failed");
    for (size_t i = 0; i < ptrs.size(); ++i) out[i] = ptrs[i] ? ptrs[i] : "";
    Handle space(H5Dget_space(ds.get()), H5Sclose);
    H5Dvlen_reclaim(mtype.get(), space.get(), H5P_DEFAULT, ptrs.data());
  } else {
    const size_t width = H5Tget_size(ftype.get());
    std::vector<char> buf(width * d[0]);
    if (H5Dread(ds.get(), ftype.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) < 0)
      throw FormatError::described(path, "dataset '/" + name + "'",
                                   path + ": reading dataset '/" + name + "' failed");
    for (size_t i = 0; i < d[0]; ++i) {
      const char* s = buf.data() + i * width;
      out[i] = std::string(s, strnlen(s, width));
    }
  }
  return out;
}

Handle create_group(hid_t file, const std::string& name) {
  Handle group(H5Gcreate2(file, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  if (!group.valid()) throw WriteError("", "cannot create group '" + name + "'");
  return group;
}

namespace {
void write_typed(hid_t file, const std::string& name, const std::vector<hsize_t>& dims,
                 hid_t file_type, hid_t memory_type, const void* values) {
  Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  Handle ds(
      H5Dcreate2(file, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose);
  if (!ds.valid() || H5Dwrite(ds.get(), memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) < 0)
    throw WriteError("", "cannot write dataset '" + name + "'");
}
}  // namespace

void write_array(hid_t file, const std::string& name, const std::vector<hsize_t>& dims,
                 const float* values) {
  write_typed(file, name, dims, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, values);
}

void write_array(hid_t file, const std::string& name, const std::vector<hsize_t>& dims,
                 const int64_t* values) {
  write_typed(file, name, dims, H5T_STD_I64LE, H5T_NATIVE_INT64, values);
}

Handle create_dataset(hid_t file, const std::string& name, hid_t file_type,
                      const std::vector<hsize_t>& dims, const std::vector<hsize_t>& chunk,
                      const std::string& path) {
  Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  Handle plist(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  const bool ok = space.valid() && plist.valid() &&
                  (chunk.empty() ||
                   H5Pset_chunk(plist.get(), static_cast<int>(chunk.size()), chunk.data()) >= 0);
  Handle ds(ok ? H5Dcreate2(file, name.c_str(), file_type, space.get(), H5P_DEFAULT, plist.get(),
                            H5P_DEFAULT)
               : H5I_INVALID_HID,
            H5Dclose);
  if (!ds.valid()) throw WriteError(path, path + ": cannot create dataset '/" + name + "'");
  return ds;
}

RowSlab select_rows(hid_t dataset, hsize_t begin, hsize_t count, const std::string& path) {
  const auto d = dims(dataset);
  const hsize_t start[2] = {begin, 0};
  const hsize_t n[2] = {count, d.size() > 1 ? d[1] : 1};
  const int rank = d.size() > 1 ? 2 : 1;
  RowSlab slab{Handle(H5Dget_space(dataset), H5Sclose),
               Handle(H5Screate_simple(rank, n, nullptr), H5Sclose)};
  if (!slab.file_space.valid() || !slab.memory_space.valid() ||
      H5Sselect_hyperslab(slab.file_space.get(), H5S_SELECT_SET, start, nullptr, n, nullptr) < 0)
    throw FormatError::described(path, "rows",
                                 path + ": cannot select rows " + std::to_string(begin) + ".." +
                                     std::to_string(begin + count));
  return slab;
}

bool write_slab(hid_t dataset, hid_t memory_type, const RowSlab& slab, const void* values) {
  return H5Dwrite(dataset, memory_type, slab.memory_space.get(), slab.file_space.get(), H5P_DEFAULT,
                  values) >= 0;
}

bool read_slab(hid_t dataset, hid_t memory_type, const RowSlab& slab, void* out) {
  return H5Dread(dataset, memory_type, slab.memory_space.get(), slab.file_space.get(), H5P_DEFAULT,
                 out) >= 0;
}

void advise_will_need(hid_t file, hid_t dataset, hsize_t from, hsize_t to, hsize_t row_bytes) {
  if (from >= to) return;
  Handle access(H5Fget_access_plist(file), H5Pclose);
  if (!access.valid() || H5Pget_driver(access.get()) != H5FD_SEC2) return;
  void* handle = nullptr;
  if (H5Fget_vfd_handle(file, H5P_DEFAULT, &handle) < 0 || handle == nullptr) return;
  const int fd = *static_cast<int*>(handle);
  Handle create(H5Dget_create_plist(dataset), H5Pclose);
  if (!create.valid()) return;
  haddr_t first = HADDR_UNDEF, last = HADDR_UNDEF;
  hsize_t last_size = 0;
  switch (H5Pget_layout(create.get())) {
    case H5D_CONTIGUOUS:
      first = H5Dget_offset(dataset);
      if (first == HADDR_UNDEF) return;
      first += from * row_bytes;
      last = first;
      last_size = (to - from) * row_bytes;
      break;
    case H5D_CHUNKED: {
      unsigned mask = 0;
      hsize_t size = 0;
      const hsize_t a[2] = {from, 0}, b[2] = {to - 1, 0};
      if (H5Dget_chunk_info_by_coord(dataset, a, &mask, &first, &size) < 0 ||
          H5Dget_chunk_info_by_coord(dataset, b, &mask, &last, &last_size) < 0)
        return;
      break;
    }
    default:
      return;
  }
  if (first == HADDR_UNDEF || last == HADDR_UNDEF || last < first) return;
  // In pieces: Linux reads at most max(read_ahead_kb, the device's io size) per call (often
  // 128 KiB), however many bytes the call names.
  constexpr haddr_t kPiece = haddr_t{1} << 20;
  for (haddr_t at = first, end = last + last_size; at < end; at += kPiece)
    (void)posix_fadvise(fd, static_cast<off_t>(at), static_cast<off_t>(std::min(kPiece, end - at)),
                        POSIX_FADV_WILLNEED);
}

bool read_all(hid_t dataset, hid_t memory_type, void* out) {
  return H5Dread(dataset, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) >= 0;
}

ElementType element_type(hid_t dataset) {
  Handle type(H5Dget_type(dataset), H5Tclose);
  if (!type.valid()) return {};
  return {H5Tget_class(type.get()), H5Tget_size(type.get())};
}

void require_free_space(const std::string& path, double bytes, const std::string& what) {
  const char* skip = std::getenv("SB_SKIP_SPACE_CHECK");
  if (skip != nullptr && std::string(skip) == "1") return;
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::absolute(path, ec).parent_path();
  if (ec) return;
  const std::filesystem::space_info info = std::filesystem::space(dir, ec);
  if (ec) return;
  const auto available = static_cast<double>(info.available);
  if (available < bytes)
    throw WriteError::described(path, path + ": not written: it needs " + format_bytes(bytes) +
                                          " (" + what + "), the filesystem has " +
                                          format_bytes(available) + " free");
}

std::string temporary_path(const std::string& path) {
  return path + ".tmp." + std::to_string(getpid());
}

void finish_file(Handle& file, const std::string& tmp, const std::string& path) {
  const auto fail = [&](const std::string& what, int err) {
    throw WriteError(path, path + ": not written: " + what +
                               (err ? std::string(" (") + std::strerror(err) + ")" : "") +
                               "; is the disk full?");
  };
  if (H5Fflush(file.get(), H5F_SCOPE_GLOBAL) < 0) fail("HDF5 could not flush the file", 0);
  if (file.close_now() < 0) fail("HDF5 could not close the file", 0);
  const int fd = ::open(tmp.c_str(), O_RDONLY);
  if (fd < 0) fail("cannot reopen " + tmp, errno);
  const int synced = ::fsync(fd), err = errno;
  if (::close(fd) != 0 || synced != 0) fail("fsync failed", synced != 0 ? err : errno);
  commit_file(tmp, path);
}

void commit_file(const std::string& tmp, const std::string& path) {
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw WriteError::described(
        path, "cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
}

}  // namespace sb::contract::h5
