#include "analysis/npy_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>

#include "common/errors.h"

namespace sb::analysis {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

// Not a .npy file at all (magic, version, header, size): "<path>: <field>: expected ..., got ...".
[[noreturn]] void fail(const std::string& path, const std::string& field,
                       const std::string& expected, const std::string& got) {
  throw FormatError(path, field, expected, got);
}

// A .npy file whose array is not the analysis's (dtype, shape): the same line, an InputError.
[[noreturn]] void refuse(const std::string& path, const std::string& field,
                         const std::string& expected, const std::string& got) {
  throw InputError(path, field, expected, got);
}

// Printable form of raw bytes for messages: "\x93NUMPY", "PK\x03\x04".
std::string escaped(std::string_view bytes) {
  std::string out = "\"";
  for (const char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += ch;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out + "\"";
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

// The header dict: a Python literal with string keys and values that are strings, True/False,
// tuples of integers, or (descr of a structured dtype) a list, which is kept as its text.
class DictParser {
 public:
  DictParser(std::string_view text, const std::string& path) : s_(text), path_(path) {}

  NpyHeader parse() {
    NpyHeader h;
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (true) {
      skip_ws();
      if (peek() == '}') break;
      const std::string key = string_literal();
      expect(':');
      skip_ws();
      if (key == "descr") {
        h.descr = peek() == '[' ? balanced() : string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        const std::string v = identifier();
        if (v != "True" && v != "False") malformed();
        h.fortran_order = v == "True";
        have_order = true;
      } else if (key == "shape") {
        h.shape = int_tuple();
        have_shape = true;
      } else {
        fail(path_, "header", "the keys 'descr', 'fortran_order', 'shape'", "key '" + key + "'");
      }
      skip_ws();
      if (peek() == ',') ++i_;
    }
    for (const auto& [have, key] :
         {std::pair{have_descr, "descr"}, {have_order, "fortran_order"}, {have_shape, "shape"}})
      if (!have) fail(path_, "header", std::string("a key '") + key + "'", "none");
    return h;
  }

 private:
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  void expect(char c) {
    skip_ws();
    if (peek() != c) malformed();
    ++i_;
  }
  [[noreturn]] void malformed() const {
    std::string text(s_.substr(0, 200));
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    fail(path_, "header", "a dict {'descr': ..., 'fortran_order': ..., 'shape': (...)}",
         escaped(text));
  }
  std::string string_literal() {
    const char quote = peek();
    if (quote != '\'' && quote != '"') malformed();
    const size_t end = s_.find(quote, i_ + 1);
    if (end == std::string_view::npos) malformed();
    std::string v(s_.substr(i_ + 1, end - i_ - 1));
    i_ = end + 1;
    return v;
  }
  std::string identifier() {
    const size_t start = i_;
    while (std::isalpha(static_cast<unsigned char>(peek()))) ++i_;
    return std::string(s_.substr(start, i_ - start));
  }
  std::vector<int64_t> int_tuple() {
    expect('(');
    std::vector<int64_t> v;
    while (true) {
      skip_ws();
      if (peek() == ')') break;
      if (!std::isdigit(static_cast<unsigned char>(peek()))) malformed();
      int64_t x = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        const int digit = s_[i_++] - '0';
        if (x > (std::numeric_limits<int64_t>::max() - digit) / 10) malformed();
        x = 10 * x + digit;
      }
      if (peek() == 'L') ++i_;  // Python 2's long literals, in files written by old numpy
      v.push_back(x);
      skip_ws();
      if (peek() == ',')
        ++i_;
      else if (peek() != ')')
        malformed();
    }
    ++i_;
    return v;
  }
  // A bracketed expression (a structured dtype's field list), returned as written.
  std::string balanced() {
    const size_t start = i_;
    int depth = 0;
    do {
      const char c = peek();
      if (c == '\0') malformed();
      if (c == '\'' || c == '"') {
        string_literal();
        continue;
      }
      if (c == '[' || c == '(') ++depth;
      if (c == ']' || c == ')') --depth;
      ++i_;
    } while (depth > 0);
    return std::string(s_.substr(start, i_ - start));
  }

  std::string_view s_;
  const std::string& path_;
  size_t i_ = 0;
};

// What a rejected descr is, for the message; numpy's dtype strings are <byte order><kind><size>.
std::string describe_descr(const std::string& d) {
  if (d.empty()) return "an empty dtype";
  if (d[0] == '[') return "a structured dtype";
  const char order = d[0];
  const std::string rest =
      (order == '<' || order == '>' || order == '|' || order == '=') ? d.substr(1) : d;
  const char kind = rest.empty() ? '?' : rest[0];
  // The item size in bytes after the kind ("<f4": 4), said in bits; a size past any dtype's
  // (digits that would overflow) is left out: the message quotes the descr anyway.
  const long long bytes = rest.size() > 1 ? std::strtoll(rest.c_str() + 1, nullptr, 10) : 0;
  const std::string bits = bytes > 0 && bytes <= 1024 ? std::to_string(8 * bytes) : "";
  std::string what;
  switch (kind) {
    case 'O':
      return "Python objects, written with allow_pickle";
    case 'f':
      what = "float" + bits;
      break;
    case 'i':
      what = "int" + bits;
      break;
    case 'u':
      what = "uint" + bits;
      break;
    case 'b':
      what = "bool";
      break;
    case 'c':
      what = "complex" + bits;
      break;
    default:
      what = "numpy kind '" + std::string(1, kind) + "'";
  }
  if (order == '>') what = "big-endian " + what;
  return what;
}

template <class T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

int64_t page_floor(int64_t offset) {
  static const int64_t page = sysconf(_SC_PAGESIZE);
  return offset / page * page;
}

}  // namespace

bool has_npy_magic(std::string_view bytes) { return bytes.substr(0, kMagic.size()) == kMagic; }

NpyHeader parse_npy_header(const std::string& path, std::string_view bytes) {
  const auto size = static_cast<int64_t>(bytes.size());
  if (size < 10)
    fail(path, "header", "at least 10 bytes (magic, version, header length)",
         std::to_string(size) + " bytes (truncated?)");
  if (!has_npy_magic(bytes))
    fail(path, "magic", escaped(kMagic) + " (a .npy file)", escaped(bytes.substr(0, 6)));
  NpyHeader h;
  h.major = static_cast<unsigned char>(bytes[6]);
  h.minor = static_cast<unsigned char>(bytes[7]);
  if (h.major < 1 || h.major > 3 || h.minor != 0)
    fail(path, "version", "1.0, 2.0 or 3.0",
         std::to_string(h.major) + "." + std::to_string(h.minor));
  const int64_t len_bytes = h.major == 1 ? 2 : 4;
  if (size < 8 + len_bytes)
    fail(path, "header", "at least " + std::to_string(8 + len_bytes) + " bytes",
         std::to_string(size) + " bytes (truncated?)");
  int64_t header_len = 0;
  for (int64_t i = len_bytes - 1; i >= 0; --i)
    header_len = 256 * header_len + static_cast<unsigned char>(bytes[size_t(8 + i)]);
  h.data_offset = 8 + len_bytes + header_len;
  if (size < h.data_offset)
    fail(path, "header", std::to_string(h.data_offset) + " bytes (header length field)",
         std::to_string(size) + " bytes in the file (truncated?)");
  auto parsed = DictParser(bytes.substr(size_t(8 + len_bytes), size_t(header_len)), path).parse();
  parsed.major = h.major;
  parsed.minor = h.minor;
  parsed.data_offset = h.data_offset;
  return parsed;
}

NpyMatrix::NpyMatrix(std::string path) : path_(std::move(path)) {
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;  // before the strings below allocate
    throw FormatError::described(
        path_, "",
        path_ + ": " + (err == ENOENT ? std::string("no such file") : std::strerror(err)));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw FormatError::described(path_, "", path_ + ": not a regular file");
  }
  file_size_ = st.st_size;
  if (file_size_ > 0) {
    void* p = mmap(nullptr, size_t(file_size_), PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw FormatError::described(path_, "", path_ + ": mmap failed: " + why);
    }
    map_ = static_cast<char*>(p);
  }
  ::close(fd);  // the mapping keeps the file open
  try {
    header_ = parse_npy_header(path_, std::string_view(map_ ? map_ : "", size_t(file_size_)));
    const auto& h = header_;
    if (h.descr == "<f4")
      itemsize_ = 4;
    else if (h.descr == "<f8")
      itemsize_ = 8;
    else
      refuse(path_, "dtype (header 'descr')",
             "'<f4' (float32) or '<f8' (float64); convert with a.astype(np.float32)",
             "'" + h.descr + "' (" + describe_descr(h.descr) + ")");
    if (h.shape.size() != 2)
      refuse(path_, "header 'shape'", "2 dimensions (T, M), rows = tokens", shape_string(h.shape));
    if (h.shape[0] < 1 || h.shape[1] < 1)
      refuse(path_, "header 'shape'", "T >= 1 and M >= 1", shape_string(h.shape));
    if (h.shape[0] > (std::numeric_limits<int64_t>::max() - h.data_offset) / itemsize_ / h.shape[1])
      refuse(path_, "header 'shape'", "a size that fits in 64 bits", shape_string(h.shape));
    const int64_t data = h.shape[0] * h.shape[1] * itemsize_;
    if (file_size_ != h.data_offset + data)
      fail(path_, "size",
           std::to_string(h.data_offset + data) + " bytes (" + std::to_string(h.data_offset) +
               " of header + " + std::to_string(h.shape[0]) + " x " + std::to_string(h.shape[1]) +
               " x " + std::to_string(itemsize_) + " of data)",
           std::to_string(file_size_) +
               (file_size_ < h.data_offset + data ? " (truncated?)" : " (trailing bytes?)"));
    // C order streams front to back: let the kernel read ahead. (Fortran order gathers one
    // run per column and block; the default read-ahead follows each run.)
    if (!h.fortran_order) madvise(map_, size_t(file_size_), MADV_SEQUENTIAL);
  } catch (...) {
    if (map_) munmap(map_, size_t(file_size_));
    throw;
  }
}

