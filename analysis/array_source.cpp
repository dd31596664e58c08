#include "analysis/array_source.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "common/errors.h"

namespace sb::analysis {
namespace {

template <class In>
In load(const char* p) {
  In v;
  std::memcpy(&v, p, sizeof v);  // strides need not keep elements aligned
  return v;
}

}  // namespace

ArraySource::ArraySource(ArrayView view) : view_(std::move(view)) {
  if (view_.rows < 1 || view_.cols < 1)
    throw InputError(view_.name, "shape", "T >= 1 and M >= 1",
                     "(" + std::to_string(view_.rows) + ", " + std::to_string(view_.cols) + ")");
  if (!view_.data) throw InputError::described(view_.name, "", view_.name + ": no data");
  if (!view_.input.empty() && view_.input != "logprobs" && view_.input != "logits")
    throw OptionError(view_.name + ": input", "logprobs or logits", "'" + view_.input + "'");
}

template <class Out>
void ArraySource::gather(int64_t begin, int64_t count, Out* out) const {
  if (begin < 0 || count < 0 || begin + count > view_.rows)
    throw OptionError::described("begin, count", view_.name + ": rows [" + std::to_string(begin) +
                                                     ", " + std::to_string(begin + count) +
                                                     ") outside [0, " + std::to_string(view_.rows) +
                                                     ")");
  const int64_t m = view_.cols, isz = view_.float64 ? 8 : 4;
  const char* base = static_cast<const char*>(view_.data);
  auto at = [&](int64_t r, int64_t c) {
    return base + r * view_.row_stride + c * view_.col_stride;
  };
  auto value = [&](const char* p) {
    return view_.float64 ? static_cast<Out>(load<double>(p)) : static_cast<Out>(load<float>(p));
  };
  if (view_.col_stride == isz) {
    // Rows contiguous (C order, or a slice of rows): one run per row.
    for (int64_t r = 0; r < count; ++r) {
      const char* row = at(begin + r, 0);
      Out* dst = out + r * m;
      if (isz == int64_t{sizeof(Out)})
        std::memcpy(dst, row, static_cast<size_t>(m * isz));
      else
        for (int64_t c = 0; c < m; ++c) dst[c] = value(row + c * isz);
    }
    return;
  }
  // Columns contiguous (Fortran order) or any other strides: tiles of 64 x 64 elements, read
  // down each column's run and written across the rows, so that both sides stay in cache.
  constexpr int64_t kTile = 64;
  for (int64_t c0 = 0; c0 < m; c0 += kTile) {
    const int64_t c1 = std::min(m, c0 + kTile);
    for (int64_t r0 = 0; r0 < count; r0 += kTile) {
      const int64_t r1 = std::min(count, r0 + kTile);
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t r = r0; r < r1; ++r) out[r * m + c] = value(at(begin + r, c));
    }
  }
}

void ArraySource::read_rows(int64_t begin, int64_t count, float* out) const {
  gather(begin, count, out);
}

void ArraySource::read_rows(int64_t begin, int64_t count, double* out) const {
  gather(begin, count, out);
}

}  // namespace sb::analysis
