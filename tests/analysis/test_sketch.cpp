// The randomized sketch (analysis/sketch.h) against independent computations: matrices with
// prescribed singular values (the truth known to float64 rounding, ~1e-15 sigma_1), and a
// softmax log-probability matrix stored in float32 against the Gram path and LAPACK's SVD.

#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "analysis/numerical_rank.h"
#include "analysis/rank_certificate.h"
#include "analysis/sketch.h"
#include "analysis/sketch_parts.h"
#include "analysis/spectrum.h"
#include "tests/fixtures/prescribed_matrix.h"

using namespace sb::analysis;
using sb::test::prescribed_matrix;
using sb::test::reader;

namespace {

// n values log-spaced from 1 down to `smallest`, then `zeros` exact zeros (min(T, M) in all).
std::vector<double> log_spaced(int64_t n, double smallest, int64_t zeros) {
  std::vector<double> s;
  for (int64_t i = 0; i < n; ++i)
    s.push_back(std::pow(smallest, static_cast<double>(i) / static_cast<double>(n - 1)));
  s.insert(s.end(), static_cast<size_t>(zeros), 0.0);
  return s;
}

double nr_tol(int64_t rows, int64_t cols, double sigma1, double eps) {
  return 0.5 * std::sqrt(static_cast<double>(rows + cols + 1)) * sigma1 * eps;
}

SketchOptions with_bound(int64_t bound, uint64_t seed = 0) {
  SketchOptions o;
  o.bound = bound;
  o.eps = kFloat32Eps;
  o.seed = seed;
  return o;
}

// The 400 x 300 case most tests share: 30 singular values log-spaced from 1 to 1e-3 (float32's
// tol = 1.6e-6: all 30 above), then 270 exact zeros, between random singular vectors of `seed`.
constexpr int64_t kRows = 400, kCols = 300;
std::vector<double> thirty_clear_spectrum() { return log_spaced(30, 1e-3, kCols - 30); }
std::vector<double> thirty_clear(uint64_t seed) {
  return prescribed_matrix(kRows, kCols, thirty_clear_spectrum(), seed);
}

// The checks a sketch run made: every pass but the sparse starts bounds the residual once, and
// each such bound fails with probability <= 1e-12 (sketch.h).
double expected_failure(const sb::contract::RankReport& r) {
  return (r.sketch_passes - r.sketch_starts) * 1e-12;
}

// Rounding of the prescribed matrices' construction, relative to sigma_1 (a float64 product of
// orthonormal factors: a few hundred u).
constexpr double kTruthSlack = 1e-12;

}  // namespace

TEST_CASE(
    "sketch: on prescribed spectra the certified rank is the exact count, and every true singular "
    "value lies in its certified bracket, whether k starts above the rank or has to grow, from "
    "the sparse start or a Gaussian one") {
  const int64_t t = kRows, m = kCols;
  const auto s = thirty_clear_spectrum();
  const auto a = thirty_clear(/*seed=*/11);
  for (const int start : {8, 1, 0})        // the default sparse start, a CountSketch, Gaussian
    for (const int64_t bound : {25, 5}) {  // k0 = 35 > 30; k0 = 15 < 30: k must grow
      INFO("bound " << bound << ", start nonzeros " << start);
      FiniteScan scan;
      SketchOptions o = with_bound(bound);
      o.start_nonzeros = start;
      const auto r = sketch_rank(reader(a, m), t, m, o, &scan);
      CHECK(r.report.sketch_start_nonzeros == start);
      REQUIRE(scan.clean());
      CHECK(r.report.certified);
      CHECK(r.report.rank == 30);
      CHECK(r.report.rank_min == 30);
      CHECK(r.report.rank_max == 30);
      CHECK(r.report.sketch_k >= 30 + 5);
      if (bound == 5) CHECK(r.report.sketch_k > 15);
      REQUIRE(r.lower.size() == static_cast<size_t>(r.report.sketch_k));
      for (size_t i = 0; i < r.lower.size(); ++i) {
        INFO("sigma_" << i + 1);
        CHECK(r.lower[i] <= s[i] + kTruthSlack);
        CHECK(s[i] <= r.upper[i] + kTruthSlack);
        CHECK(r.lower[i] <= r.sigma[i]);
        CHECK(r.sigma[i] <= r.upper[i]);
      }
      // Converged: the Ritz values of the 30 nonzero singular values agree with them to far below
      // tol (the subspace holds them to about the residual bound).
      for (size_t i = 0; i < 30; ++i) CHECK(std::abs(r.sigma[i] - s[i]) < 1e-3 * r.report.tol);
      CHECK(r.report.residual_bound < r.report.tol_lo);
      CHECK(r.report.failure_probability == Approx(expected_failure(r.report)).epsilon(1e-12));
      CHECK(r.report.within_bound == (30 <= bound));
    }
}