NpyMatrix::~NpyMatrix() {
  if (map_) munmap(map_, size_t(file_size_));
}

// Drops the mapping's pages in [first_byte, end_byte), except the page holding end_byte. The
// data there has been copied out; touching it again only faults it back in from the page cache,
// which keeps the pages (the process's RSS does not). This also drops what the kernel's
// fault-around mapped in behind or ahead of the reads (up to 64 KiB of cached neighbours per
// fault), which would otherwise stay mapped.
void NpyMatrix::release(int64_t first_byte, int64_t end_byte) const {
  const int64_t a = page_floor(first_byte), b = page_floor(end_byte);
  if (b > a) madvise(map_ + a, size_t(b - a), MADV_DONTNEED);
}

template <class Out>
void NpyMatrix::read_block(int64_t begin, int64_t count, Out* out) const {
  if (begin < 0 || count < 0 || begin + count > rows())
    throw OptionError::described("begin, count", path_ + ": rows [" + std::to_string(begin) + ", " +
                                                     std::to_string(begin + count) +
                                                     ") outside [0, " + std::to_string(rows()) +
                                                     ")");
  const int64_t t = rows(), m = cols(), isz = itemsize_;
  const char* data = map_ + header_.data_offset;
  auto convert = [&](const char* src, int64_t n, Out* dst) {
    if (isz == int64_t{sizeof(Out)})
      std::memcpy(dst, src, size_t(n * isz));
    else if (isz == 4)
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<Out>(load<float>(src + 4 * i));
    else
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<Out>(load<double>(src + 8 * i));
  };
  if (!header_.fortran_order) {
    // C order: rows [begin, begin + count) are one contiguous run; everything before its end
    // has been read (in a front-to-back stream).
    const int64_t first = header_.data_offset + begin * m * isz;
    convert(map_ + first, count * m, out);
    release(header_.data_offset, first + count * m * isz);
    return;
  }
  // Fortran order: element (r, c) lies at data[(c T + r) isz], the bytes of the M x T
  // row-major matrix A^T (what np.save writes for a_hat.T, the paper's M x T A-hat transposed).
  // Reading that as M rows of T would give the same singular values, but the analysis needs
  // rows = tokens: the gram path's G = A^T A is M x M (M x M memory, T streamed), while streaming
  // the M x T view would form a T x T matrix. So each block of token rows is gathered from one
  // contiguous run of `count` elements per column and transposed tile by tile into `out`. After
  // each group of kTile columns, the group's whole span (kTile T elements, contiguous) is
  // released: what stays mapped is one group's runs and their fault-around, not M of them.
  constexpr int64_t kTile = 64;  // 64 x 64 elements in and out: a few dozen KiB, L1/L2 resident
  Out column[kTile];
  for (int64_t c0 = 0; c0 < m; c0 += kTile) {
    const int64_t c1 = std::min(m, c0 + kTile);
    for (int64_t r0 = 0; r0 < count; r0 += kTile) {
      const int64_t r1 = std::min(count, r0 + kTile);
      for (int64_t c = c0; c < c1; ++c) {
        convert(data + (c * t + begin + r0) * isz, r1 - r0, column);
        for (int64_t r = r0; r < r1; ++r) out[r * m + c] = column[r - r0];
      }
    }
    release(header_.data_offset + c0 * t * isz, header_.data_offset + c1 * t * isz);
  }
}

void NpyMatrix::read_rows(int64_t begin, int64_t count, float* out) const {
  read_block(begin, count, out);
}

void NpyMatrix::read_rows(int64_t begin, int64_t count, double* out) const {
  read_block(begin, count, out);
}

}  // namespace sb::analysis
