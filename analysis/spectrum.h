#pragma once
// Singular values of the T x M log-output matrix A (rows = tokens), two ways:
//   exact: LAPACK ?gesdd (singular values only) on the whole matrix, in float32 or float64;
//   gram:  stream row blocks, G = A^T A (M x M) accumulated in float64 with dsyrk, eigenvalues by
//          dsyevd, sigma = sqrt(max(lambda, 0)). Peak memory 8 M^2 bytes + one block, whatever T.
//          Resolves sigma only down to about sqrt(eps64) sigma_max = 1.5e-8 sigma_max.
// The singular values of A equal those of the paper's M x T matrix A-hat = A^T.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "contract/rank_report.h"

namespace sb::analysis {

/// Fills out (count x M, row-major) with rows [begin, begin + count).
using RowReader = std::function<void(int64_t begin, int64_t count, float* out)>;
/// The same for float64 data (a float64 /log_probs or .npy), read without rounding to float32.
using RowReader64 = std::function<void(int64_t begin, int64_t count, double* out)>;

/// Counts of non-finite entries met while reading, and where the first one was.
struct FiniteScan {
  int64_t nan = 0, pos_inf = 0, neg_inf = 0;
  int64_t first_row = -1, first_col = -1;
  bool clean() const { return nan + pos_inf + neg_inf == 0; }
  void scan(const float* rows, int64_t begin, int64_t count, int64_t cols);
  void scan(const double* rows, int64_t begin, int64_t count, int64_t cols);
  std::string describe() const;  // "12 NaN, 0 +inf, 3 -inf entries; the first at row 5, column 7"
};

using contract::SpectrumTiming;  // contract/rank_report.h

/// Progress of the streaming pass: called after each block with the rows read so far. The last
/// call (rows_done == rows_total) comes right before the LAPACK call, which reports nothing.
using Progress = std::function<void(int64_t rows_done, int64_t rows_total)>;

/// exact and gram here; sketch: analysis/sketch.h.
enum class SvdMethod { exact, gram, sketch };
std::string method_name(SvdMethod m);

/// Descending singular values by ?gesdd on the whole matrix (T x M float32 in memory, or float64:
/// twice that). `scan` counts non-finite entries; the SVD is skipped (empty result) if any.
std::vector<double> singular_values_exact(const RowReader& read, int64_t rows, int64_t cols,
                                          bool float64, FiniteScan* scan,
                                          SpectrumTiming* timing = nullptr,
                                          const Progress& progress = {});
/// float64 rows: stored as read for a float64 SVD, rounded to float32 for a float32 one.
std::vector<double> singular_values_exact(const RowReader64& read, int64_t rows, int64_t cols,
                                          bool float64, FiniteScan* scan,
                                          SpectrumTiming* timing = nullptr,
                                          const Progress& progress = {});

/// Symmetric eigensolver of the gram path (eigenvalues only). dsyevd reduces G to tridiagonal
/// form half in BLAS-2 (memory bound); dsyevd_2stage goes through a band matrix in BLAS-3.
/// Measured here (2 threads, eigenvalues of a random symmetric matrix): n = 4000 dsyevd 2.5 s vs
/// 2stage 3.7 s; n = 8000 23.8 s vs 15.1 s. `automatic` takes 2stage from n = 6000.
enum class EigenSolver { automatic, dsyevd, dsyevd_2stage };
/// The LAPACK routine `solver` runs on an m x m matrix: "dsyevd" or "dsyevd_2stage".
std::string eigen_solver_name(EigenSolver solver, int64_t m);

/// Descending singular values through the float64 Gram matrix, reading `block_rows` at a time:
/// accumulate_gram, then gram_singular_values.
std::vector<double> singular_values_gram(const RowReader& read, int64_t rows, int64_t cols,
                                         int64_t block_rows, FiniteScan* scan,
                                         SpectrumTiming* timing = nullptr,
                                         EigenSolver solver = EigenSolver::automatic,
                                         const Progress& progress = {});
/// float64 rows go into the float64 accumulation as read.
std::vector<double> singular_values_gram(const RowReader64& read, int64_t rows, int64_t cols,
                                         int64_t block_rows, FiniteScan* scan,
                                         SpectrumTiming* timing = nullptr,
                                         EigenSolver solver = EigenSolver::automatic,
                                         const Progress& progress = {});

/// The float64 Gram matrix of the streamed T x M matrix A, and the sign facts its error bound uses.
/// The column Gram A^T A (order M), or with row_gram the row Gram A A^T (order T, row_gram.h).
struct GramMatrix {
  int64_t rows = 0, cols = 0;  ///< T, M of A
  std::vector<double> g;       ///< order() x order() column-major, the Gram matrix in the upper
                               ///< triangle; empty if the scan met non-finite entries
  bool same_sign = true;       ///< every entry of A <= 0, or every one >= 0: then |A|^T |A| = A^T A
  bool row_gram = false;       ///< A A^T rather than A^T A
  /// The longest chain of roundings on an entry (gram_block.h: block + blocks - 1, at most
  /// inner()); 0: unknown, and the certificate takes the whole dot product, inner().
  int64_t chain = 0;
  int64_t order() const { return row_gram ? rows : cols; }
  /// The length of each entry's dot product: T for A^T A, M for A A^T.
  int64_t inner() const { return row_gram ? cols : rows; }
};

/// G = A^T A over blocks of `block_rows` rows, each block's Gram added with one rounding per entry
/// (gram_block.h; GramMatrix::chain = block_rows + blocks - 1 for the certificate). overlap: a
/// second thread reads and converts block k + 1 while dsyrk runs on block k (two float64 block
/// buffers); timing->read is then the time dsyrk waited for the reader.
GramMatrix accumulate_gram(const RowReader& read, int64_t rows, int64_t cols, int64_t block_rows,
                           FiniteScan* scan, SpectrumTiming* timing = nullptr,
                           const Progress& progress = {}, bool overlap = true);
/// float64 rows go into the accumulation as read.
GramMatrix accumulate_gram(const RowReader64& read, int64_t rows, int64_t cols, int64_t block_rows,
                           FiniteScan* scan, SpectrumTiming* timing = nullptr,
                           const Progress& progress = {}, bool overlap = true);

/// Descending singular values sqrt(max(lambda, 0)) from G's eigenvalues (either Gram), the
/// min(T, M) of them; consumes G.
std::vector<double> gram_singular_values(GramMatrix&& gram, EigenSolver solver,
                                         SpectrumTiming* timing = nullptr);
/// The same on G held elsewhere: the upper triangle of an order x order column-major array,
/// which the eigensolver overwrites with the diagonal (uplo 'U', jobz 'N'); the strict lower
/// triangle is left as it was (InertiaCounter::with_upper keeps G's copy there). The first
/// min_side = min(T, M) values.
std::vector<double> gram_singular_values(double* g, int64_t order, int64_t min_side,
                                         EigenSolver solver, SpectrumTiming* timing = nullptr);

/// Bytes each method needs at its peak (the matrix or G, plus workspaces; gram: two float64
/// blocks for the overlapped read and the eigensolver's workspace).
double exact_bytes(int64_t rows, int64_t cols, bool float64);
double gram_bytes(int64_t rows, int64_t cols, int64_t block_rows);

}  // namespace sb::analysis