TEST_CASE(
    "sketch: with singular values packed around tol the window always holds the true rank, and a "
    "certified rank is the true one") {
  const int64_t t = 300, m = 200;
  const double tol = nr_tol(t, m, 1.0, kFloat32Eps);
  // sigma_1 = 1, then values at tol (1 +- delta) for deltas from 1e-1 down to 1e-13.
  for (const double delta : {1e-1, 1e-4, 1e-7, 1e-10, 1e-13}) {
    std::vector<double> s = {1.0, 0.5, 0.1, tol * (1 + delta), tol * (1 - delta)};
    s.resize(static_cast<size_t>(m), 0.0);
    const auto a = prescribed_matrix(t, m, s, /*seed=*/5);
    FiniteScan scan;
    const auto r = sketch_rank(reader(a, m), t, m, with_bound(3), &scan);
    INFO("delta " << delta << ": rank " << r.report.rank << " in [" << r.report.rank_min << ", "
                  << r.report.rank_max << "]");
    CHECK(r.report.rank_min <= 4);
    CHECK(4 <= r.report.rank_max);
    if (r.report.certified) CHECK(r.report.rank == 4);
    // 10% off tol is far outside the rounding (the Ritz values' error e_R + e_Z, about 1e-7 of
    // tol here): it must certify.
    if (delta >= 1e-1) CHECK(r.report.certified);
  }
}

TEST_CASE(
    "sketch: at the float64 eps the Ritz values match LAPACK's singular values to about u sigma_1 "
    "down to 1e-6 sigma_1 and the nominal rank is the exact count. No a priori bound reaches "
    "tol (window open) until the float64 finish certifies it") {
  // 40 values from 1 down to 1e-6, then exact zeros: tol = 2.9e-15 lies between 1e-6 and the
  // zeros' rounding (~1e-16). The eigenvalues of (AQ)^T (AQ) would put the zeros' Ritz values
  // near sqrt(u) ||AQ||_F = 1e-8, above tol, and count them. (Values far below sqrt(u) sigma_1
  // are another matter: the basis, built from A^T A, does not hold their directions; sketch.h.)
  const int64_t t = 400, m = 300;
  const auto s = log_spaced(40, 1e-6, m - 40);
  const auto a = prescribed_matrix(t, m, s, /*seed=*/31);
  // The independent truth: dgesdd on the whole matrix (row-major t x m = column-major m x t).
  std::vector<double> copy = a, exact(static_cast<size_t>(m));
  REQUIRE(LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', m, t, copy.data(), m, exact.data(), nullptr, 1,
                         nullptr, 1) == 0);
  auto o = with_bound(45);
  o.eps = kFloat64Eps;
  o.float64_finish = false;  // the sketch's own passes (the finish: below)
  FiniteScan scan;
  const auto r = sketch_rank(reader(a, m), t, m, o, &scan);
  const double tol = nr_tol(t, m, exact[0], kFloat64Eps);
  int64_t exact_rank = 0;
  for (double v : exact) exact_rank += v > tol;
  REQUIRE(exact_rank == 40);
  CHECK(r.report.rank == exact_rank);
  for (size_t i = 0; i < 40; ++i) {
    INFO("sigma_" << i + 1 << " = " << exact[i]);
    // 200 u sigma_1: LAPACK's and the sketch's rounding together (both of order u ||A||).
    CHECK(std::abs(r.sigma[i] - exact[i]) < 200 * kFloat64Eps / 2 * exact[0]);
  }
  CHECK(r.report.resolution < 1e-9 * exact[0]);  // was sqrt(u) sigma_1 = 1.5e-8
  CHECK(r.report.rank_min == 40);
  CHECK(r.report.rank_max == m);  // sketch.h: gamma_M ||A||_F exceeds tol at the float64 eps
  CHECK_FALSE(r.report.certified);
  // The float64 finish (compensated_finish.h) closes the window at the exact count.
  o.float64_finish = true;
  const auto f = sketch_rank(reader(a, m), t, m, o, &scan);
  CHECK(f.report.certified);
  CHECK(f.report.rank == exact_rank);
  CHECK(f.report.residual_bound < tol);
  for (size_t i = 0; i < 40; ++i) CHECK(f.lower[i] <= exact[i] * (1 + 1e-12));
}

