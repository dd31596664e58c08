// The streamed QR (analysis/streamed_qr.h) against LAPACK run on the whole matrix at once: the
// same singular values and the same R^T R, whatever the chunk and the block sizes, and several
// streams combined as one; its singular values of a matrix with a prescribed spectrum resolve
// values far below sqrt(u) sigma_1, where the eigenvalues of Z^T Z stop.

#include <cblas.h>
#include <lapacke.h>

#include <cmath>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "analysis/inertia.h"
#include "analysis/sketch_parts.h"
#include "analysis/streamed_qr.h"
#include "tests/fixtures/prescribed_matrix.h"

using namespace sb::analysis;

namespace {

constexpr double kU = 1.1102230246251565e-16;  // 2^-53

std::vector<double> gaussian(int64_t n, int64_t k, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal;
  std::vector<double> z(static_cast<size_t>(n * k));
  for (auto& v : z) v = normal(gen);
  return z;
}

// Singular values of the column-major n x k matrix z by dgesvd on all of it at once.
std::vector<double> direct_singular_values(std::vector<double> z, int64_t n, int64_t k) {
  std::vector<double> s(static_cast<size_t>(k)), superb(static_cast<size_t>(k));
  REQUIRE(LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'N', 'N', n, k, z.data(), n, s.data(), nullptr, 1,
                         nullptr, 1, superb.data()) == 0);
  return s;
}

// Streams rows [from, to) of the column-major n x k matrix z in blocks of `block` rows.
void stream(StreamedQr& qr, const std::vector<double>& z, int64_t n, int64_t from, int64_t to,
            int64_t block) {
  const int64_t k = qr.cols();
  for (int64_t b = from; b < to; b += block) {
    const int64_t rows = std::min(block, to - b);
    std::vector<double> part(static_cast<size_t>(rows * k));
    for (int64_t j = 0; j < k; ++j)
      for (int64_t i = 0; i < rows; ++i)
        part[static_cast<size_t>(i + j * rows)] = z[static_cast<size_t>(b + i + j * n)];
    qr.add(part.data(), rows, rows);
  }
}

double frobenius(const std::vector<double>& z) {
  double s = 0;
  for (double v : z) s += v * v;
  return std::sqrt(s);
}

}  // namespace

TEST_CASE(
    "streamed QR: R's singular values are the whole matrix's and R^T R is Z^T Z, for any chunk, "
    "block size and split over processes, within the stated backward error") {
  const int64_t n = 1000, k = 37;
  const auto z = gaussian(n, k, 3);
  const auto truth = direct_singular_values(z, n, k);
  const double zf = frobenius(z);
  // Z^T Z by dsyrk, the independent Gram.
  std::vector<double> gram(static_cast<size_t>(k * k), 0.0);
  cblas_dsyrk(CblasColMajor, CblasUpper, CblasTrans, k, n, 1.0, z.data(), n, 0.0, gram.data(), k);
  // chunk below k, not dividing n, above n; blocks of 1 row, odd sizes, all at once.
  for (const auto& [chunk, block] : std::vector<std::pair<int64_t, int64_t>>{
           {5, 7}, {37, 1}, {100, 33}, {333, 250}, {4096, 1000}}) {
    INFO("chunk " << chunk << ", block " << block);
    StreamedQr qr(k, chunk);
    stream(qr, z, n, 0, n, block);
    const auto r = qr.finish();
    CHECK(qr.frobenius_sq() == Approx(zf * zf).epsilon(1e-12));
    const double f = qr.backward_error();
    // f = sum over steps of k gamma_(2 m_j): at least one step of n rows or ceil(n / chunk) steps.
    CHECK(f >= k * gamma_float64(2.0 * static_cast<double>(std::min(n, chunk))));
    for (int64_t j = 0; j < k; ++j)
      for (int64_t i = j + 1; i < k; ++i) REQUIRE(r[static_cast<size_t>(i + j * k)] == 0.0);
    const auto s = singular_values_descending(r, k);
    const double bound = f * (1 + f) * zf + svd_error_estimate(k, zf * (1 + f));
    double worst = 0;
    for (int64_t i = 0; i < k; ++i) {
      const double err = std::abs(s[size_t(i)] - truth[size_t(i)]);
      worst = std::max(worst, err);
      CHECK(err <= bound + 4 * svd_error_estimate(k, zf));  // both sides' dgesvd error
    }
    // The actual error is rounding of order u ||Z||_F: the bound is a worst case far above it.
    CHECK(worst < 1e3 * kU * zf);
    // R^T R against Z^T Z entrywise, to gamma_n ||Z||_F^2 (the Gram's own rounding dominates).
    std::vector<double> rtr(static_cast<size_t>(k * k), 0.0);
    cblas_dsyrk(CblasColMajor, CblasUpper, CblasTrans, k, k, 1.0, r.data(), k, 0.0, rtr.data(), k);
    for (int64_t j = 0; j < k; ++j)
      for (int64_t i = 0; i <= j; ++i)
        CHECK(std::abs(rtr[size_t(i + j * k)] - gram[size_t(i + j * k)]) <=
              gamma_float64(2.0 * n) * zf * zf);
  }
  SECTION("three streams combined equal one") {
    const int64_t parts[4] = {0, 300, 301, n};  // one share of a single row
    std::vector<double> stacked(static_cast<size_t>(3 * k * k), 0.0);
    double f_max = 0;
    for (int p = 0; p < 3; ++p) {
      StreamedQr qr(k, 64);
      stream(qr, z, n, parts[p], parts[p + 1], 50);
      const auto r = qr.finish();
      f_max = std::max(f_max, qr.backward_error());
      for (int64_t j = 0; j < k; ++j)
        for (int64_t i = 0; i <= j; ++i)
          stacked[static_cast<size_t>(p * k + i + j * 3 * k)] = r[static_cast<size_t>(i + j * k)];
    }
    StreamedQr combined(k, 1);
    combined.set_backward_error(f_max);
    const auto s = singular_values_descending(combined.combine(stacked, 3), k);
    CHECK(combined.backward_error() > f_max);
    for (int64_t i = 0; i < k; ++i)
      CHECK(std::abs(s[size_t(i)] - truth[size_t(i)]) < 1e3 * kU * zf);
  }
}

