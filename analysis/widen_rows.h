#pragma once
// Rows of a reader's type (float32 or float64) widened to float64 on their way to a sketch pass,
// with the sums the first pass takes of them: ||A||_F^2, ||A 1||^2 (sigma_1's lower bound along
// the all-ones direction, sketch.h "Verdict start") and whether any entry is > 0 or < 0.
//
// The sums run in 8 independent lanes per row (then added in order), so the loop vectorises
// without reassociation by the compiler: one dependent add per entry (4 cycles each) made the
// first pass's widening a third of its time at WikiText-2's shape. The certificates that use
// these sums bound them for any order of summation (gamma_n, Higham 2002 section 4.2).

#include <cstdint>

namespace sb::analysis {

/// The first pass's sums over the rows it has widened.
struct RowSums {
  double frobenius_sq = 0;  ///< sum of a_tj^2
  double ones_sq = 0;       ///< sum over rows of (sum_j a_tj)^2
  bool positive = false, negative = false;
};

/// dst = src (rows x m, row-major) as float64; with sums, also the sums above added into *sums
/// (dst may then be null: the sums alone). The entries are finite (the finite scan refuses the
/// rest before they arrive here).
template <class In>
void widen_rows(const In* src, int64_t rows, int64_t m, double* dst, RowSums* sums);

}  // namespace sb::analysis
