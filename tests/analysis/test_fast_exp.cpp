// exp_nonpositive (analysis/fast_exp.h) against double-precision exp: the relative error its
// header states, the clamp below -87, and exp(0) = 1 exactly.

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>

#include "analysis/fast_exp.h"

using sb::analysis::exp_nonpositive;

TEST_CASE("fast exp: on a million points of [-87, 0] within 3e-7 of double exp, relative") {
  // The header's bound; Cephes' polynomial alone is within about 1.2e-7, float rounding of the
  // range reduction and of the final products adds a few ulps (6e-8 each).
  constexpr int64_t kPoints = 1000000;
  double worst = 0;
  for (int64_t i = 0; i <= kPoints; ++i) {
    const auto x = static_cast<float>(-87.0 * static_cast<double>(i) / kPoints);
    const double exact = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::abs(static_cast<double>(exp_nonpositive(x)) - exact) / exact);
  }
  INFO("largest relative error " << worst);
  CHECK(worst < 3e-7);
  CHECK(worst > 0);  // the grid exercises the approximation, not only exact points
}

TEST_CASE(
    "fast exp: exp(0) is 1 exactly, below -87 the value is exp(-87) and never negative, "
    "and the range reduction's switch points are as accurate as the rest") {
  CHECK(exp_nonpositive(0.0f) == 1.0f);
  const float at = exp_nonpositive(-87.0f);
  CHECK(std::abs(static_cast<double>(at) - std::exp(-87.0)) < 3e-7 * std::exp(-87.0));
  for (const float x : {-87.5f, -100.0f, -1e30f, -std::numeric_limits<float>::max()}) {
    const float v = exp_nonpositive(x);
    CHECK(v >= 0.0f);
    CHECK(static_cast<double>(v) <= 1.0000003 * std::exp(-87.0));
  }
  // Just below 0 and at the reduction's switch points (x log2 e = -1/2, -3/2).
  for (const double x : {-1e-7, -0.34657359, -0.34657360, -1.03972077, -1.03972078}) {
    const double exact = std::exp(static_cast<double>(static_cast<float>(x)));
    CHECK(std::abs(static_cast<double>(exp_nonpositive(static_cast<float>(x))) - exact) <
          3e-7 * exact);
  }
}
