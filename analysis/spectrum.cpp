#include "analysis/spectrum.h"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <future>
#include <sstream>
#include <type_traits>

#include "analysis/block_stream.h"
#include "analysis/gram_block.h"
#include "common/errors.h"
#include "common/vector_clones.h"

namespace sb::analysis {

namespace {

// Whether any of n entries is NaN or +-inf, in 16 lanes: the common answer (none) at the speed
// of reading them; scan_rows then counts and places them only where there are some.
template <class T>
SB_VECTOR_CLONES bool any_special(const T* x, int64_t n) {
  constexpr int64_t kLanes = 16;
  int32_t special[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t l = 0; l < kLanes; ++l)
      special[l] |= static_cast<int32_t>(!(x[i + l] - x[i + l] == 0));
  int32_t any = 0;
  for (int64_t l = 0; l < kLanes; ++l) any |= special[l];
  for (; i < n; ++i) any |= static_cast<int32_t>(!std::isfinite(x[i]));
  return any != 0;
}

template <class T>
void scan_rows(FiniteScan& s, const T* rows, int64_t begin, int64_t count, int64_t cols) {
  if (!any_special(rows, count * cols)) return;
  for (int64_t i = 0; i < count * cols; ++i) {
    const T v = rows[i];
    if (std::isfinite(v)) continue;
    if (std::isnan(v))
      ++s.nan;
    else if (v > 0)
      ++s.pos_inf;
    else
      ++s.neg_inf;
    if (s.first_row < 0) {
      s.first_row = begin + i / cols;
      s.first_col = i % cols;
    }
  }
}

}  // namespace

void FiniteScan::scan(const float* rows, int64_t begin, int64_t count, int64_t cols) {
  scan_rows(*this, rows, begin, count, cols);
}

void FiniteScan::scan(const double* rows, int64_t begin, int64_t count, int64_t cols) {
  scan_rows(*this, rows, begin, count, cols);
}

std::string FiniteScan::describe() const {
  std::ostringstream s;
  s << nan << " NaN, " << pos_inf << " +inf, " << neg_inf << " -inf entries; the first at row "
    << first_row << ", column " << first_col;
  return s.str();
}

std::string method_name(SvdMethod m) {
  switch (m) {
    case SvdMethod::exact:
      return "exact";
    case SvdMethod::gram:
      return "gram";
    case SvdMethod::sketch:
      return "sketch";
  }
  return "gram";
}

double exact_bytes(int64_t rows, int64_t cols, bool float64) {
  // The matrix in the solver's precision (read_whole widens float32 rows block by block through
  // a 16 MiB staging buffer, so the float32 and float64 copies of the whole matrix never coexist:
  // 8 bytes per element on the float64 path, not 12), the staging block, and ?gesdd's workspace
  // for jobz = 'N' (about 7 min(M, T) + max(M, T) elements).
  const double elem = float64 ? 8.0 : 4.0, staging = float64 ? double(int64_t{16} << 20) : 0.0;
  const double mn = static_cast<double>(std::min(rows, cols));
  return elem * (static_cast<double>(rows) * static_cast<double>(cols) + 8 * mn +
                 static_cast<double>(std::max(rows, cols))) +
         staging;
}

double gram_bytes(int64_t rows, int64_t cols, int64_t block_rows) {
  // G (8 M^2), the scratch tile of its blocked sum (gram_block.h), two float64 blocks of
  // min(block_rows, T) rows, the 16 MiB staging buffer, and the eigensolver's eigenvalues and
  // workspace: dsyevd needs 2 M + 1 doubles, dsyevd_2stage about (2 KD + 2) M with its band width
  // KD <= 128 (LAPACK's dsyevd_2stage documentation).
  const double m = static_cast<double>(cols);
  const double block = static_cast<double>(std::min(block_rows, std::max<int64_t>(rows, 1)));
  const double staging = std::min(double(int64_t{16} << 20), 8.0 * block * m);
  return 8.0 * m * m + gram_tile_bytes(cols) + 16.0 * block * m + staging + 8.0 * (2 * 128 + 3) * m;
}

namespace {

double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

template <class T>
std::vector<double> gesdd(std::vector<T>& a, int64_t rows, int64_t cols) {
  // The row-major T x M matrix is the column-major M x T matrix A^T: same singular values, no copy.
  const auto m = static_cast<lapack_int>(cols), n = static_cast<lapack_int>(rows);
  std::vector<T> s(static_cast<size_t>(std::min(m, n)));
  lapack_int info = 0;
  if constexpr (sizeof(T) == 4)
    info =
        LAPACKE_sgesdd(LAPACK_COL_MAJOR, 'N', m, n, a.data(), m, s.data(), nullptr, 1, nullptr, 1);
  else
    info =
        LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', m, n, a.data(), m, s.data(), nullptr, 1, nullptr, 1);
  // The data's failure (no convergence, a NaN LAPACKE's check finds) or LAPACKE's workspace.
  if (info != 0)
    throw InputError::described("", "",
                                std::string(sizeof(T) == 4 ? "LAPACKE_sgesdd" : "LAPACKE_dgesdd") +
                                    " failed on a " + std::to_string(rows) + " x " +
                                    std::to_string(cols) +
                                    " matrix: info = " + std::to_string(info));
  return std::vector<double>(s.begin(), s.end());  // LAPACK returns them descending
}

// Reads the whole matrix (rows x cols, row-major) into `a` in the SVD's precision S, in blocks
// of ~16 MiB; when the reader's type In differs, through one staging block (peak memory: `a`
// plus a block, never the matrix twice). Counts every non-finite entry; false if there are any.
template <class S, class In>
bool read_whole(const std::function<void(int64_t, int64_t, In*)>& read, int64_t rows, int64_t cols,
                std::vector<S>& a, FiniteScan* scan, const Progress& progress) {
  constexpr bool same = std::is_same_v<S, In>;
  const int64_t block = std::max<int64_t>(1, (int64_t{16} << 20) / (4 * cols));
  a.resize(static_cast<size_t>(rows * cols));
  std::vector<In> stage(same ? 0 : static_cast<size_t>(std::min(block, rows) * cols));
  for (int64_t r = 0; r < rows; r += block) {
    const int64_t n = std::min(block, rows - r);
    In* dst = nullptr;
    if constexpr (same)
      dst = a.data() + r * cols;
    else
      dst = stage.data();
    read(r, n, dst);
    scan->scan(dst, r, n, cols);
    if constexpr (!same)
      std::transform(dst, dst + n * cols, a.begin() + r * cols,
                     [](In v) { return static_cast<S>(v); });
    if (progress && scan->clean()) progress(r + n, rows);
  }
  return scan->clean();
}

template <class In>
std::vector<double> exact_impl(const std::function<void(int64_t, int64_t, In*)>& read, int64_t rows,
                               int64_t cols, bool float64, FiniteScan* scan, SpectrumTiming* timing,
                               const Progress& progress) {
  SpectrumTiming local;
  if (!timing) timing = &local;
  auto start = std::chrono::steady_clock::now();
  std::vector<float> a32;
  std::vector<double> a64;
  const bool clean = float64 ? read_whole(read, rows, cols, a64, scan, progress)
                             : read_whole(read, rows, cols, a32, scan, progress);
  if (!clean) return {};
  timing->read += since(start);
  start = std::chrono::steady_clock::now();
  auto s = float64 ? gesdd(a64, rows, cols) : gesdd(a32, rows, cols);
  timing->solve += since(start);
  return s;
}

}  // namespace

std::vector<double> singular_values_exact(const RowReader& read, int64_t rows, int64_t cols,
                                          bool float64, FiniteScan* scan, SpectrumTiming* timing,
                                          const Progress& progress) {
  return exact_impl(read, rows, cols, float64, scan, timing, progress);
}

std::vector<double> singular_values_exact(const RowReader64& read, int64_t rows, int64_t cols,
                                          bool float64, FiniteScan* scan, SpectrumTiming* timing,
                                          const Progress& progress) {
  return exact_impl(read, rows, cols, float64, scan, timing, progress);
}

std::string eigen_solver_name(EigenSolver solver, int64_t m) {
  const bool two_stage =
      solver == EigenSolver::dsyevd_2stage || (solver == EigenSolver::automatic && m >= 6000);
  return two_stage ? "dsyevd_2stage" : "dsyevd";
}

namespace {

// accumulate_gram for rows read as In (float or double): float64 rows are copied as read.
template <class In>
GramMatrix accumulate_gram_impl(const std::function<void(int64_t, int64_t, In*)>& read,
                                int64_t rows, int64_t cols, int64_t block_rows, FiniteScan* scan,
                                SpectrumTiming* timing, const Progress& progress, bool overlap) {
  SpectrumTiming local;
  if (!timing) timing = &local;
  const int64_t m = cols;
  GramMatrix gram;
  gram.rows = rows;
  gram.cols = cols;
  GramAccumulator g(
      m);  // upper triangle of A^T A, col-major, one rounding per block (gram_block.h)
  // Rows arrive through a staging buffer of at most 16 MB and are converted into one of two
  // float64 blocks: the reader fills one while dsyrk consumes the other.
  const int64_t stage_rows =
      std::min(block_rows, std::max<int64_t>(1, (int64_t{16} << 20) / (int64_t{sizeof(In)} * m)));
  std::vector<In> stage(static_cast<size_t>(stage_rows * m));
  bool positive = false, negative = false;
  // Rows [begin, begin + count) into out as float64; false at non-finite entries.
  auto load = [&](int64_t begin, int64_t count, double* out) {
    for (int64_t s = 0; s < count; s += stage_rows) {
      const int64_t c = std::min(stage_rows, count - s);
      read(begin + s, c, stage.data());
      scan->scan(stage.data(), begin + s, c, m);
      if (!scan->clean()) return false;
      double* dst = out + s * m;
      for (int64_t i = 0; i < c * m; ++i) {
        const In v = stage[static_cast<size_t>(i)];
        positive |= v > 0;
        negative |= v < 0;
        dst[i] = v;
      }
    }
    return true;
  };
  const bool ok = stream_blocks(
      rows, m, block_rows, overlap, timing, load,
      [&](const double* block, int64_t n) {
        // The row-major n x M block X is the column-major M x n matrix Y = X^T, and
        // X^T X = Y Y^T.
        g.add(block, n, m, /*trans=*/false);
      },
      [&](int64_t done) {
        if (progress) progress(done, rows);
      });
  if (!ok) return gram;
  gram.chain = g.chain();
  gram.g = g.take();
  gram.same_sign = !(positive && negative);
  return gram;
}

}  // namespace

GramMatrix accumulate_gram(const RowReader& read, int64_t rows, int64_t cols, int64_t block_rows,
                           FiniteScan* scan, SpectrumTiming* timing, const Progress& progress,
                           bool overlap) {
  return accumulate_gram_impl(read, rows, cols, block_rows, scan, timing, progress, overlap);
}

GramMatrix accumulate_gram(const RowReader64& read, int64_t rows, int64_t cols, int64_t block_rows,
                           FiniteScan* scan, SpectrumTiming* timing, const Progress& progress,
                           bool overlap) {
  return accumulate_gram_impl(read, rows, cols, block_rows, scan, timing, progress, overlap);
}

std::vector<double> gram_singular_values(GramMatrix&& gram, EigenSolver solver,
                                         SpectrumTiming* timing) {
  std::vector<double> g = std::move(gram.g);
  return gram_singular_values(g.data(), gram.order(), std::min(gram.rows, gram.cols), solver,
                              timing);
}

std::vector<double> gram_singular_values(double* g, int64_t m, int64_t min_side, EigenSolver solver,
                                         SpectrumTiming* timing) {
  SpectrumTiming local;
  if (!timing) timing = &local;
  std::vector<double> w(static_cast<size_t>(m));
  const auto start = std::chrono::steady_clock::now();
  const bool two_stage = eigen_solver_name(solver, m) == "dsyevd_2stage";
  const auto lm = static_cast<lapack_int>(m);
  const lapack_int info =
      two_stage ? LAPACKE_dsyevd_2stage(LAPACK_COL_MAJOR, 'N', 'U', lm, g, lm, w.data())
                : LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'N', 'U', lm, g, lm, w.data());
  if (info != 0)  // as gesdd's: the data's failure or LAPACKE's workspace
    throw InputError::described(
        "", "",
        std::string(two_stage ? "LAPACKE_dsyevd_2stage" : "LAPACKE_dsyevd") + " failed on the " +
            std::to_string(m) + " x " + std::to_string(m) +
            " Gram matrix: info = " + std::to_string(info));
  timing->solve += since(start);
  // Eigenvalues come ascending; round-off can make the smallest slightly negative.
  std::vector<double> s(w.size());
  std::transform(w.rbegin(), w.rend(), s.begin(),
                 [](double l) { return std::sqrt(std::max(l, 0.0)); });
  // Only min(T, M) singular values exist; the rest of G's spectrum is round-off around zero.
  s.resize(static_cast<size_t>(std::min(min_side, m)));
  return s;
}

namespace {
template <class Reader>
std::vector<double> gram_spectrum(const Reader& read, int64_t rows, int64_t cols,
                                  int64_t block_rows, FiniteScan* scan, SpectrumTiming* timing,
                                  EigenSolver solver, const Progress& progress) {
  auto gram = accumulate_gram(read, rows, cols, block_rows, scan, timing, progress);
  if (gram.g.empty()) return {};
  return gram_singular_values(std::move(gram), solver, timing);
}
}  // namespace

std::vector<double> singular_values_gram(const RowReader& read, int64_t rows, int64_t cols,
                                         int64_t block_rows, FiniteScan* scan,
                                         SpectrumTiming* timing, EigenSolver solver,
                                         const Progress& progress) {
  return gram_spectrum(read, rows, cols, block_rows, scan, timing, solver, progress);
}

std::vector<double> singular_values_gram(const RowReader64& read, int64_t rows, int64_t cols,
                                         int64_t block_rows, FiniteScan* scan,
                                         SpectrumTiming* timing, EigenSolver solver,
                                         const Progress& progress) {
  return gram_spectrum(read, rows, cols, block_rows, scan, timing, solver, progress);
}

}  // namespace sb::analysis
