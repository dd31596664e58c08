// The row Gram A A^T (analysis/row_gram.h) against the column Gram A^T A and the exact SVD on
// matrices with prescribed singular values (A = U diag(s) V^T in float64 with random orthonormal
// U, V), wide and tall, and its certificate on spectra packed around tol.

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "analysis/inertia.h"
#include "analysis/numerical_rank.h"
#include "analysis/rank_certificate.h"
#include "analysis/row_gram.h"
#include "analysis/spectrum.h"
#include "tests/fixtures/prescribed_matrix.h"

using namespace sb::analysis;
using sb::test::prescribed_matrix;
using sb::test::reader;

namespace {

// tol^2 / lambda_1 of the Numerical Recipes threshold (symmetric in T and M).
double tol2_factor(int64_t rows, int64_t cols, double eps) {
  const double t = 0.5 * std::sqrt(double(rows + cols + 1)) * eps;
  return t * t;
}

int64_t count_above(const std::vector<double>& lambda, double t) {
  return std::count_if(lambda.begin(), lambda.end(), [&](double l) { return l > t; });
}

}  // namespace

TEST_CASE(
    "gram: the row Gram A A^T, the column Gram A^T A and the exact SVD give the prescribed "
    "singular values and the same certified rank, wide and tall") {
  // 40 singular values log-spaced from 1 to 1e-5, the rest 0: tol = 0.5 sqrt(651) eps32 = 1.5e-6.
  for (const auto& [t, m] : {std::pair<int64_t, int64_t>{150, 500}, {500, 150}}) {
    INFO("T = " << t << ", M = " << m);
    const int64_t k = std::min(t, m);
    std::vector<double> s(static_cast<size_t>(k), 0.0);
    for (int i = 0; i < 40; ++i) s[size_t(i)] = std::pow(1e-5, i / 39.0);
    const auto a = prescribed_matrix(t, m, s, 11);
    FiniteScan scan;
    const auto exact = singular_values_exact(reader(a, m), t, m, true, &scan);
    auto column_gram = accumulate_gram(reader(a, m), t, m, 64, &scan);
    // 37 columns per panel: several passes, the last one narrower.
    auto row_gram = accumulate_row_gram(reader(a, m), t, m, 37, &scan);
    REQUIRE(scan.clean());
    CHECK(row_gram.row_gram);
    CHECK(row_gram.order() == t);
    CHECK(row_gram.inner() == m);
    CHECK(column_gram.order() == m);
    // The row Gram entrywise against dgemm's A A^T: both float64 dot products of M terms, within
    // 2 gamma_M sum_k |a_ik| |a_jk| <= 2 M eps64 max_i ||a_i||^2 = 2 * 500 * 2.2e-16 * 1 ~ 2e-13.
    std::vector<double> aat(static_cast<size_t>(t * t));
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, int(t), int(t), int(m), 1.0, a.data(),
                int(m), a.data(), int(m), 0.0, aat.data(), int(t));
    double worst = 0;
    for (int64_t j = 0; j < t; ++j)
      for (int64_t i = 0; i <= j; ++i)
        worst = std::max(worst, std::abs(row_gram.g[size_t(i + j * t)] - aat[size_t(i + j * t)]));
    CHECK(worst < 2e-13);
    const bool same_sign = row_gram.same_sign;
    const auto by_rows = gram_singular_values(std::move(row_gram), EigenSolver::automatic);
    const auto by_cols = gram_singular_values(std::move(column_gram), EigenSolver::automatic);
    REQUIRE(by_rows.size() == size_t(k));
    REQUIRE(by_cols.size() == size_t(k));
    REQUIRE(exact.size() == size_t(k));
    for (size_t i = 0; i < size_t(k); ++i) {
      INFO("sigma_" << i + 1 << " = " << s[i]);
      // The exact float64 SVD: backward stable, |sigma - s| <= a few eps64 sigma_1 (1e-14).
      CHECK(std::abs(exact[i] - s[i]) < 1e-14);
      // Either Gram: its eigenvalues within the Gram's rounding plus the eigensolver's error,
      // ~ n eps64 lambda_1 = 500 * 2.2e-16 = 1.1e-13; 1e-12 leaves a factor 9. On sigma that is
      // |sigma^2 - s^2| <= 1e-12: below the 1e-6 of the smallest nonzero s^2 (1e-10) by 100.
      CHECK(std::abs(by_rows[i] * by_rows[i] - s[i] * s[i]) < 1e-12);
      CHECK(std::abs(by_cols[i] * by_cols[i] - s[i] * s[i]) < 1e-12);
    }
    auto ranks = [&](const std::vector<double>& sigma, double resolution) {
      return numerical_rank(sigma, t, m, kFloat32Eps, 40, true, resolution);
    };
    const auto re = ranks(exact, kFloat64Eps);
    auto rr = ranks(by_rows, std::sqrt(kFloat64Eps));
    auto rc = ranks(by_cols, std::sqrt(kFloat64Eps));
    certify_from_spectrum(rr, by_rows, /*inner=*/m, /*order=*/t, same_sign);
    certify_from_spectrum(rc, by_cols, /*inner=*/t, /*order=*/m, same_sign);
    CHECK(re.rank == 40);
    CHECK(rr.rank == 40);
    CHECK(rc.rank == 40);
    CHECK(rr.certified);
    CHECK(rc.certified);
    // The sweep from tol / 10 up: tol / 100 = 1.5e-8 is the Gram's resolution, where its
    // round-off singular values (~1e-8 here) sit.
    for (size_t j = 1; j < 5; ++j) {
      CHECK(rr.rank_sweep[j] == re.rank_sweep[j]);
      CHECK(rc.rank_sweep[j] == re.rank_sweep[j]);
    }
  }
}

