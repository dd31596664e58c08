// The float64 finish (analysis/compensated_finish.h) and the compensated dot product under it,
// against independent computations: exact small-integer sums where float64 cancels to nothing,
// and float64 matrices with prescribed spectra whose count LAPACK's SVD of the stored matrix
// decides (its error, a few u sigma_1, is far from the margins the spectra leave around tol).

#include <lapacke.h>

#include <cmath>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "analysis/compensated_dot.h"
#include "analysis/compensated_finish.h"
#include "analysis/numerical_rank.h"
#include "analysis/sketch.h"
#include "tests/fixtures/prescribed_matrix.h"

using namespace sb::analysis;
using sb::test::prescribed_matrix;
using sb::test::reader;

namespace {

double nr_tol(int64_t rows, int64_t cols, double sigma1) {
  return 0.5 * std::sqrt(static_cast<double>(rows + cols + 1)) * sigma1 * kFloat64Eps;
}

// LAPACK's singular values of the stored row-major t x m matrix (column-major m x t).
std::vector<double> lapack_values(std::vector<double> a, int64_t t, int64_t m) {
  std::vector<double> s(static_cast<size_t>(std::min(t, m)));
  REQUIRE(LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', m, t, a.data(), m, s.data(), nullptr, 1, nullptr,
                         1) == 0);
  return s;
}

int64_t count_above(const std::vector<double>& s, double tol) {
  int64_t n = 0;
  for (double v : s) n += v > tol;
  return n;
}

// min(T, M) = m values: r log-spaced from 1 down to `last` tol, then `tail` at `next` tol, then
// zeros (tol at the float64 eps for sigma_1 = 1).
std::vector<double> cliff(int64_t t, int64_t m, int64_t r, double last, int64_t tail, double next) {
  const double tol0 = nr_tol(t, m, 1.0);
  std::vector<double> s(static_cast<size_t>(m), 0.0);
  for (int64_t i = 0; i < r; ++i)
    s[static_cast<size_t>(i)] = std::pow(last * tol0, double(i) / double(r - 1));
  for (int64_t i = r; i < r + tail; ++i) s[static_cast<size_t>(i)] = next * tol0;
  return s;
}

SketchOptions float64_options(int64_t bound, uint64_t seed) {
  SketchOptions o;
  o.bound = bound;
  o.eps = kFloat64Eps;
  o.seed = seed;
  return o;
}

}  // namespace

TEST_CASE("compensated dot: a sum float64 cancels to zero comes out exact") {
  // 2^60 + 1 - 2^60 = 1: float64 loses the 1 in the first addition; the products' low parts and
  // the sums' errors carry it.
  const double big = std::ldexp(1.0, 60);
  Dot2 d;
  d.add(big, 1.0);
  d.add(1.0, 1.0);
  d.add(-big, 1.0);
  CHECK(d.value() == 1.0);
  // A product whose low half matters: (1 + 2^-30)^2 = 1 + 2^-29 + 2^-60, minus its float64 value.
  const double x = 1 + std::ldexp(1.0, -30);
  Dot2 e;
  e.add(x, x);
  e.add(-1.0, 1 + std::ldexp(1.0, -29));
  CHECK(e.value() == std::ldexp(1.0, -60));
}

TEST_CASE("compensated dot: two_prod and two_sum are error-free on random operands") {
  std::mt19937_64 gen(5);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  for (int i = 0; i < 1000; ++i) {
    const double a = unit(gen) * std::ldexp(1.0, i % 40), b = unit(gen);
    double p, e, s, f;
    two_prod(a, b, p, e);
    // Exact check in long double where it holds 64 bits: p + e against a * b rounded to 64 bits.
    CHECK(static_cast<long double>(p) + e == static_cast<long double>(a) * b);
    two_sum(a, b, s, f);
    CHECK(static_cast<long double>(s) + f == static_cast<long double>(a) + b);
  }
}

TEST_CASE(
    "float64 finish: a flat block of 500 singular values past the bound is certified as 500 at "
    "the float64 eps, where the sketch alone leaves the window open") {
  const int64_t t = 900, m = 700, r = 500;
  std::vector<double> s(static_cast<size_t>(m), 0.0);
  for (int64_t i = 0; i < r; ++i) s[static_cast<size_t>(i)] = 1.0;
  const auto a = prescribed_matrix(t, m, s, /*seed=*/41);
  const auto exact = lapack_values(a, t, m);
  const double tol = nr_tol(t, m, exact[0]);
  REQUIRE(count_above(exact, tol) == r);
  auto o = float64_options(/*bound=*/101, /*seed=*/3);
  FiniteScan scan;
  o.float64_finish = false;
  const auto alone = sketch_rank(reader(a, m), t, m, o, &scan);
  CHECK_FALSE(alone.report.certified);
  o.float64_finish = true;
  const auto r64 = sketch_rank(reader(a, m), t, m, o, &scan);
  CHECK(r64.report.certified);
  CHECK(r64.report.rank == r);
  CHECK(r64.report.rank_min == r);
  CHECK(r64.report.rank_max == r);
  CHECK(r64.report.verdict() == "exceeds_bound");
}