TEST_CASE(
    "streamed QR: singular values down to 1e-12 sigma_1 come out to about u sigma_1, where the "
    "eigenvalues of Z^T Z lose everything below sqrt(u) sigma_1") {
  const int64_t n = 600, k = 30;
  std::vector<double> s;
  for (int64_t i = 0; i < k; ++i) s.push_back(std::pow(1e-12, double(i) / double(k - 1)));
  const auto a = sb::test::prescribed_matrix(n, k, s, /*seed=*/9);  // row-major n x k
  std::vector<double> z(static_cast<size_t>(n * k));                // column-major
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j) z[size_t(i + j * n)] = a[size_t(i * k + j)];
  StreamedQr qr(k, 128);
  stream(qr, z, n, 0, n, 100);
  const auto got = singular_values_descending(qr.finish(), k);
  // The eigenvalues of the Gram, for contrast: their square roots below ~1e-8 are noise.
  std::vector<double> gram(static_cast<size_t>(k * k), 0.0), w(static_cast<size_t>(k));
  cblas_dsyrk(CblasColMajor, CblasUpper, CblasTrans, k, n, 1.0, z.data(), n, 0.0, gram.data(), k);
  REQUIRE(LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'N', 'U', k, gram.data(), k, w.data()) == 0);
  double gram_worst = 0;
  for (int64_t i = 0; i < k; ++i) {
    INFO("sigma_" << i + 1 << " = " << s[size_t(i)]);
    // prescribed_matrix holds its values to a few u sigma_1 (its own rounding): 100 u.
    CHECK(std::abs(got[size_t(i)] - s[size_t(i)]) < 100 * kU);
    const double from_gram = std::sqrt(std::max(w[size_t(k - 1 - i)], 0.0));
    gram_worst = std::max(gram_worst, std::abs(from_gram - s[size_t(i)]));
  }
  // The contrast that motivates the one-sided finish: the Gram's square roots are off by far
  // more than u at the small values (about sqrt(u) = 1e-8; asserted loosely: > 1e4 u).
  CHECK(gram_worst > 1e4 * kU);
}

TEST_CASE(
    "streamed QR: the sketch's chunk keeps the backward error within 12.5% of one factorisation "
    "of every row, where a chunk of 2k would add half") {
  // f is what the streamed steps add up to (streamed_qr.h); it does not depend on the values, so
  // a zero block of T rows measures it. T a multiple of both chunks keeps the ratio exact.
  for (const int64_t k : {int64_t{300}, int64_t{1100}}) {
    INFO("k = " << k);
    const int64_t chunk = sketch_detail::qr_chunk_rows(k);
    CHECK(chunk >= 8 * k);
    const int64_t n = 4 * chunk;
    const double one_step = static_cast<double>(k) * gamma_float64(2.0 * static_cast<double>(n));
    auto factor = [&](int64_t c) {
      StreamedQr qr(k, c);
      const std::vector<double> z(static_cast<size_t>(c * k), 0.0);  // c rows, column-major
      for (int64_t at = 0; at < n; at += c) qr.add(z.data(), c, c);
      qr.finish();
      return qr.backward_error();
    };
    const double sketch_f = factor(chunk);
    CHECK(sketch_f <= 1.125 * one_step * (1 + 1e-9));
    CHECK(sketch_f >= one_step);
    if (k == 300) CHECK(factor(2 * k) >= 1.45 * one_step);  // the 2k chunk the sketch had used
  }
}