TEST_CASE(
    "gram: the row Gram's certificate is sound on spectra packed around tol: certified when clear, "
    "the true rank within rank +- uncertain when not") {
  const int64_t t = 120, m = 2000;
  const double tau = tol2_factor(m, t, kFloat32Eps);  // tol^2 with sigma_1 = 1
  // lambda_1 = 1, 19 more log-spaced down to 3 tau; then either 10 eigenvalues packed at
  // tau (1.002 + 0.004 j), j = -5..4 (inside the window, which is tau (1 +- ~10%): gamma_M trace
  // = 2000 * 1.1e-16 * 2.4 = 5e-13 = 7% of tau = 7.5e-12, plus the eigensolver's estimate), or
  // none; the rest at tau / 3, outside the window.
  for (bool packed : {false, true}) {
    INFO((packed ? "with" : "without") << " ten eigenvalues packed around tol^2");
    const auto lambda = sb::test::packed_eigenvalues(tau, t, packed);
    const auto a = prescribed_matrix(t, m, sb::test::square_roots(lambda), 17);
    FiniteScan scan;
    auto g = accumulate_row_gram(reader(a, m), t, m, 0, &scan);
    REQUIRE(scan.clean());
    const bool same_sign = g.same_sign;
    CHECK_FALSE(same_sign);  // random signs: the bound takes gamma_M trace
    // The rank-only route on the row Gram: the count by inertia, inner dimension M.
    InertiaCounter counter(std::vector<double>(g.g), t);
    const auto r = rank_by_inertia(counter, m, kFloat32Eps, same_sign, 20, true);
    // The eigenvalue route.
    const auto sigma = gram_singular_values(std::move(g), EigenSolver::automatic);
    auto e = numerical_rank(sigma, t, m, kFloat32Eps, 20, true, std::sqrt(kFloat64Eps));
    certify_from_spectrum(e, sigma, m, t, same_sign);
    // The true rank: lambda_1 = 1 up to the construction's rounding (~1e-15), so tol^2 = tau;
    // the packed eigenvalues lie >= 0.2% = 1.5e-14 from it.
    const int64_t truth = count_above(lambda, tau);
    for (const sb::contract::RankReport* rep :
         {&r, static_cast<const sb::contract::RankReport*>(&e)}) {
      INFO((rep == &r ? "inertia" : "eigenvalues")
           << ": rank " << rep->rank << " in [" << rep->rank_min << ", " << rep->rank_max
           << "], truth " << truth);
      CHECK(std::abs(rep->rank - truth) <= rep->uncertain);
      CHECK(rep->rank_min <= truth);
      CHECK(rep->rank_max >= truth);
      if (packed) {
        CHECK_FALSE(rep->certified);
        CHECK(rep->rank_min == 20);  // the 20 clearly above
        CHECK(rep->rank_max == 30);  // and the 10 packed ones
      } else {
        CHECK(rep->certified);
        CHECK(rep->rank == 20);
      }
    }
  }
}

TEST_CASE(
    "gram: the row Gram from rows kept in memory equals, bit for bit, the one that reads the "
    "file once per panel") {
  // 7 panels of 37 columns (the last narrower); the kept path gathers the panels from the first
  // pass's rows, so every dsyrk sees the same panel and G must not differ in a single bit.
  const int64_t t = 90, m = 250;
  std::vector<double> s(static_cast<size_t>(t), 0.0);
  for (int i = 0; i < 30; ++i) s[size_t(i)] = std::pow(1e-3, i / 29.0);
  const auto a64 = prescribed_matrix(t, m, s, 23);
  const std::vector<float> a(a64.begin(), a64.end());  // rows are kept for float32 data
  REQUIRE(row_gram_keeps_rows(t, m, 37, kRowGramKeepBytes));
  REQUIRE_FALSE(row_gram_keeps_rows(t, m, 37, 0));
  REQUIRE_FALSE(row_gram_keeps_rows(t, m, m, kRowGramKeepBytes));  // one pass: nothing to keep
  int64_t reads_kept = 0, reads_each = 0;
  auto counted = [&](int64_t& reads) {
    return [&, inner = reader(a, m)](int64_t begin, int64_t count, float* out) {
      reads += count;
      inner(begin, count, out);
    };
  };
  FiniteScan scan_kept, scan_each;
  const auto kept = accumulate_row_gram(counted(reads_kept), t, m, 37, &scan_kept, nullptr, {});
  const auto each = accumulate_row_gram(counted(reads_each), t, m, 37, &scan_each, nullptr, {}, 0);
  REQUIRE(scan_kept.clean());
  REQUIRE(scan_each.clean());
  CHECK(reads_kept == t);      // the file read once
  CHECK(reads_each == 7 * t);  // once per panel
  REQUIRE(kept.g.size() == each.g.size());
  CHECK(kept.g == each.g);
  CHECK(kept.same_sign == each.same_sign);
}
