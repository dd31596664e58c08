#include "analysis/gram_block.h"

#include <cblas.h>

#include <algorithm>

namespace sb::analysis {
namespace {

int64_t tile_columns(int64_t order, double tile_bytes) {
  const int64_t n = std::max<int64_t>(order, 1);
  return std::clamp<int64_t>(static_cast<int64_t>(tile_bytes / (8.0 * double(n))), 1, n);
}

}  // namespace

double gram_tile_bytes(int64_t order) {
  return 8.0 * static_cast<double>(order) *
         static_cast<double>(tile_columns(order, kGramTileBytes));
}

GramAccumulator::GramAccumulator(int64_t order, double tile_bytes)
    : n_(order),
      tile_cols_(tile_columns(order, tile_bytes)),
      g_(static_cast<size_t>(order * order), 0.0),
      tile_(static_cast<size_t>(order * tile_cols_)) {}

void GramAccumulator::add(const double* x, int64_t inner, int64_t ld, bool trans) {
  if (inner <= 0 || n_ == 0) return;
  // Row r of op(X) starts at x + r (trans = false) or is column r of X, at x + r ld.
  const auto row = [&](int64_t r) { return trans ? x + r * ld : x + r; };
  const CBLAS_TRANSPOSE left = trans ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE right = trans ? CblasNoTrans : CblasTrans;
  for (int64_t c0 = 0; c0 < n_; c0 += tile_cols_) {
    const int64_t w = std::min(tile_cols_, n_ - c0), c1 = c0 + w;
    // The tile: rows 0..c1 of G's columns c0..c1 (c1 x w, leading dimension c1); beta = 0.
    // Above the diagonal block: op(X)[0, c0) op(X)[c0, c1)^T.
    if (c0 > 0)
      cblas_dgemm(CblasColMajor, left, right, static_cast<int>(c0), static_cast<int>(w),
                  static_cast<int>(inner), 1.0, row(0), static_cast<int>(ld), row(c0),
                  static_cast<int>(ld), 0.0, tile_.data(), static_cast<int>(c1));
    // The diagonal block's upper triangle.
    cblas_dsyrk(CblasColMajor, CblasUpper, left, static_cast<int>(w), static_cast<int>(inner), 1.0,
                row(c0), static_cast<int>(ld), 0.0, tile_.data() + c0, static_cast<int>(c1));
    for (int64_t j = 0; j < w; ++j) {  // one addition per entry of the upper triangle
      const double* src = tile_.data() + j * c1;
      double* dst = g_.data() + (c0 + j) * n_;
      for (int64_t i = 0; i <= c0 + j; ++i) dst[i] += src[i];
    }
  }
  ++blocks_;
  max_inner_ = std::max(max_inner_, inner);
}

}  // namespace sb::analysis