TEST_CASE("sketch: a rank past the cap on k reads 'rank >= n', uncertified") {
  const int64_t t = 300, m = 200;
  const auto s = log_spaced(60, 1e-2, m - 60);
  const auto a = prescribed_matrix(t, m, s, /*seed=*/3);
  auto o = with_bound(5);
  o.max_k = 20;
  FiniteScan scan;
  const auto r = sketch_rank(reader(a, m), t, m, o, &scan);
  CHECK_FALSE(r.report.certified);
  CHECK(r.report.sketch_k == 20);
  CHECK(r.report.rank_min <= 20);
  CHECK(r.report.rank_max == m);
  CHECK(r.report.certificate() == "rank >= " + std::to_string(r.report.rank_min));
  // The verdict needs no more than the cap: 20 certified singular values exceed the bound 5.
  CHECK(r.report.rank_min > 5);
  CHECK_FALSE(r.report.within_bound);
}

TEST_CASE(
    "sketch: verdict_only stops once within / exceeds is certain, with the verdict of the full "
    "run") {
  const int64_t t = kRows, m = kCols;
  const auto a = thirty_clear(/*seed=*/17);
  for (const int64_t bound : {10, 40}) {
    INFO("bound " << bound);
    auto o = with_bound(bound);
    FiniteScan scan;
    const auto full = sketch_rank(reader(a, m), t, m, o, &scan);
    o.verdict_only = true;
    const auto quick = sketch_rank(reader(a, m), t, m, o, &scan);
    CHECK(quick.report.within_bound == full.report.within_bound);
    CHECK(quick.report.within_bound == (bound == 40));
    CHECK(quick.report.sketch_passes <= full.report.sketch_passes);
    // Settled: the window lies on one side of the bound.
    CHECK((quick.report.rank_min > bound || quick.report.rank_max <= bound));
  }
}

TEST_CASE(
    "sketch: the same seed gives bit-identical Ritz values, and 100 seeds give the true rank, "
    "certified, every time") {
  // 25 singular values from 1 to 1e-3 above a noise floor of 1e-9 (tol = 1.5e-6): the residual
  // bound is not zero, so the probes matter.
  const int64_t t = 300, m = 220;
  auto s = log_spaced(25, 1e-3, 0);
  for (int64_t i = 25; i < m; ++i) s.push_back(1e-9 * std::pow(0.99, double(i)));
  const auto a = prescribed_matrix(t, m, s, /*seed=*/23);
  FiniteScan scan;
  const auto first = sketch_rank(reader(a, m), t, m, with_bound(20, 7), &scan);
  const auto again = sketch_rank(reader(a, m), t, m, with_bound(20, 7), &scan);
  CHECK(first.sigma == again.sigma);
  CHECK(first.report.residual_bound == again.report.residual_bound);
  int certified_true = 0;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    const auto r = sketch_rank(reader(a, m), t, m, with_bound(20, seed), &scan);
    certified_true += r.report.certified && r.report.rank == 25;
    if (r.report.certified) CHECK(r.report.rank == 25);
    // sigma_1's bracket less the residual bound: the report's gram_error, never negative.
    CHECK(r.report.gram_error >= 0);
  }
  CHECK(certified_true == 100);
}

TEST_CASE(
    "sketch: a softmax log-probability matrix stored in float32 has rank d + 1 + bias, certified, "
    "as the row Gram and sgesdd find") {
  const int64_t t = 500, m = 2000, d = 8;
  const std::vector<float> a = sb::test::softmax_logprobs(t, m, d, /*seed=*/42);
  const RowReader read = reader(a, m);
  const int64_t bound = d + 2;
  FiniteScan scan;
  const auto r = sketch_rank(read, t, m, with_bound(bound), &scan);
  REQUIRE(scan.clean());
  CHECK(r.same_sign);
  CHECK(r.report.certified);
  CHECK(r.report.rank == bound);
  CHECK(r.report.within_bound);
  // The gap at the bound, certified from below, is the one the data has: sigma_10 / sigma_11
  // with sigma_11 at float32 noise, many orders of magnitude.
  CHECK(r.report.spectral_gap > 1e3);
  const auto sigma = singular_values_exact(read, t, m, /*float64=*/false, &scan);
  const auto exact = numerical_rank(sigma, t, m, kFloat32Eps, bound, true, kFloat32Eps);
  CHECK(exact.rank == r.report.rank);
  // sigma_1 .. sigma_bound: sgesdd's float32 values against the float64 Ritz values, within
  // float32's relative precision times a modest factor.
  for (size_t i = 0; i < static_cast<size_t>(bound); ++i)
    CHECK(r.sigma[i] == Approx(sigma[i]).epsilon(1e-4));
}

