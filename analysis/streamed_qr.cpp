#include "analysis/streamed_qr.h"

#include <lapacke.h>

#include <algorithm>
#include <string>

#include "analysis/inertia.h"
#include "common/errors.h"

namespace sb::analysis {
void check_sketch_lapack(int64_t info, const char* routine, int64_t n) {
  if (info != 0)
    throw InputError::described("", "",
                                std::string("sketch: LAPACKE_") + routine + " returned " +
                                    std::to_string(info) + " on a matrix with " +
                                    std::to_string(n) + " columns");
}

namespace {

// k gamma_(2m): the backward error factor of one Householder QR of m rows and k columns.
double qr_step_factor(int64_t m, int64_t k) {
  return static_cast<double>(k) * gamma_float64(2.0 * static_cast<double>(m));
}

}  // namespace

StreamedQr::StreamedQr(int64_t k, int64_t chunk_rows)
    : k_(std::max<int64_t>(k, 1)), chunk_(std::max<int64_t>(chunk_rows, 1)) {
  buf_.assign(static_cast<size_t>((k_ + chunk_) * k_), 0.0);
}

void StreamedQr::add(const double* z, int64_t n, int64_t ld) {
  const int64_t ldb = k_ + chunk_;
  for (int64_t done = 0; done < n;) {
    if (pending_ == chunk_) factor();
    const int64_t take = std::min(n - done, chunk_ - pending_);
    for (int64_t j = 0; j < k_; ++j) {
      const double* src = z + j * ld + done;
      double* dst = buf_.data() + j * ldb + k_ + pending_;
      double sq = 0;
      for (int64_t i = 0; i < take; ++i) {
        dst[i] = src[i];
        sq += src[i] * src[i];
      }
      frobenius_sq_ += sq;
    }
    pending_ += take;
    done += take;
  }
}

void StreamedQr::factor() {
  const int64_t ldb = k_ + chunk_;
  // Before the first factorisation the top k rows are zero: factor the pending rows alone.
  const int64_t top = have_r_ ? 0 : k_;
  const int64_t m = k_ - top + pending_;
  if (pending_ == 0) return;
  double* s = buf_.data() + top;
  const int64_t kk = std::min(m, k_);
  std::vector<double> tau(static_cast<size_t>(kk));
  check_sketch_lapack(
      LAPACKE_dgeqrf(LAPACK_COL_MAJOR, static_cast<lapack_int>(m), static_cast<lapack_int>(k_), s,
                     static_cast<lapack_int>(ldb), tau.data()),
      "dgeqrf", k_);
  factor_ += qr_step_factor(m, k_);
  // R: the upper triangle of the top rows (fewer than k rows so far: R's lower rows are zero).
  for (int64_t j = 0; j < k_; ++j)
    for (int64_t i = 0; i < k_; ++i) {
      const double v = (i <= j && i < m) ? s[i + j * ldb] : 0.0;
      buf_[static_cast<size_t>(i + j * ldb)] = v;
    }
  have_r_ = true;
  pending_ = 0;
}

const std::vector<double>& StreamedQr::finish() {
  factor();
  const int64_t ldb = k_ + chunk_;
  r_.assign(static_cast<size_t>(k_ * k_), 0.0);
  if (have_r_)
    for (int64_t j = 0; j < k_; ++j)
      for (int64_t i = 0; i <= j; ++i)
        r_[static_cast<size_t>(i + j * k_)] = buf_[static_cast<size_t>(i + j * ldb)];
  return r_;
}

const std::vector<double>& StreamedQr::combine(std::vector<double> stacked, int64_t processes) {
  const int64_t m = processes * k_;
  std::vector<double> tau(static_cast<size_t>(k_));
  check_sketch_lapack(
      LAPACKE_dgeqrf(LAPACK_COL_MAJOR, static_cast<lapack_int>(m), static_cast<lapack_int>(k_),
                     stacked.data(), static_cast<lapack_int>(m), tau.data()),
      "dgeqrf", k_);
  factor_ += qr_step_factor(m, k_);
  r_.assign(static_cast<size_t>(k_ * k_), 0.0);
  for (int64_t j = 0; j < k_; ++j)
    for (int64_t i = 0; i <= j; ++i)
      r_[static_cast<size_t>(i + j * k_)] = stacked[static_cast<size_t>(i + j * m)];
  return r_;
}

std::vector<double> singular_values_descending(std::vector<double> r, int64_t k) {
  std::vector<double> s(static_cast<size_t>(k)),
      superb(static_cast<size_t>(std::max<int64_t>(k, 2)));
  const auto lk = static_cast<lapack_int>(k);
  check_sketch_lapack(LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'N', 'N', lk, lk, r.data(), lk, s.data(),
                                     nullptr, 1, nullptr, 1, superb.data()),
                      "dgesvd", k);
  return s;  // dgesvd returns them in descending order
}

void householder_qr(double* y, int64_t m, int64_t k, std::vector<double>* r) {
  std::vector<double> tau(static_cast<size_t>(k));
  const auto lm = static_cast<lapack_int>(m), lk = static_cast<lapack_int>(k);
  check_sketch_lapack(LAPACKE_dgeqrf(LAPACK_COL_MAJOR, lm, lk, y, lm, tau.data()), "dgeqrf", k);
  if (r) {
    r->assign(static_cast<size_t>(k * k), 0.0);
    for (int64_t j = 0; j < k; ++j)
      for (int64_t i = 0; i <= j; ++i) (*r)[static_cast<size_t>(i + j * k)] = y[i + j * m];
  }
  check_sketch_lapack(LAPACKE_dorgqr(LAPACK_COL_MAJOR, lm, lk, lk, y, lm, tau.data()), "dorgqr", k);
}

std::vector<double> left_singular_vectors(std::vector<double> r, int64_t k) {
  std::vector<double> s(static_cast<size_t>(k)), u(static_cast<size_t>(k * k)),
      superb(static_cast<size_t>(std::max<int64_t>(k, 2)));
  const auto lk = static_cast<lapack_int>(k);
  check_sketch_lapack(LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'A', 'N', lk, lk, r.data(), lk, s.data(),
                                     u.data(), lk, nullptr, 1, superb.data()),
                      "dgesvd", k);
  return u;
}

std::vector<double> right_singular_vectors_t(std::vector<double> r, int64_t k) {
  std::vector<double> s(static_cast<size_t>(k)), vt(static_cast<size_t>(k * k)),
      superb(static_cast<size_t>(std::max<int64_t>(k, 2)));
  const auto lk = static_cast<lapack_int>(k);
  check_sketch_lapack(LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'N', 'A', lk, lk, r.data(), lk, s.data(),
                                     nullptr, 1, vt.data(), lk, superb.data()),
                      "dgesvd", k);
  return vt;
}

double svd_error_estimate(int64_t k, double frobenius) {
  return 2.0 * static_cast<double>(k) * gamma_float64(2.0 * static_cast<double>(k)) * frobenius;
}

}  // namespace sb::analysis
