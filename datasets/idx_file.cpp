#include "datasets/idx_file.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "common/errors.h"

namespace sb::data {

namespace {

constexpr int kUnsignedByte = 0x08;  // IDX type code of unsigned bytes

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

/// Reads up to `n` bytes; returns how many came. A zlib error (corrupted stream, a gzip trailer
/// whose CRC does not match) throws naming the file.
int64_t read_bytes(gzFile file, const std::string& path, void* out, int64_t n) {
  auto* dst = static_cast<unsigned char*>(out);
  int64_t got = 0;
  while (got < n) {
    const auto want = static_cast<unsigned>(std::min<int64_t>(n - got, 1 << 30));
    const int r = gzread(file, dst + got, want);
    if (r < 0) {
      int code = 0;
      const char* msg = gzerror(file, &code);
      throw FormatError::described(
          path, "gzip",
          path + ": gzip: " + (msg ? msg : "read error") + " (corrupted compressed file)");
    }
    if (r == 0) break;
    got += r;
  }
  // End of input before n bytes: a truncated gzip stream reports it as an error too.
  if (got < n) {
    int code = 0;
    const char* msg = gzerror(file, &code);
    if (code != Z_OK && code != Z_STREAM_END && code != Z_BUF_ERROR)
      throw FormatError::described(
          path, "gzip",
          path + ": gzip: " + (msg ? msg : "read error") + " (corrupted compressed file)");
  }
  return got;
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? " x " : "") + std::to_string(dims[i]);
  return s;
}

}  // namespace

IdxArray read_idx(const std::string& path, int expected_ndims) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw FormatError::described(
        path, "",
        path + ": cannot open (" +
            (std::filesystem::exists(path, ec) ? "not a regular file" : "no such file") + ")");
  GzFile file(gzopen(path.c_str(), "rb"));
  if (!file)
    throw FormatError::described(path, "", path + ": cannot open (" + std::strerror(errno) + ")");
  gzbuffer(file.get(), 1 << 17);

  unsigned char magic[4];
  const auto got_magic = read_bytes(file.get(), path, magic, 4);
  if (got_magic < 4)
    throw FormatError(path, "magic", "4 bytes",
                      std::to_string(got_magic) + " (empty or truncated file)");
  const uint32_t expected_magic = (kUnsignedByte << 8) | static_cast<uint32_t>(expected_ndims);
  const uint32_t actual_magic = (uint32_t{magic[0]} << 24) | (uint32_t{magic[1]} << 16) |
                                (uint32_t{magic[2]} << 8) | uint32_t{magic[3]};
  if (actual_magic != expected_magic)
    throw FormatError(path, "magic",
                      hex32(expected_magic) + " (unsigned bytes, " +
                          std::to_string(expected_ndims) + " dimensions)",
                      hex32(actual_magic) + (magic[0] || magic[1] ? " (not an IDX file)" : ""));

  IdxArray out;
  int64_t total = 1;
  for (int i = 0; i < expected_ndims; ++i) {
    unsigned char b[4];
    const auto got = read_bytes(file.get(), path, b, 4);
    const std::string field = "dims[" + std::to_string(i) + "]";
    if (got < 4)
      throw FormatError(path, field, "4 bytes", std::to_string(got) + " (truncated file)");
    const int64_t dim =
        (int64_t{b[0]} << 24) | (int64_t{b[1]} << 16) | (int64_t{b[2]} << 8) | int64_t{b[3]};
    // 2^31 bytes would already be far beyond any MNIST-like file: refuse absurd headers before
    // allocating.
    if (dim <= 0 || total > (int64_t{1} << 31) / dim)
      throw InputError(path, field, "a size in [1, 2^31 / " + std::to_string(total) + "]",
                       std::to_string(dim));
    out.dims.push_back(dim);
    total *= dim;
  }
  // The data in blocks, the array growing with what the file holds: a header's claimed size
  // alone (up to 2^31 bytes) allocates nothing, a truncated file only what it has.
  constexpr int64_t kBlock = int64_t{1} << 20;
  int64_t got = 0;
  while (got < total) {
    const int64_t want = std::min(kBlock, total - got);
    out.data.resize(static_cast<size_t>(got + want));
    const int64_t n = read_bytes(file.get(), path, out.data.data() + got, want);
    got += n;
    if (n < want) break;
  }
  if (got < total)
    throw FormatError(path, "data", std::to_string(total) + " bytes (" + shape_text(out.dims) + ")",
                      std::to_string(got) + " (truncated file)");
  unsigned char extra = 0;
  if (read_bytes(file.get(), path, &extra, 1) != 0)
    throw FormatError::described(path, "data",
                                 path + ": data: expected the end of the file after " +
                                     std::to_string(total) + " bytes (" + shape_text(out.dims) +
                                     "), found more",
                                 "the end of the file after " + std::to_string(total) + " bytes");
  return out;
}

}  // namespace sb::data