TEST_CASE(
    "sketch: a check pass (no next basis) certifies what full passes certify, in fewer flops, "
    "and a check that does not settle hands over to full passes") {
  const int64_t t = kRows, m = kCols;
  const auto a64 = thirty_clear(/*seed=*/41);
  const std::vector<float> a(a64.begin(), a64.end());  // float32 data, as the tool's files
  const RowReader read = reader(a, m);
  // k0 = 50, the count 30 clear of it: after the first pass the next is predicted to certify.
  // k0 = 15 < 30: k grows first (no prediction while the count reaches k), then may check.
  for (const int64_t bound : {40, 5}) {
    INFO("bound " << bound);
    auto o = with_bound(bound);
    FiniteScan scan;
    const auto checked = sketch_rank(read, t, m, o, &scan);
    o.check_passes = false;
    const auto full = sketch_rank(read, t, m, o, &scan);
    CHECK(full.report.sketch_check_passes == 0);
    if (bound == 40) CHECK(checked.report.sketch_check_passes == 1);
    CHECK(checked.report.sketch_check_passes <= 1);
    for (const auto* r : {&checked, &full}) {
      CHECK(r->report.certified);
      CHECK(r->report.rank == 30);
    }
    // The same bases up to the check: the same number of passes, the last without Y.
    CHECK(checked.report.sketch_passes == full.report.sketch_passes);
    for (size_t i = 0; i < 30; ++i)
      CHECK(std::abs(checked.sigma[i] - full.sigma[i]) < 1e-3 * checked.report.tol);
  }
  SECTION("a check that cannot settle: the window stays open at the float64 eps") {
    auto o = with_bound(25);
    o.eps = kFloat64Eps;  // tol below the rounding floor: no pass certifies (sketch.h)
    o.float64_finish = false;
    FiniteScan scan;
    const auto r = sketch_rank(sb::test::reader(a64, m), t, m, o, &scan);
    CHECK_FALSE(r.report.certified);
    CHECK(r.report.sketch_check_passes <= 1);
    CHECK(r.report.rank == 30);
  }
}

TEST_CASE(
    "sketch: the pass at 4k after a start that counted every column is a start again, the pass "
    "after that a check, and power steps certify the true count past a tail below tol, every pass "
    "but the starts counted as a check") {
  // 40 values log-spaced from 1 down to 3 tol, then a tail of 100 over [0.2, 0.9] tol (a trained
  // head's shape, sketch.h), then zeros: the start at k0 = bound + 10 = 15 counts all 15, the
  // start again at 60 leaves the count 40 clear of k (40 <= 3 * 60 / 4), and the tail keeps the
  // window open after the check until power steps close it (closes_next does not predict a
  // check here: the tail is what the residual sees).
  const int64_t t = 600, m = 400, count = 40, tail = 100;
  const double tol = nr_tol(t, m, 1.0, kFloat32Eps);
  auto s = log_spaced(count, 3 * tol, 0);
  for (int64_t i = 0; i < tail; ++i)
    s.push_back(tol * (0.9 - 0.7 * static_cast<double>(i) / static_cast<double>(tail - 1)));
  s.resize(static_cast<size_t>(m), 0.0);
  const auto a = prescribed_matrix(t, m, s, /*seed=*/23);
  FiniteScan scan;
  auto o = with_bound(5);
  const auto r = sketch_rank(reader(a, m), t, m, o, &scan);
  INFO("rank " << r.report.rank << " [" << r.report.rank_min << ", " << r.report.rank_max << "], k "
               << r.report.sketch_k << ", passes " << r.report.sketch_passes << ", starts "
               << r.report.sketch_starts << ", checks " << r.report.sketch_check_passes);
  CHECK(r.report.sketch_starts == 2);
  CHECK(r.report.sketch_k == 60);
  CHECK(r.report.sketch_check_passes == 1);
  CHECK(r.report.sketch_power_passes >= 1);
  CHECK(r.report.certified);
  CHECK(r.report.rank == count);
  for (size_t i = 0; i < static_cast<size_t>(count); ++i) {
    CHECK(r.lower[i] <= s[i] + kTruthSlack);
    CHECK(s[i] <= r.upper[i] + kTruthSlack);
  }
  CHECK(r.report.failure_probability == Approx(expected_failure(r.report)).epsilon(1e-12));
  // Without the sparse start there is no start to repeat: the first pass is a full one.
  o.start_nonzeros = 0;
  const auto gaussian = sketch_rank(reader(a, m), t, m, o, &scan);
  CHECK(gaussian.report.sketch_starts == 0);
  CHECK(gaussian.report.rank == count);
}

