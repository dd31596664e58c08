#include "analysis/widen_rows.h"

#include <algorithm>
#include <limits>

#include "common/vector_clones.h"

namespace sb::analysis {

namespace {

constexpr int kLanes = 8;

// One row: widened into dst (when Store), its lanes' squares, sums, largest and smallest entry.
template <bool Store, class In>
SB_VECTOR_CLONES void widen_row(const In* src, int64_t m, double* dst, double* sq, double* sum,
                                double* hi, double* lo) {
  int64_t j = 0;
  for (; j + kLanes <= m; j += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const double v = static_cast<double>(src[j + l]);
      if (Store) dst[j + l] = v;
      sq[l] += v * v;
      sum[l] += v;
      hi[l] = hi[l] > v ? hi[l] : v;
      lo[l] = lo[l] < v ? lo[l] : v;
    }
  for (int l = 0; j < m; ++j, ++l) {
    const double v = static_cast<double>(src[j]);
    if (Store) dst[j] = v;
    sq[l] += v * v;
    sum[l] += v;
    hi[l] = std::max(hi[l], v);
    lo[l] = std::min(lo[l], v);
  }
}

}  // namespace

template <class In>
void widen_rows(const In* src, int64_t rows, int64_t m, double* dst, RowSums* sums) {
  if (!sums) {
    std::copy(src, src + rows * m, dst);
    return;
  }
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    double sq[kLanes] = {}, sum[kLanes] = {}, hi[kLanes], lo[kLanes];
    std::fill(hi, hi + kLanes, -kInf);
    std::fill(lo, lo + kLanes, kInf);
    if (dst)
      widen_row<true>(src + r * m, m, dst + r * m, sq, sum, hi, lo);
    else
      widen_row<false>(src + r * m, m, nullptr, sq, sum, hi, lo);
    double row_sq = 0, row_sum = 0;
    for (int l = 0; l < kLanes; ++l) {
      row_sq += sq[l];
      row_sum += sum[l];
      sums->positive |= hi[l] > 0;
      sums->negative |= lo[l] < 0;
    }
    sums->frobenius_sq += row_sq;
    sums->ones_sq += row_sum * row_sum;
  }
}

template void widen_rows<float>(const float*, int64_t, int64_t, double*, RowSums*);
template void widen_rows<double>(const double*, int64_t, int64_t, double*, RowSums*);

}  // namespace sb::analysis
