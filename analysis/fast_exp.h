#pragma once
// exp(x) for float x <= 0 in plain arithmetic that the compiler vectorises: the log-probability
// detection (input_kind.cpp) takes one exponential per entry of the first pass, which libm's
// scalar expf made the largest cost of that pass beside the read.
//
// Method (Cephes' expf, S. L. Moshier, "Methods and Programs for Mathematical Functions", 1989):
// x = n ln 2 + r with n = ceil(x log2(e) - 1/2), so |r| <= ln 2 / 2 up to rounding; r is formed
// with ln 2 in two parts (C1 exact in 9 bits, C1 + C2 = ln 2 to float's precision) so that n C1
// is exact; exp(r) ~ 1 + r + r^2 P(r) with Cephes' degree-5 P; 2^n from the exponent bits.
// Below -87 the argument is clamped (exp(-87) = 1.6e-38, still a normal float, so n >= -126).
// Relative error against double exp on a million points of [-87, 0]: at most 8.2e-8 measured,
// below 3e-7 asserted (tests/analysis/test_fast_exp.cpp); libm's expf is within 1 ulp (6e-8).

#include <cstdint>
#include <cstring>

namespace sb::analysis {

inline float exp_nonpositive(float x) {
  // -min(|x|, 87) on the bits, with an arithmetic min (a float compare, even an integer select,
  // left a branch under GCC's default -ftrapping-math, and the loop did not vectorise).
  int32_t magnitude;
  std::memcpy(&magnitude, &x, sizeof x);
  magnitude &= 0x7fffffff;
  constexpr int32_t kLimit = 0x42ae0000;    // 87.0f
  const int32_t over = magnitude - kLimit;  // < 0 below the limit: keep; else clamp
  magnitude = (kLimit + (over & (over >> 31))) | static_cast<int32_t>(0x80000000u);
  std::memcpy(&x, &magnitude, sizeof x);
  // t <= -1/2, so truncation toward zero is the ceiling: x log2(e) - n in (-1/2, 1/2].
  const auto n = static_cast<int32_t>(x * 1.44269504088896341f - 0.5f);
  const auto nf = static_cast<float>(n);
  float r = x - nf * 0.693359375f;
  r = r - nf * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (n + 127) << 23;  // 2^n, n in [-126, 0]
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

}  // namespace sb::analysis