namespace {

// The shape of a trained non-softmax head's dump, scaled down: `count` values log-spaced from 1
// down to 3 tol, then `tail` values spread evenly over [0.2, 0.9] tol, then zeros; the rank is
// `count` with a tail just below tol that makes the probes' Frobenius-like residual bound large.
std::vector<double> tail_below_tol(int64_t t, int64_t m, int64_t count, int64_t tail) {
  const double tol = nr_tol(t, m, 1.0, kFloat32Eps);
  std::vector<double> s;
  for (int64_t i = 0; i < count; ++i)
    s.push_back(std::pow(3 * tol, static_cast<double>(i) / static_cast<double>(count - 1)));
  for (int64_t i = 0; i < tail; ++i)
    s.push_back(tol * (0.9 - 0.7 * static_cast<double>(i) / static_cast<double>(tail - 1)));
  s.resize(static_cast<size_t>(std::min(t, m)), 0.0);
  return s;
}

// The truth for float32 data (M x T, column-major): float64 dgesdd's singular values.
std::vector<double> float64_values(const std::vector<float>& a, int64_t t, int64_t m) {
  std::vector<double> copy(a.begin(), a.end()), exact(static_cast<size_t>(m));
  REQUIRE(LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', m, t, copy.data(), m, exact.data(), nullptr, 1,
                         nullptr, 1) == 0);
  return exact;
}

int64_t count_above(const std::vector<double>& v, double tol) {
  return std::count_if(v.begin(), v.end(), [tol](double x) { return x > tol; });
}

}  // namespace

TEST_CASE(
    "sketch: a count with a long tail of singular values just below tol is certified (the "
    "residual's 2-norm bounded by power steps), in float32 data, and never a wrong count") {
  const int64_t t = 3000, m = 1200, count = 240, tail = 600;
  const auto s = tail_below_tol(t, m, count, tail);
  const auto a64 = prescribed_matrix(t, m, s, /*seed=*/61);
  const std::vector<float> a(a64.begin(), a64.end());  // float32 data, as the tool's files
  // The truth: float64 dgesdd of the float32 data (float32 storage moves each sigma by about
  // 1e-8, 0.3% of tol: the count stays 240, with 3 tol and 0.9 tol either side of tol).
  const auto exact = float64_values(a, t, m);
  const double tol = nr_tol(t, m, exact[0], kFloat32Eps);
  REQUIRE(count_above(exact, tol) == count);
  FiniteScan scan;
  auto o = with_bound(100);
  o.max_k = 2 * count;  // the tail cannot be taken into the basis (at M = 33278 it costs too much)
  const auto r = sketch_rank(reader(a, m), t, m, o, &scan);
  INFO("rank " << r.report.rank << " in [" << r.report.rank_min << ", " << r.report.rank_max
               << "], k " << r.report.sketch_k << ", passes " << r.report.sketch_passes
               << ", power " << r.report.sketch_power_passes << ", residual "
               << r.report.residual_bound / tol << " tol");
  CHECK(r.report.rank_min <= count);
  CHECK(count <= r.report.rank_max);
  CHECK(r.report.certified);
  CHECK(r.report.rank == count);
  CHECK_FALSE(r.report.within_bound);
  // Certified by the power steps: the bound is theirs, on the count's residual, below tol; each
  // step a pass and a check.
  CHECK(r.report.sketch_power_passes > 0);
  CHECK(r.report.residual_count == count);
  CHECK(r.report.residual_bound < r.report.tol_lo);
  CHECK(r.report.residual_bound >= exact[count]);  // it bounds sigma_(c+1) from above
  CHECK(r.report.failure_probability == Approx(expected_failure(r.report)).epsilon(1e-12));
  // The pass before the power steps forms no next basis (they need none): a check.
  CHECK(r.report.sketch_check_passes >= 1);
  // Past the count every upper bound is the power bound, so the gap at the count is certified.
  REQUIRE(r.upper.size() > static_cast<size_t>(count));
  CHECK(r.upper[count] <= r.report.residual_bound);
  CHECK(r.report.largest_gap_index == count);
  // Over more seeds a certified count is always the true one.
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    o.seed = seed;
    const auto again = sketch_rank(reader(a, m), t, m, o, &scan);
    INFO("seed " << seed);
    CHECK(again.report.rank_min <= count);
    CHECK(count <= again.report.rank_max);
    if (again.report.certified) CHECK(again.report.rank == count);
  }
  // Without power steps the window stays open: the single-probe bound sees the tail.
  o.power_steps = 0;
  const auto plain = sketch_rank(reader(a, m), t, m, o, &scan);
  CHECK_FALSE(plain.report.certified);
  CHECK(plain.report.rank_max > count);
  CHECK(plain.report.sketch_power_passes == 0);
}

