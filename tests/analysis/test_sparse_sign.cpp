// The sketch's sparse start (analysis/sparse_sign.h) against a dense float64 product of the same
// test matrix, and its construction against its definition.

#include <cmath>
#include <random>
#include <set>
#include <vector>

#include <catch2/catch.hpp>

#include "analysis/sparse_sign.h"

using sb::analysis::SparseSign;

TEST_CASE(
    "sparse sign: every row of Omega has zeta nonzeros of +-1/sqrt(zeta) at distinct columns, so "
    "that each row has unit norm") {
  std::mt19937_64 rng(3);
  for (const int zeta : {1, 4, 8, 50}) {  // 50 > k: clamped to k
    INFO("zeta " << zeta);
    const int64_t m = 300, k = 40;
    const SparseSign omega(m, k, zeta, rng);
    const int expected = std::min<int>(zeta, static_cast<int>(k));
    CHECK(omega.nonzeros() == expected);
    const auto d = omega.dense();
    for (int64_t j = 0; j < m; ++j) {
      int count = 0;
      double norm_sq = 0;
      for (int64_t c = 0; c < k; ++c) {
        const double v = d[static_cast<size_t>(j + c * m)];
        if (v == 0) continue;
        ++count;
        norm_sq += v * v;
        // 1 ulp: 1/sqrt(zeta) is rounded once
        CHECK(std::abs(std::abs(v) - 1 / std::sqrt(double(expected))) <= 1e-16);
      }
      CHECK(count == expected);  // distinct columns: a repeat would merge two entries
      CHECK(norm_sq == Approx(1.0).epsilon(1e-15));
    }
  }
}

TEST_CASE(
    "sparse sign: X Omega equals the dense float64 product with Omega, and is bit-identical at "
    "any thread count and for row counts that do not fill a tile") {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal;
  const int64_t m = 257, k = 33;
  const SparseSign omega(m, k, 8, rng);
  const auto d = omega.dense();
  for (const int64_t n : {1, 4, 7, 130}) {
    INFO("rows " << n);
    std::vector<double> x(static_cast<size_t>(n * m));
    for (auto& v : x) v = normal(rng);
    const int64_t ldz = n + 3;  // a leading dimension past n: the gap is left alone
    std::vector<double> z1(static_cast<size_t>(ldz * k), -7.0);
    omega.apply(x.data(), n, z1.data(), ldz, /*threads=*/1);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < k; ++c) {
        double want = 0, size = 0;
        for (int64_t j = 0; j < m; ++j) {
          const double term = x[static_cast<size_t>(i * m + j)] * d[static_cast<size_t>(j + c * m)];
          want += term;
          size += std::abs(term);
        }
        // Both sums of the same <= m nonzero terms in float64, in other orders and with the
        // scale applied once or per term: |difference| <= 2 m u sum |terms| (Higham 2002,
        // section 3.1), m u = 2.9e-14 here.
        CHECK(std::abs(z1[static_cast<size_t>(i + c * ldz)] - want) <= 2 * m * 1.12e-16 * size);
      }
    for (int64_t c = 0; c < k; ++c)
      for (int64_t i = n; i < ldz; ++i) CHECK(z1[static_cast<size_t>(i + c * ldz)] == -7.0);
    for (const int threads : {2, 3, 16}) {
      std::vector<double> z(z1.size(), -7.0);
      omega.apply(x.data(), n, z.data(), ldz, threads);
      CHECK(z == z1);
    }
  }
}

TEST_CASE("sparse sign: the same seed draws the same Omega, another seed another") {
  std::mt19937_64 a(9), b(9), c(10);
  const auto da = SparseSign(100, 20, 4, a).dense();
  CHECK(da == SparseSign(100, 20, 4, b).dense());
  CHECK(da != SparseSign(100, 20, 4, c).dense());
}
