#include "analysis/collective.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "analysis/input_kind.h"

namespace sb::analysis {

std::pair<int64_t, int64_t> row_share(int64_t rows, int rank, int size) {
  const int64_t base = rows / size, extra = rows % size;
  const int64_t first = rank * base + std::min<int64_t>(rank, extra);
  return {first, base + (rank < extra ? 1 : 0)};
}

RowShare::RowShare(const MatrixSource& inner, int64_t first, int64_t count)
    : ForwardingSource(inner),
      first_(first),
      count_(count),
      min_(std::numeric_limits<double>::infinity()),
      max_(-std::numeric_limits<double>::infinity()) {}

template <class T>
void RowShare::note(const T* rows, int64_t n) const {
  const auto [lo, hi] = std::minmax_element(rows, rows + n);
  if (n > 0) {
    min_ = std::min(min_, static_cast<double>(*lo));
    max_ = std::max(max_, static_cast<double>(*hi));
  }
}

void RowShare::read_rows(int64_t begin, int64_t count, float* out) const {
  inner().read_rows(first_ + begin, count, out);
  note(out, count * cols());
}

void RowShare::read_rows(int64_t begin, int64_t count, double* out) const {
  inner().read_rows(first_ + begin, count, out);
  note(out, count * cols());
}

void reduce_scan(FiniteScan& scan, const Collective& c, int64_t row_offset) {
  std::vector<double> counts = {double(scan.nan), double(scan.pos_inf), double(scan.neg_inf)};
  c.allreduce_sum(counts.data(), 3);
  // The first position over the processes: the smallest row (as the largest -row), then the
  // column on that row.
  const bool any = !scan.clean();
  const double mine = any ? -double(scan.first_row + row_offset) : -1e300;
  double row = mine;
  c.allreduce_max(&row, 1);
  double col = any && mine == row ? -double(scan.first_col) : -1e300;
  c.allreduce_max(&col, 1);
  scan.nan = static_cast<int64_t>(counts[0]);
  scan.pos_inf = static_cast<int64_t>(counts[1]);
  scan.neg_inf = static_cast<int64_t>(counts[2]);
  if (!scan.clean()) {
    scan.first_row = static_cast<int64_t>(-row);
    scan.first_col = static_cast<int64_t>(-col);
  }
}

void reduce_normalisation(NormalisationCheck& check, const Collective& c) {
  // The first non-normalised row over the processes (the largest -row), its logsumexp, and the
  // largest |logsumexp|.
  const double mine = check.normalised() ? -1e300 : -double(check.first_bad_row());
  std::vector<double> v = {mine, check.max_abs_logsumexp()};
  c.allreduce_max(v.data(), 2);
  double lse = mine == v[0] && mine > -1e300 ? check.first_bad_logsumexp() : -1e300;
  c.allreduce_max(&lse, 1);
  check.merge(v[0] > -1e300 ? static_cast<int64_t>(-v[0]) : -1, lse, v[1]);
}

bool reduce_same_sign(double min_seen, double max_seen, const Collective& c) {
  std::vector<double> v = {max_seen, -min_seen};
  c.allreduce_max(v.data(), 2);
  const double max = v[0], min = -v[1];
  return max <= 0 || min >= 0;
}

}  // namespace sb::analysis
