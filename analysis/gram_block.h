#pragma once
// A Gram matrix summed block by block with one rounding per entry and block (blocked summation),
// and the length of the rounding chain that the certificate's gamma takes.
//
// Why. G = sum_b X_b X_b^T over blocks of rows (the column Gram, spectrum.h) or of columns (the
// row Gram, row_gram.h). Added with dsyrk(beta = 1), the BLAS may add each product into the
// running G one at a time, so the first block's terms can pass through every later addition: an
// entry of Gh = fl(G) is then only known to be a dot product of n terms in some order, with error
// at most gamma_n sum |terms| (rank_certificate.h; n = T for A^T A, M for A A^T).
//
// Here each block's X_b X_b^T is formed alone (beta = 0, into a scratch tile) and then added to
// G, one addition per entry. Follow one term x_it x_jt to the entry it ends in: at most one
// rounding for its product (none for float32 data: a product of two float32 values is exact in
// float64), at most b - 1 additions inside its block of b terms (whatever order the BLAS picks:
// a sum of b terms in any order is a tree of b - 1 additions; Higham, Accuracy and Stability of
// Numerical Algorithms, 2nd ed., 2002, section 4.1), and at most n_blocks - 1 additions into G
// (the first block is added to zeros: exact). So every term carries at most
//   L = b_max + n_blocks - 1
// factors (1 + delta), |delta| <= u, and by Higham's lemma 3.1
//   |Gh_ij - G_ij| <= gamma_L sum_t |x_it| |x_jt|,   gamma_L = L u / (1 - L u),
// the bound of rank_certificate.h with L in place of n. One block gives L = n, the old bound.
// The full PTB test matrix, T = 82430 rows in blocks of 4096: L = 4096 + 21 - 1 = 4116, a bound
// 20x smaller; GPT-2's shape as a row Gram, M = 50257 in 6 panels of 8388: L = 8393, 6x.
//
// Cost. The scratch holds a tile of G's columns, [c0, c1): the rectangle above the diagonal by
// one dgemm (c0 x w), the diagonal block by one dsyrk (w x w), the same flops as one dsyrk of
// the whole block. The tile is at most kGramTileBytes (w = that / (8 n) columns, at least one,
// at most n), so the extra memory is bounded whatever n is; the additions are n^2 / 2 per block.

#include <cstdint>
#include <vector>

namespace sb::analysis {

/// The most bytes of the scratch tile (see above).
inline constexpr double kGramTileBytes = double(int64_t{256} << 20);

/// Bytes of the scratch tile for a Gram matrix of order n.
double gram_tile_bytes(int64_t order);

class GramAccumulator {
 public:
  /// G of order n, zero: the upper triangle of an n x n column-major matrix; a scratch tile of
  /// at most tile_bytes (at least one column).
  explicit GramAccumulator(int64_t order, double tile_bytes = kGramTileBytes);

  /// G += op(X) op(X)^T with op(X) of order x inner: X column-major, order x inner (ld >= order)
  /// for trans = false, inner x order (ld >= inner) for trans = true (op(X) = X^T).
  void add(const double* x, int64_t inner, int64_t ld, bool trans);

  /// L of the header, the longest chain of roundings on any entry so far (0 before any block).
  int64_t chain() const { return blocks_ == 0 ? 0 : max_inner_ + blocks_ - 1; }

  /// G (upper triangle, column-major, order x order); the accumulator is empty afterwards.
  std::vector<double> take() { return std::move(g_); }

 private:
  int64_t n_ = 0, tile_cols_ = 1, blocks_ = 0, max_inner_ = 0;
  std::vector<double> g_, tile_;
};

}  // namespace sb::analysis