TEST_CASE(
    "float64 finish: a cliff from 3 tol to tol / 3 is counted exactly, certified, where the "
    "values near tol lie far below what A^T A resolves") {
  // 40 values log-spaced from 1 down to 3 tol, then 200 at tol / 3, then zeros. tol = 0.5
  // sqrt(M + T + 1) u_64 ~ 5e-15: the cliff sits 1e7 below sqrt(u) sigma_1, the resolution of the
  // sketch's basis (A^T A Q).
  const int64_t t = 1000, m = 800, r = 40, tail = 200;
  const auto a = prescribed_matrix(t, m, cliff(t, m, r, 3.0, tail, 1.0 / 3), /*seed=*/43);
  const auto exact = lapack_values(a, t, m);
  const double tol = nr_tol(t, m, exact[0]);
  REQUIRE(count_above(exact, tol) == r);
  REQUIRE(exact[r - 1] > 2 * tol);  // the margins the stored matrix keeps
  REQUIRE(exact[r] < 0.5 * tol);
  auto o = float64_options(/*bound=*/21, /*seed=*/5);
  FiniteScan scan;
  const auto res = sketch_rank(reader(a, m), t, m, o, &scan);
  INFO("window " << res.report.rank_min << ".." << res.report.rank_max << ", residual bound "
                 << res.report.residual_bound << " against tol " << tol);
  CHECK(res.report.certified);
  CHECK(res.report.rank == r);
  // Never a wrong certificate: the window holds the true count whatever it is.
  CHECK(res.report.rank_min <= r);
  CHECK(res.report.rank_max >= r);
}

TEST_CASE(
    "float64 finish: the window always holds LAPACK's count, and closes on it wherever the last "
    "value clears tol by 1.5x and the next lies at half of tol or below") {
  const int64_t t = 1000, m = 800, r = 40, tail = 200;
  for (double above : {3.0, 1.5, 1.1})
    for (double below : {0.9, 0.5, 1.0 / 3}) {
      const auto a = prescribed_matrix(t, m, cliff(t, m, r, above, tail, below), /*seed=*/47);
      const auto exact = lapack_values(a, t, m);
      const int64_t truth = count_above(exact, nr_tol(t, m, exact[0]));
      REQUIRE(truth == r);
      FiniteScan scan;
      const auto res = sketch_rank(reader(a, m), t, m, float64_options(21, 7), &scan);
      INFO("last value " << above << " tol, next " << below << " tol: window "
                         << res.report.rank_min << ".." << res.report.rank_max);
      CHECK(res.report.rank_min <= truth);
      CHECK(res.report.rank_max >= truth);
      if (above >= 1.5 && below <= 0.5) CHECK(res.report.certified);
    }
}

TEST_CASE(
    "float64 finish: one thread or three give the same bounds to the bit, from any starting basis "
    "of enough columns") {
  const int64_t t = 600, m = 400, r = 30, k = 60;
  const double tol0 = nr_tol(t, m, 1.0);
  const auto a = prescribed_matrix(t, m, cliff(t, m, r, 3.0, 0, 0.0), /*seed=*/53);
  std::mt19937_64 gen(9);
  const auto basis = sb::test::orthonormal(m, k, gen);  // a random start: the finish iterates
  CompensatedFinishOptions o;
  o.tol = tol0;
  o.tol_lo = tol0 * (1 - 1e-12);
  o.tol_hi = tol0 * (1 + 1e-12);
  o.frobenius = std::sqrt(double(r)) * 1.01;  // >= ||A||_F (each value <= 1)
  o.iterations = 3;
  std::vector<CompensatedFinishResult> runs;
  for (int threads : {1, 3}) {
    o.threads = threads;
    std::mt19937_64 rng(11);
    runs.push_back(compensated_finish(reader(a, m), t, m, basis, k, o, rng));
  }
  CHECK(runs[0].count == r);
  CHECK(runs[0].rank_min == r);
  CHECK(runs[0].upper_certified);
  CHECK(runs[1].count == runs[0].count);
  CHECK(runs[1].residual_bound == runs[0].residual_bound);  // bit for bit
  CHECK(runs[1].lower == runs[0].lower);
  CHECK(runs[1].power_steps == runs[0].power_steps);
}
