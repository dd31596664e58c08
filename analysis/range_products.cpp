#include "analysis/range_products.h"

#include <algorithm>
#include <memory>
#include <thread>
#include <vector>

#include "analysis/float64_lanes.h"
#include "common/vector_clones.h"

namespace sb::analysis {

namespace {

constexpr int kWide = kLaneRows;  // rows per tile: one Lanes vector per column (float64_lanes.h)
constexpr int64_t kChunk = 1024;  // columns per chunk: W's rows 160 KiB at p = 20
constexpr int64_t kGroup = 8;     // tiles per group: their sums 8 (k + p) 64 B, 221 KiB at 432

// One tile (rows x, x + m, ..., x + 7 m) over columns [j0, j1): acc (Z's k vectors), accp (Z_p's
// p).
template <class In>
SB_VECTOR_CLONES void tile_chunk(const In* x, int64_t m, int64_t j0, int64_t j1, int zeta,
                                 const int32_t* column, const int8_t* sign, const double* w,
                                 int64_t p, Lanes* acc, Lanes* accp) {
  column += j0 * zeta;
  sign += j0 * zeta;
  w += j0 * p;
  for (int64_t j = j0; j < j1; ++j, column += zeta, sign += zeta, w += p) {
    Lanes v;
    for (int r = 0; r < kWide; ++r) v[r] = static_cast<double>(x[r * m + j]);
    for (int l = 0; l < zeta; ++l) acc[column[l]] += static_cast<double>(sign[l]) * v;
    for (int64_t i = 0; i < p; ++i) accp[i] += w[i] * v;
  }
}

// Rows [from, to) of the block (from a multiple of kWide), in groups of kGroup tiles.
template <class In>
void products_rows(const In* x, int64_t from, int64_t to, int64_t m, const SparseSign& omega,
                   const double* w, int64_t p, double* z, double* zp, int64_t ldz) {
  const int64_t k = omega.cols(), kp = k + p;
  LaneBuffer sums(kGroup * kp);
  Lanes* acc = sums.lanes();
  std::vector<In> pad;  // a last tile of fewer than kWide rows, zero-padded
  const In* src[kGroup];
  for (int64_t g = from; g < to; g += kGroup * kWide) {
    const int64_t g_end = std::min(to, g + kGroup * kWide);
    const int64_t tiles = (g_end - g + kWide - 1) / kWide;
    std::fill(acc, acc + tiles * kp, Lanes{});
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t first = g + t * kWide, rows = std::min<int64_t>(kWide, g_end - first);
      src[t] = x + first * m;
      if (rows == kWide) continue;
      pad.assign(static_cast<size_t>(kWide * m), In{0});
      std::copy(x + first * m, x + (first + rows) * m, pad.begin());
      src[t] = pad.data();
    }
    for (int64_t j0 = 0; j0 < m; j0 += kChunk)
      for (int64_t t = 0; t < tiles; ++t)
        tile_chunk(src[t], m, j0, std::min(m, j0 + kChunk), omega.nonzeros(), omega.columns(),
                   omega.signs(), w, p, acc + t * kp, acc + t * kp + k);
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t first = g + t * kWide, rows = std::min<int64_t>(kWide, g_end - first);
      const Lanes* a = acc + t * kp;
      for (int64_t c = 0; c < k; ++c)
        for (int64_t r = 0; r < rows; ++r) z[first + r + c * ldz] = omega.scale() * a[c][r];
      for (int64_t i = 0; i < p; ++i)
        for (int64_t r = 0; r < rows; ++r) zp[first + r + i * ldz] = a[k + i][r];
    }
  }
}

}  // namespace

template <class In>
void range_products(const In* x, int64_t n, int64_t m, const SparseSign& omega, const double* w,
                    int64_t p, double* z, double* zp, int64_t ldz, int threads) {
  const int64_t tiles = (n + kWide - 1) / kWide;
  const int64_t parts = std::clamp<int64_t>(threads, 1, std::max<int64_t>(tiles, 1));
  auto bound = [&](int64_t t) { return std::min(n, tiles * t / parts * kWide); };
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < parts; ++t)
    pool.emplace_back(
        [=, &omega] { products_rows(x, bound(t), bound(t + 1), m, omega, w, p, z, zp, ldz); });
  products_rows(x, bound(0), bound(1), m, omega, w, p, z, zp, ldz);
  for (auto& th : pool) th.join();
}

template void range_products<float>(const float*, int64_t, int64_t, const SparseSign&,
                                    const double*, int64_t, double*, double*, int64_t, int);
template void range_products<double>(const double*, int64_t, int64_t, const SparseSign&,
                                     const double*, int64_t, double*, double*, int64_t, int);

}  // namespace sb::analysis
