// The blocked Gram sum (analysis/gram_block.h): each entry against a long double reference within
// gamma_L sum |x_i| |x_j|, L = the largest block + the blocks - 1, through tiles of the scratch;
// and the certificate on that L, sound and narrower than on the whole dot product's gamma, on
// eigenvalues packed around tol.

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "analysis/gram_block.h"
#include "analysis/numerical_rank.h"
#include "analysis/rank_certificate.h"
#include "analysis/spectrum.h"
#include "tests/fixtures/prescribed_matrix.h"

using namespace sb::analysis;
using sb::test::prescribed_matrix;
using sb::test::reader;

namespace {

double gamma64(double n) { return n * kFloat64Eps / 2 / (1 - n * kFloat64Eps / 2); }

}  // namespace

TEST_CASE(
    "gram block: a Gram summed block by block through tiles matches the long double Gram within "
    "gamma_L sum |x_i| |x_j|, L = the largest block plus the blocks less one") {
  // op(X) is n x total; blocks of 64 inner columns (the last 40: 1000 = 15 * 64 + 40), tiles of
  // 10 columns of G (4 tiles, the last 7), both layouts.
  const int64_t n = 37, total = 1000, block = 64;
  std::mt19937_64 rng(5);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> x(
      static_cast<size_t>(n * total));  // op(X) row-major: entry (i, t) at i*total+t
  for (double& v : x) v = normal(rng) * std::exp(normal(rng));  // mixed signs and scales
  for (bool trans : {false, true}) {
    INFO((trans ? "X stored inner x order (op = X^T)" : "X stored order x inner"));
    GramAccumulator acc(n, /*tile_bytes=*/8.0 * n * 10);
    int64_t blocks = 0;
    for (int64_t t0 = 0; t0 < total; t0 += block, ++blocks) {
      const int64_t b = std::min(block, total - t0);
      // The block in the layout add() takes, column-major with a padded leading dimension.
      const int64_t ld = (trans ? b : n) + 3;
      std::vector<double> xb(static_cast<size_t>(ld * (trans ? n : b)), 0.0);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t t = 0; t < b; ++t)
          xb[static_cast<size_t>(trans ? t + i * ld : i + t * ld)] = x[size_t(i * total + t0 + t)];
      acc.add(xb.data(), b, ld, trans);
    }
    CHECK(blocks == 16);
    const int64_t chain = acc.chain();
    CHECK(chain == block + blocks - 1);
    const std::vector<double> g = acc.take();
    const double gamma = gamma64(double(chain));
    double worst_ratio = 0;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i <= j; ++i) {
        long double exact = 0, abs_sum = 0;
        for (int64_t t = 0; t < total; ++t) {
          const long double p =
              (long double)x[size_t(i * total + t)] * (long double)x[size_t(j * total + t)];
          exact += p;
          abs_sum += std::fabs(p);
        }
        // The reference's own error: 64-bit significands, ~ total 2^-64 abs_sum, 2000x below
        // gamma_L's 79 2^-53.
        const double err = std::abs(g[size_t(i + j * n)] - double(exact));
        CHECK(err <= gamma * double(abs_sum) * 1.01);
        worst_ratio = std::max(worst_ratio, err / (gamma * double(abs_sum)));
      }
    // The bound is a worst case: the observed error is far inside it.
    CHECK(worst_ratio < 1.0);
  }
}

TEST_CASE(
    "gram block: the column Gram reports its chain, and a certificate on it stays sound and is "
    "narrower than on gamma_T with eigenvalues packed around tol") {
  // T = 2000 rows in blocks of 50 (40 blocks: L = 89 against T = 2000), M = 120. lambda_1 = 1,
  // 19 values log-spaced down to 3 tau, 10 packed at tau (1.002 + 0.004 j), j = -5..4 (within
  // 1.8% of tol^2), the rest at tau / 3. On gamma_T the window, about tau (1 +- 4%), holds all
  // ten; on gamma_L (0.2% of tau, beside the eigensolver's ~0.8%) it drops the outer ones.
  const int64_t t = 2000, m = 120;
  const double c = 0.5 * std::sqrt(double(t + m + 1)) * kFloat32Eps, tau = c * c;
  const auto lambda = sb::test::packed_eigenvalues(tau, m, /*packed=*/true);
  const auto a = prescribed_matrix(t, m, sb::test::square_roots(lambda), 29);
  FiniteScan scan;
  auto g = accumulate_gram(reader(a, m), t, m, /*block_rows=*/50, &scan, nullptr, {}, false);
  REQUIRE(scan.clean());
  CHECK(g.chain == 50 + 40 - 1);
  const bool same_sign = g.same_sign;
  const int64_t chain = g.chain;
  const auto sigma = gram_singular_values(std::move(g), EigenSolver::automatic);
  const int64_t truth =
      std::count_if(lambda.begin(), lambda.end(), [&](double l) { return l > tau; });
  auto certify = [&](int64_t with_chain) {
    auto r = numerical_rank(sigma, t, m, kFloat32Eps, 20, true, std::sqrt(kFloat64Eps));
    certify_from_spectrum(r, sigma, /*inner=*/t, /*order=*/m, same_sign, with_chain);
    return r;
  };
  const auto blocked = certify(chain), whole = certify(0);
  for (const auto* r : {&blocked, &whole}) {
    INFO("rank " << r->rank << " in [" << r->rank_min << ", " << r->rank_max << "], truth " << truth
                 << ", gram_error " << r->gram_error);
    CHECK(r->rank_min <= truth);
    CHECK(r->rank_max >= truth);
    CHECK(r->rank_min >= 20);  // the 20 clearly above
  }
  CHECK(whole.rank_max - whole.rank_min == 10);  // all ten packed values inside
  CHECK(blocked.rank_max - blocked.rank_min < 10);
  CHECK(blocked.gram_error < whole.gram_error / 20);
}
