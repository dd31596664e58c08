// The range start's fused products (analysis/range_products.h) against independent computations:
// Z = X Omega against SparseSign::apply on the widened rows (the same sums, so bit for bit), and
// Z_p = X W against a long double product, within the bound the certificate takes for it.

#include <cmath>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "analysis/range_products.h"
#include "analysis/sparse_sign.h"

using sb::analysis::range_products;
using sb::analysis::SparseSign;

namespace {

template <class In>
void check_products(int64_t n, int64_t m, int64_t k, int64_t p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  const SparseSign omega(m, k, 8, rng);
  // Rows like log-probabilities: a large shared negative mean, so that cancellation would show.
  std::vector<In> x(static_cast<size_t>(n * m));
  for (auto& v : x) v = static_cast<In>(-10 + normal(rng));
  std::vector<double> w(static_cast<size_t>(m * p));  // (M, p) row-major
  for (auto& v : w) v = normal(rng);
  const int64_t ldz = n + 5;  // a leading dimension past n: the gap is left alone
  auto run = [&](int threads, std::vector<double>& z, std::vector<double>& zp) {
    z.assign(static_cast<size_t>(ldz * k), -7.0);
    zp.assign(static_cast<size_t>(ldz * p), -7.0);
    range_products(x.data(), n, m, omega, w.data(), p, z.data(), zp.data(), ldz, threads);
  };
  std::vector<double> z1, zp1;
  run(1, z1, zp1);
  // Z: SparseSign::apply on the rows widened to float64 (the sparse start's own product).
  const std::vector<double> wide(x.begin(), x.end());
  std::vector<double> want(static_cast<size_t>(ldz * k), -7.0);
  omega.apply(wide.data(), n, want.data(), ldz, /*threads=*/1);
  CHECK(z1 == want);
  // Z_p: each entry within gamma_M sum_j |x_tj| |w_ji| of a long double product (the bound
  // sketch.h's range start takes), and the gap past n untouched.
  const double u = std::ldexp(1.0, -53), gamma = m * u / (1 - m * u);
  int64_t outside = 0;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < p; ++i) {
      long double exact = 0;
      double size = 0;
      for (int64_t j = 0; j < m; ++j) {
        const double a = static_cast<double>(x[static_cast<size_t>(t * m + j)]);
        const double b = w[static_cast<size_t>(j * p + i)];
        exact += static_cast<long double>(a) * b;
        size += std::abs(a * b);
      }
      const double got = zp1[static_cast<size_t>(t + i * ldz)];
      outside += std::abs(got - static_cast<double>(exact)) > gamma * size;
    }
  CHECK(outside == 0);
  for (int64_t i = 0; i < p; ++i)
    for (int64_t t = n; t < ldz; ++t) CHECK(zp1[static_cast<size_t>(t + i * ldz)] == -7.0);
  // The same results at any thread count.
  for (const int threads : {2, 3}) {
    std::vector<double> z, zp;
    run(threads, z, zp);
    CHECK(z == z1);
    CHECK(zp == zp1);
  }
}

}  // namespace

TEST_CASE(
    "range products: Z equals the sparse start's product bit for bit and Z_p lies within "
    "gamma_M of a long double product, for float32 rows, tails past whole tiles and groups, "
    "and at any thread count") {
  // n: inside one tile, a tail past whole tiles, past a group of 64 rows; m past one chunk.
  for (const int64_t n : {int64_t{5}, int64_t{8}, int64_t{77}, int64_t{150}}) {
    INFO("rows " << n);
    check_products<float>(n, /*m=*/1500, /*k=*/33, /*p=*/12, /*seed=*/n);
  }
}

TEST_CASE("range products: the same for float64 rows") {
  check_products<double>(/*n=*/77, /*m=*/1100, /*k=*/20, /*p=*/13, /*seed=*/9);
}
