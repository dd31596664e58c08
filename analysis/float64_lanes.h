#pragma once
// Eight float64 lanes in GCC's vector extension, for loops that update 8 rows at once (the sparse
// start's tile, sparse_sign.cpp; the range start's products, range_products.cpp): one vector is
// a 512-bit register with AVX-512, two 256-bit ones with AVX2. The type is declared with 8-byte
// alignment: a vector type's own alignment follows the target (16 bytes in a baseline unit, 64 in
// an AVX-512 clone), so a clone cannot trust the caller's allocation; LaneBuffer aligns its
// vectors to 64 bytes so that none straddles two cache lines (2x slower in the tile when they did).

#include <cstdint>
#include <memory>
#include <vector>

namespace sb::analysis {

inline constexpr int kLaneRows = 8;
using Lanes =
    double __attribute__((vector_size(kLaneRows * sizeof(double)), aligned(sizeof(double))));

/// n vectors of Lanes from a 64-byte boundary, in storage of its own.
class LaneBuffer {
 public:
  explicit LaneBuffer(int64_t n) : store_(static_cast<size_t>(kLaneRows * (n + 1))) {
    void* at = store_.data();
    size_t space = store_.size() * sizeof(double);
    lanes_ = static_cast<Lanes*>(std::align(64, sizeof(Lanes) * n, at, space));
  }
  Lanes* lanes() { return lanes_; }
  /// The same storage as plain doubles (at least 8 n of them).
  double* doubles() { return store_.data(); }

 private:
  std::vector<double> store_;
  Lanes* lanes_ = nullptr;
};

}  // namespace sb::analysis
