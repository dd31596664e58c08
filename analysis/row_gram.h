#pragma once
// The row Gram matrix of a wide log-output matrix: for T < M, G = A A^T (T x T, float64) instead
// of A^T A (M x M). Both have the squared singular values of A as their nonzero eigenvalues
// (A = U S V^T gives A A^T = U S^2 U^T and A^T A = V S^2 V^T), so the smaller one carries the
// whole spectrum at 8 min(T, M)^2 bytes.
//
// Access pattern. The files store A by rows (the contract's chunks, a C-order .npy) and the
// readers hand out row blocks. A A^T needs every pair of rows, so it is accumulated over column
// panels instead: G = sum_p A_p A_p^T with A_p = A[:, c_p .. c_p + w) (T x w). Each panel is
// gathered from one streaming pass over the rows (keeping w of the M columns of every row), then
// added by one dsyrk. With w columns per panel the file is read ceil(M / w) times, and the panel
// costs 8 T w bytes beside G: row_gram_panel_cols picks w = max(256 MiB, T^2 bytes) / (8 T)
// (at least one column, at most M), i.e. a panel of at most an eighth of G's size once G passes
// 2 GiB, so the reads stay bounded: ceil(M / w) <= ceil(8 M / T) passes for large T, and one or
// two for T up to a few thousand. Where the float32 matrix itself takes at most
// kRowGramKeepBytes (1 GiB: GPT-2's vocabulary at T = 4000 is 0.8 GB), the first pass keeps the
// rows as read and the later panels are gathered from memory: the file is read once (at GPT-2's
// shape, T = 4000, six passes took 2.0 s of an 11.8 s run). The kept rows are the values the
// first pass read, so the panels, the dsyrk calls and G are the same bit for bit.
//
// Rounding. Every entry of Gh = fl(A A^T) is a dot product of M terms (two rows of A, widened to
// float64 exactly), summed in some order over the panels and dsyrk's blocking. Higham (Accuracy
// and Stability of Numerical Algorithms, 2nd ed., 2002, section 3.1) bounds each by
// |Gh_ij - (A A^T)_ij| <= gamma_M sum_k |a_ik| |a_jk|, gamma_M = M u / (1 - M u), whatever the
// order. Entrywise |E| <= gamma_M |A| |A|^T with a nonnegative right side, so
// ||E||_2 <= gamma_M || |A| |A|^T ||_2; when all entries of A share a sign (log-probabilities are
// <= 0), |A| |A|^T = A A^T and the bound is gamma_M lambda_1, else gamma_M ||A||_F^2 =
// gamma_M trace(A A^T). This is the column Gram's derivation (rank_certificate.h) with T and M
// swapped: the inner dimension is M and the Gram's order is T, and rank_certificate's GramFacts
// take exactly that (rows = the inner dimension, cols = the order). Each panel's A_p A_p^T is
// added to G with one rounding per entry (gram_block.h), so a term passes through at most
// L = w + passes - 1 roundings and gamma_L replaces gamma_M (GramMatrix::chain).

#include <cstdint>

#include "analysis/spectrum.h"

namespace sb::analysis {

/// Columns per panel for a rows x cols matrix (see above).
int64_t row_gram_panel_cols(int64_t rows, int64_t cols);

/// The most bytes of float32 rows the row Gram keeps in memory between its passes (see above).
inline constexpr double kRowGramKeepBytes = double(int64_t{1} << 30);

/// Whether a rows x cols float32 matrix, in panels of panel_cols columns, is kept in memory after
/// the first pass: more than one pass, and 4 T M <= keep_bytes.
bool row_gram_keeps_rows(int64_t rows, int64_t cols, int64_t panel_cols, double keep_bytes);

/// Peak bytes of the row Gram path: G (8 T^2), its scratch tile (gram_block.h), the T x w panel,
/// the 16 MiB staging block, the kept float32 rows where row_gram_keeps_rows, and the eigensolver's
/// workspace (as gram_bytes, with n = T).
double row_gram_bytes(int64_t rows, int64_t cols);

/// G = A A^T (T x T, upper triangle, column-major) over column panels of `panel_cols` columns
/// (<= 0: row_gram_panel_cols). GramMatrix::row_gram is set: its order is rows. Non-finite entries
/// are counted on the first pass, which then stops (empty g). progress counts the rows read over
/// all passes (rows x passes in all). float32 rows are kept after the first pass where
/// row_gram_keeps_rows(..., keep_bytes) (0: never; the file is then read once per panel).
GramMatrix accumulate_row_gram(const RowReader& read, int64_t rows, int64_t cols,
                               int64_t panel_cols, FiniteScan* scan,
                               SpectrumTiming* timing = nullptr, const Progress& progress = {},
                               double keep_bytes = kRowGramKeepBytes);
/// float64 rows go into the accumulation as read (and are read once per panel).
GramMatrix accumulate_row_gram(const RowReader64& read, int64_t rows, int64_t cols,
                               int64_t panel_cols, FiniteScan* scan,
                               SpectrumTiming* timing = nullptr, const Progress& progress = {},
                               double keep_bytes = kRowGramKeepBytes);

}  // namespace sb::analysis