TEST_CASE(
    "sketch: a spectrum that goes on through tol, as a trained head's does, ends in a window at "
    "most 1% wide around the true count once power steps bound the whole basis's residual") {
  // sigma_i = tol (c / i)^1.661 (a decade every fourfold i: 0.1 tol at 4c), sigma_1 = 1: the
  // values next to the count lie within 1-2% of tol, so no bound on the count's own residual
  // (which is at least sigma_(c+1)) tells them from tol; the whole basis's residual is about
  // sigma_(k+1), and hypot(s_i, r) < tol closes all but the values within a hair of tol.
  const int64_t t = 4000, m = 2400, c = 150;
  const double tol0 = nr_tol(t, m, 1.0, kFloat32Eps);
  std::vector<double> s(static_cast<size_t>(m));
  for (int64_t i = 1; i <= m; ++i)
    s[static_cast<size_t>(i - 1)] =
        std::min(1.0, tol0 * std::pow(static_cast<double>(c) / static_cast<double>(i), 1.661));
  s[0] = 1.0;  // tol0 is relative to sigma_1 = 1
  const auto a64 = prescribed_matrix(t, m, s, /*seed=*/83);
  const std::vector<float> a(a64.begin(), a64.end());
  const auto exact = float64_values(a, t, m);
  const double tol = nr_tol(t, m, exact[0], kFloat32Eps);
  const int64_t truth = count_above(exact, tol);
  FiniteScan scan;
  auto o = with_bound(100);
  for (uint64_t seed = 0; seed < 2; ++seed) {
    o.seed = seed;
    std::vector<int> numbers;  // every pass's number as its progress line gives it
    SketchProgress progress;
    progress.pass_done = [&numbers](const SketchPass& p) { numbers.push_back(p.pass); };
    const auto r = sketch_rank(reader(a, m), t, m, o, &scan, nullptr, progress);
    INFO("seed " << seed << ": truth " << truth << ", window [" << r.report.rank_min << ", "
                 << r.report.rank_max << "], k " << r.report.sketch_k << ", passes "
                 << r.report.sketch_passes << ", power " << r.report.sketch_power_passes
                 << ", residual " << r.report.residual_bound / tol << " tol");
    CHECK(r.report.rank_min <= truth);
    CHECK(truth <= r.report.rank_max);
    CHECK(100 * (r.report.rank_max - r.report.rank_min) <= r.report.rank_max);
    CHECK(r.report.sketch_k < m / 2);  // not by taking the spectrum into the basis
    CHECK(r.report.sketch_power_passes > 0);
    CHECK(r.report.residual_count == 0);  // the bound is on the whole basis's residual
    CHECK(r.report.residual_bound < r.report.tol_lo);
    // Power steps and full passes are numbered in the order they read the file, one count.
    REQUIRE_FALSE(numbers.empty());
    CHECK(std::is_sorted(numbers.begin(), numbers.end()));
    CHECK(std::adjacent_find(numbers.begin(), numbers.end()) == numbers.end());
    CHECK(numbers.back() == r.report.sketch_passes);
    CHECK(r.report.failure_probability == Approx(expected_failure(r.report)).epsilon(1e-12));
  }
}

namespace {

// The k of every pass the sketch reports (the start included), in order.
std::vector<int64_t> pass_ks(const std::vector<float>& a, int64_t t, int64_t m,
                             const SketchOptions& o, SketchResult* out) {
  std::vector<int64_t> ks;
  SketchProgress progress;
  progress.pass_done = [&ks](const SketchPass& p) {
    if (p.power == 0 && p.finish == nullptr) ks.push_back(p.k);
  };
  FiniteScan scan;
  *out = sketch_rank(reader(a, m), t, m, o, &scan, nullptr, progress);
  return ks;
}

}  // namespace

