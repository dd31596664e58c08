#pragma once
// The range start's products (sketch.h, "Verdict start") in one loop over a block of rows of the
// reader's own type: Z = X Omega (the sparse sign embedding, sparse_sign.h) and Z_p = X W (p
// dense Gaussian probes), the rows widened to float64 in registers.
//
// Why fused. The sketch's other passes widen each block to float64 in memory and hand it to
// BLAS; for the range start that widening wrote 8 bytes per entry (a third of the pass's CPU
// time at WikiText-2's shape beside the sparse product), the sparse product read them again and
// dgemm packed them a third time, all to multiply by k sparse and p (12 to 40) dense columns.
// Here each entry is read once, as stored: 8 rows at a time, one 8-lane float64 vector per
// column j of X, added with its sign into Z's zeta columns (as SparseSign::apply's tiles) and
// multiplied into Z_p's p columns. Columns are taken in chunks of kChunk so that W's and Omega's
// rows for a chunk stay in the L2 cache while every tile of a group of rows passes over them;
// each group's sums (k + p vectors per tile) stay in L2 between chunks.
//
// Rounding. Each row's sums run over j in order. Z's terms +-x_tj are exact, so Z is
// SparseSign::apply's result on the widened rows to the bit (with or without FMA). Z_p's entry
// (t, i) is a sum of M products in some order: within gamma_M sum_j |x_tj| |w_ji| of the exact
// one, the bound sketch.h's range start takes (gamma_M ||A||_F ||w_i||).
//
// Cost: T M (zeta + p) multiply-adds, 4 T M bytes read (float32) once, against 8 T M written and
// 16 T M read again by the widen-then-BLAS path.

#include <cstdint>

#include "analysis/sparse_sign.h"

namespace sb::analysis {

/// z (n x k, column-major, leading dimension ldz) = X Omega and zp (n x p, same ldz) = X W for
/// x (n x m, row-major, In = float or double) and w (m x p, row-major); rows split over
/// `threads` threads (>= 1). Results do not depend on the thread count.
template <class In>
void range_products(const In* x, int64_t n, int64_t m, const SparseSign& omega, const double* w,
                    int64_t p, double* z, double* zp, int64_t ldz, int threads);

}  // namespace sb::analysis
