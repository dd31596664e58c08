// A count below Theorem 2's bound is a verdict only when the data's precision resolves the
// spectrum past it (analysis/numerical_rank.h, limit_by_precision), and log-probabilities stored
// at a coarse precision are still detected as log-probabilities (analysis/input_kind.h,
// normalised_tolerance). The spectra are prescribed, so each case's right answer is known.

#include <cmath>
#include <vector>

#include <catch2/catch.hpp>

#include "analysis/input_kind.h"
#include "analysis/numerical_rank.h"

using namespace sb::analysis;

namespace {

// sigma_max = 1, then `count` values at `level` x tol, then a tail far below (1e-12).
std::vector<double> spectrum(int64_t rows, int64_t cols, double eps, int64_t count, double level) {
  const double tol = 0.5 * std::sqrt(static_cast<double>(rows + cols + 1)) * eps;
  std::vector<double> s{1.0};
  for (int64_t i = 0; i < count; ++i) s.push_back(level * tol);
  while (static_cast<int64_t>(s.size()) < cols) s.push_back(1e-12);
  return s;
}

RankReport judged(const std::vector<double>& s, int64_t rows, int64_t cols, double eps,
                  int64_t bound) {
  auto r = numerical_rank(s, rows, cols, eps, bound, /*theorem2_bounded=*/true, 1e-15);
  limit_by_precision(r, s);
  return r;
}

}  // namespace

TEST_CASE("precision: a float32 count that attains the bound, or has a gap below it, stands") {
  const int64_t T = 4000, M = 2000, bound = 66;
  // rank = bound (a trained softmax): 65 values at 100 tol, the rest 1e-12.
  auto r = judged(spectrum(T, M, kFloat32Eps, 65, 100.0), T, M, kFloat32Eps, bound);
  CHECK(r.rank == bound);
  CHECK(r.verdict() == "within_bound");
  CHECK_FALSE(r.precision_limited);
  // rank 11 < bound with the next value 1e-12, eleven decades below tol: genuinely low.
  r = judged(spectrum(T, M, kFloat32Eps, 10, 100.0), T, M, kFloat32Eps, bound);
  CHECK(r.rank == 11);
  CHECK(r.verdict() == "within_bound");
}

TEST_CASE("precision: a spectrum that goes on across tol below the bound is unresolved") {
  const int64_t T = 4000, M = 2000, bound = 66;
  // 1 above tol, then 1000 values at tol / 3: no gap at the cut (the next is 3x below tol).
  const double tol = 0.5 * std::sqrt(double(T + M + 1)) * kFloat32Eps;
  std::vector<double> s{1.0};
  for (int i = 0; i < 1000; ++i) s.push_back(tol / 3);
  while (static_cast<int64_t>(s.size()) < M) s.push_back(1e-12);
  auto r = judged(s, T, M, kFloat32Eps, bound);
  CHECK(r.rank == 1);
  CHECK(r.precision_limited);
  CHECK(r.verdict() == "unresolved_at_precision");
  CHECK(r.within_bound);  // --check does not call it exceeded either
  // the eps at which tol falls to tol / 3: eps / 3 (relative 1e-12: one division)
  CHECK(r.eps_to_resolve == Approx(kFloat32Eps / 3).epsilon(1e-12));
  // The bound's last value just under tol and then a gap (a final-LayerNorm softmax: rank d, the
  // (d + 1)-th at tol / 3): the count two decades below tol is the bound, within either way.
  std::vector<double> ln{1.0};
  for (int i = 0; i < 64; ++i) ln.push_back(100 * tol);
  ln.push_back(tol / 3);
  while (static_cast<int64_t>(ln.size()) < M) ln.push_back(1e-12);
  r = judged(ln, T, M, kFloat32Eps, bound);
  CHECK(r.rank == bound - 1);
  CHECK_FALSE(r.precision_limited);
  CHECK(r.verdict() == "within_bound");
  // One more value at tol / 3 would cross the bound two decades down: unresolved again.
  ln[66] = tol / 3;
  r = judged(ln, T, M, kFloat32Eps, bound);
  CHECK(r.verdict() == "unresolved_at_precision");
  // The same spectrum with every value after the first 20x below tol: a gap, the count stands.
  for (size_t i = 1; i <= 1000; ++i) s[i] = tol / 20;
  r = judged(s, T, M, kFloat32Eps, bound);
  CHECK(r.verdict() == "within_bound");
}

TEST_CASE("precision: below the bound at float16 or bfloat16's eps is never within_bound") {
  const int64_t T = 4000, M = 2000, bound = 66;
  for (const double eps : {std::ldexp(1.0, -10), std::ldexp(1.0, -7)}) {
    INFO("eps " << eps);
    // The first value, then the rest 30x below tol: a gap, but at a coarse eps.
    auto r = judged(spectrum(T, M, eps, 200, 1.0 / 30), T, M, eps, bound);
    CHECK(r.rank == 1);
    CHECK(r.verdict() == "unresolved_at_precision");
    CHECK(r.eps_to_resolve <= kFloat32Eps);
    // Above the bound at a coarse eps is still exceeds_bound (counted values are real).
    r = judged(spectrum(T, M, eps, 200, 3.0), T, M, eps, bound);
    CHECK(r.rank == 201);
    CHECK(r.verdict() == "exceeds_bound");
    // A bound that does not bind is not judged at all.
    r = judged(spectrum(T, M, eps, 10, 1.0 / 30), T, M, eps, /*bound=*/M);
    CHECK(r.verdict() == "bound_not_binding");
  }
}

TEST_CASE("precision: the log-probability test's tolerance grows with the stored eps") {
  // Derivation in input_kind.h: |logsumexp| of stored log-probs <= 15 eps for log p >= -30.
  CHECK(normalised_tolerance(kFloat32Eps) == kNormalisedTolerance);
  CHECK(normalised_tolerance(kFloat64Eps) == kNormalisedTolerance);
  CHECK(normalised_tolerance(std::ldexp(1.0, -7)) == Approx(0.5));
  CHECK(normalised_tolerance(std::ldexp(1.0, -10)) == Approx(0.0625));
  // A bfloat16-rounded row of log-probabilities: 2000 values log p = log(1/2000) +- noise,
  // each cut to 8 significant bits toward zero (the worst case of the derivation: every
  // log p moves up). Its logsumexp (float64) lies within the bfloat16 tolerance and outside 1e-3.
  std::vector<double> row;
  double sum = 0;
  for (int j = 0; j < 2000; ++j) {
    const double lp = std::log(1.0 / 2000) + 0.5 * std::sin(j);
    row.push_back(lp);
    sum += std::exp(lp);
  }
  double lse = 0;
  for (auto& v : row) {
    v -= std::log(sum);  // normalised exactly
    int e;
    const double m = std::frexp(v, &e);
    v = std::ldexp(std::trunc(m * 256) / 256, e);  // 8 significant bits
    lse += std::exp(v);
  }
  lse = std::log(lse);
  INFO("logsumexp of the rounded row " << lse);
  CHECK(std::abs(lse) <= normalised_tolerance(std::ldexp(1.0, -7)));
  CHECK(std::abs(lse) > kNormalisedTolerance);
}