TEST_CASE(
    "sketch: a start whose every Ritz value is above tol widens k fourfold, a count at 0.9 k above "
    "a cliff keeps k, and both certify the true count") {
  const int64_t t = 1200, m = 600;
  SECTION("a spectrum past k0: the pass after the start is at 4 k0") {
    // 120 values log-spaced from 1 to 1e-2, then zeros: k0 = 15 sees only values above tol.
    const auto a64 = prescribed_matrix(t, m, log_spaced(120, 1e-2, m - 120), /*seed=*/71);
    const std::vector<float> a(a64.begin(), a64.end());
    SketchResult r;
    const auto ks = pass_ks(a, t, m, with_bound(5), &r);
    REQUIRE(ks.size() >= 2);
    CHECK(ks[0] == 15);
    CHECK(ks[1] == 60);
    CHECK(r.report.certified);
    CHECK(r.report.rank == 120);
  }
  SECTION("a cliff at 92 of k0 = 100 (past 0.9 k0, short of k0 - oversampling / 2): k stays") {
    // A softmax head's count sits above a cliff like this one; widening would cost a pass at 2k.
    const auto a64 = prescribed_matrix(t, m, log_spaced(92, 1e-2, m - 92), /*seed=*/73);
    const std::vector<float> a(a64.begin(), a64.end());
    SketchResult r;
    const auto ks = pass_ks(a, t, m, with_bound(90), &r);
    INFO("passes " << ks.size());
    for (const int64_t k : ks) CHECK(k == 100);
    CHECK(r.report.certified);
    CHECK(r.report.rank == 92);
  }
}

// The power steps' trigger (PowerAttempts::wanted, sketch_power.cpp) on MoSS's WikiText-2 window at
// k = 3584 after its second pass: count 887, certified from below to 882 (the Ritz values' error
// bars), the 888th Ritz value at 0.8 tol (the Q_c route: clear of tol's 5%), the residual bound
// 365 above tol 38.3. An attempt that certifies 887 leaves [882, 887], 0.56% wide, which ends the
// sketch (window_fraction 1%); one 2% short could not, and is not tried.
namespace {

// MoSS's WikiText-2 window at k = 3584 after its second pass: count 887 certified from below to
// 882, the residual bound 365 above tol 38.3, the values past the count at `past` tol.
sketch_detail::Window moss_window(double past) {
  sketch_detail::Window w;
  w.tol = w.tol_lo = w.tol_hi = 38.3;
  w.sigma.assign(3584, 0.0);
  for (size_t i = 0; i < w.sigma.size(); ++i) w.sigma[i] = (i < 887 ? 2.0 : past) * w.tol;
  w.rank = 887;
  w.rank_min = 882;
  w.rank_max = 33278;
  w.residual = 365;
  return w;
}

}  // namespace

TEST_CASE("sketch: power steps on Q_c are tried where the count is certified to within 1%") {
  using sketch_detail::PowerAttempts;
  auto w = moss_window(/*past=*/0.8);
  SketchOptions o;
  REQUIRE_FALSE(sketch_detail::basis_route(w, 0.0));
  const PowerAttempts none;
  CHECK(none.wanted(w, o, /*k_now=*/3584, /*passes_at_k=*/2, /*check=*/false, /*pass_now=*/11));
  CHECK_FALSE(none.wanted(w, o, 3584, /*passes_at_k=*/1, false, 10));  // one pass: not yet
  w.rank_min = 869;                                                    // 18 short, 2% of the count
  CHECK_FALSE(none.wanted(w, o, 3584, 2, false, 11));
  w.rank_min = 887;  // certified from below: tried, as before
  CHECK(none.wanted(w, o, 3584, 2, false, 11));
}

// The route where the basis cannot close (power_route, sketch_power.cpp), on MoSS's WikiText-2
// window at k = 3584 as its log showed it: count 887 certified from below to 882, the Ritz values'
// error e_R + e_Z = 0.68 against tol 38.3. With the values past the count at 0.99 tol, their
// brackets (0.99 tol + 0.68 > tol) reach tol, so no residual of the basis closes the window
// (residual_to_close is 0 at the count and at U = floor(882 / 0.99) = 890): before, the attempt
// made no step and k doubled. Power steps on the top 890 Ritz vectors go in its place; a bound
// below tol there leaves [882, 890], 0.9% wide (Eckart-Young: sigma_891 <= the bound).
TEST_CASE(
    "sketch: where no residual of the basis can close the window, power steps go to the top U") {
  auto w = moss_window(/*past=*/0.99);
  w.value_error = 0.68;
  SketchOptions o;
  REQUIRE(sketch_detail::basis_route(w, 0.0));
  CHECK(sketch_detail::basis_target(w, o, 0.0) == 0.0);
  CHECK(sketch_detail::widest_upper(w, o) == 890);
  const auto route = sketch_detail::power_route(w, o, 0.0, /*k=*/3584);
  CHECK_FALSE(route.basis);
  CHECK(route.basis_closed);
  CHECK(route.c == 890);
  // Tried after two passes at k, and not again at the same (k, c) after one more (as on Q_c).
  sketch_detail::PowerAttempts power;
  CHECK(power.wanted(w, o, 3584, /*passes_at_k=*/2, /*check=*/false, /*pass_now=*/11));
  power.start(3584, w.rank, 11);
  CHECK_FALSE(power.wanted(w, o, 3584, 3, false, 12));
  // U clamped clear of k: with k = 895, c = min(890, 895 - oversampling / 2 - 1) = 889.
  const auto near_k = sketch_detail::power_route(w, o, 0.0, /*k=*/895);
  CHECK(near_k.basis_closed);
  CHECK(near_k.c == 895 - std::max<int64_t>(o.oversampling / 2, 1) - 1);
  CHECK(near_k.c < 890);
  // With exact Ritz values (e_R + e_Z = 0) the basis closes: r below tol - 0.99 tol.
  w.value_error = 0;
  const auto exact = sketch_detail::power_route(w, o, 0.0, 3584);
  CHECK(exact.basis);
  CHECK(exact.target > 0);
  // U below the count (rank_min 878: U = 886 < 887): nothing to try but the basis, no step.
  w.value_error = 0.68;
  w.rank_min = 878;
  const auto below = sketch_detail::power_route(w, o, 0.0, 3584);
  CHECK(below.basis);
  CHECK_FALSE(below.basis_closed);
  CHECK(below.target == 0.0);
}

