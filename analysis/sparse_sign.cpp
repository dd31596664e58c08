#include "analysis/sparse_sign.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <thread>

#include "analysis/float64_lanes.h"
#include "common/vector_clones.h"

namespace sb::analysis {

SparseSign::SparseSign(int64_t m, int64_t k, int nonzeros, std::mt19937_64& rng)
    : m_(m), k_(k), zeta_(static_cast<int>(std::min<int64_t>(std::max(nonzeros, 1), k))) {
  scale_ = 1 / std::sqrt(static_cast<double>(zeta_));
  column_.resize(static_cast<size_t>(m_ * zeta_));
  sign_.resize(column_.size());
  std::uniform_int_distribution<int64_t> pick(0, k_ - 1);
  for (int64_t j = 0; j < m_; ++j) {
    int32_t* col = column_.data() + j * zeta_;
    for (int l = 0; l < zeta_; ++l) {
      int32_t c;
      do {  // distinct columns: zeta <= k, and zeta is small beside k in use
        c = static_cast<int32_t>(pick(rng));
      } while (std::find(col, col + l, c) != col + l);
      col[l] = c;
      sign_[static_cast<size_t>(j * zeta_ + l)] = (rng() & 1) ? int8_t{1} : int8_t{-1};
    }
  }
}

namespace {

// Z's row i of X Omega (the rows past the last whole tile of tile_wide): Omega's row j's zeta
// columns and signs, each row summed over j in order into acc (k doubles, in the L1 cache).
void tile_row(const double* x, int64_t i, int64_t m, int64_t k, int zeta, const int32_t* column,
              const int8_t* sign, double scale, double* acc, double* z, int64_t ldz) {
  std::fill(acc, acc + k, 0.0);
  const double* row = x + i * m;
  for (int64_t j = 0; j < m; ++j, column += zeta, sign += zeta)
    for (int l = 0; l < zeta; ++l) acc[column[l]] += sign[l] * row[j];
  for (int64_t c = 0; c < k; ++c) z[i + c * ldz] = scale * acc[c];
}

// Z's rows [i, i + 8) of X Omega: the 8 rows share each read of Omega's row j (its columns
// and signs); their sums sit in one Lanes vector per column (acc: k vectors, in the L1 cache),
// so one (j, l) is one vector load, multiply-add and store (float64_lanes.h). Written in GCC's
// vector extension: the compiler kept a plain loop's 8 lanes scalar (8 loads, FMAs and stores per
// (j, l); 5.3 G multiply-adds per second against 10.3 in bench/bench_sparse_sign at WikiText-2's
// block). Every row is summed over j in order and s v is exact (s = +-1), so each lane's sum is
// tile_row's, with or without FMA.
constexpr int kWide = kLaneRows;

SB_VECTOR_CLONES
void tile_wide(const double* x, int64_t i, int64_t m, int64_t k, int zeta, const int32_t* column,
               const int8_t* sign, double scale, Lanes* acc, double* z, int64_t ldz) {
  const Lanes zero = {};
  std::fill(acc, acc + k, zero);
  const double* row = x + i * m;
  for (int64_t j = 0; j < m; ++j, column += zeta, sign += zeta) {
    Lanes v;
    for (int r = 0; r < kWide; ++r) v[r] = row[r * m + j];
    for (int l = 0; l < zeta; ++l) acc[column[l]] += static_cast<double>(sign[l]) * v;
  }
  for (int64_t c = 0; c < k; ++c)
    for (int r = 0; r < kWide; ++r) z[i + r + c * ldz] = scale * acc[c][r];
}

}  // namespace

void SparseSign::apply_rows(const double* x, int64_t from, int64_t to, double* z,
                            int64_t ldz) const {
  LaneBuffer acc(k_);  // tile_wide's k vectors; tile_row's k doubles
  int64_t i = from;
  for (; i + kWide <= to; i += kWide)
    tile_wide(x, i, m_, k_, zeta_, column_.data(), sign_.data(), scale_, acc.lanes(), z, ldz);
  for (; i < to; ++i)
    tile_row(x, i, m_, k_, zeta_, column_.data(), sign_.data(), scale_, acc.doubles(), z, ldz);
}

void SparseSign::apply(const double* x, int64_t n, double* z, int64_t ldz, int threads) const {
  const int64_t parts = std::clamp<int64_t>(threads, 1, std::max<int64_t>(n, 1));
  if (parts == 1) return apply_rows(x, 0, n, z, ldz);
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < parts; ++t)
    pool.emplace_back([=] { apply_rows(x, n * t / parts, n * (t + 1) / parts, z, ldz); });
  apply_rows(x, 0, n / parts, z, ldz);
  for (auto& th : pool) th.join();
}

std::vector<double> SparseSign::times(const double* x) const {
  std::vector<double> out(static_cast<size_t>(m_));
  for (int64_t j = 0; j < m_; ++j) {
    double sum = 0;
    for (int l = 0; l < zeta_; ++l) {
      const auto at = static_cast<size_t>(j * zeta_ + l);
      sum += sign_[at] * x[column_[at]];
    }
    out[static_cast<size_t>(j)] = scale_ * sum;
  }
  return out;
}

std::vector<double> SparseSign::dense() const {
  std::vector<double> d(static_cast<size_t>(m_ * k_), 0.0);
  for (int64_t j = 0; j < m_; ++j)
    for (int l = 0; l < zeta_; ++l) {
      const auto at = static_cast<size_t>(j * zeta_ + l);
      d[static_cast<size_t>(j + column_[at] * m_)] += scale_ * sign_[at];
    }
  return d;
}

}  // namespace sb::analysis