// Power steps on the top U Ritz vectors end the window at U where the count's are too close to
// tol to resolve. A = U diag(s) V^T (600 x 200, float64): 60 values log-spaced from 1 to 10 tol,
// two at 0.995 tol (the 61st and 62nd), then 0.5 tol; the pass's basis is V's first k = 100
// columns and its R is diag(s_1..s_k), as a converged pass has them. On c = 62 the bound on
// ||A (I - Q_62 Q_62^T)||_2 = sigma_63 = 0.5 tol falls below tol and the window becomes [60, 62]
// (Eckart-Young: sigma_63 <= the bound; the truth's rank is 60, inside). On the count c = 60 the
// same norm is sigma_61 = 0.995 tol, which 24 steps cannot tell from tol: the window stays open.
TEST_CASE(
    "sketch: power steps on the top U Ritz vectors end the window at U, which the count's could "
    "not") {
  const int64_t t = 600, m = 200, k = 100;
  const double tol = nr_tol(t, m, 1.0, kFloat32Eps);
  std::vector<double> s = log_spaced(60, 10 * tol, 0);
  s.push_back(0.995 * tol);
  s.push_back(0.995 * tol);
  s.resize(static_cast<size_t>(m), 0.5 * tol);
  const auto a = prescribed_matrix(t, m, s, /*seed=*/91);
  const auto v = sb::test::prescribed_vectors(t, m, /*seed=*/91).v;  // A's V: (M, M)
  const std::vector<double> basis(v.begin(), v.begin() + m * k);     // (M, k)
  sketch_detail::PassSums sums;
  sums.k = k;
  sums.r.assign(static_cast<size_t>(k * k), 0.0);
  for (int64_t i = 0; i < k; ++i) sums.r[static_cast<size_t>(i + i * k)] = s[size_t(i)];
  double frobenius = 0;
  for (const double x : s) frobenius += x * x;
  frobenius = std::sqrt(frobenius) * (1 + 1e-12);
  auto window = [&]() {
    sketch_detail::Window w;
    w.tol = w.tol_lo = w.tol_hi = tol;
    w.sigma.assign(s.begin(), s.begin() + k);
    w.lower = w.sigma;
    w.upper = w.sigma;
    w.upper[0] = 1 + 1e-12;
    w.rank = w.rank_min = 60;
    w.rank_max = m;
    w.residual = 1;
    return w;
  };
  const SketchOptions o = with_bound(5);
  for (const int64_t c : {int64_t{62}, int64_t{60}}) {
    auto w = window();
    std::mt19937_64 rng(7);
    SpectrumTiming timing;
    int checks = 0;
    const int steps = sketch_detail::power_attempt<double>(
        reader(a, m), t, m, basis, sums, w, o, k, t, frobenius, /*same_sign=*/false,
        /*block_rows=*/64, /*pass_before=*/2, rng, &timing, SketchProgress{}, &checks, c);
    INFO("c = " << c << ": " << steps << " steps, window [" << w.rank_min << ", " << w.rank_max
                << "], residual " << w.residual / tol << " tol");
    CHECK(steps >= 1);
    if (c == 62) {
      CHECK(w.rank_max == 62);
      CHECK(w.residual < tol);
      CHECK(w.residual >= 0.5 * tol * (1 - kTruthSlack));  // a bound on sigma_63, never below it
    } else {
      CHECK(w.rank_max == m);  // nothing certified, nothing wrong
    }
  }
}
