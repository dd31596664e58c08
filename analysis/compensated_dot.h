#pragma once
// Dot products in twice the working precision from float64 operations alone: the error-free
// transformations TwoSum (Knuth) and TwoProduct (Dekker 1971, Veltkamp's split) and Dot2 (Ogita,
// Rump & Oishi, "Accurate sum and dot product", SIAM J. Sci. Comput. 26(6), 2005, algorithm 5.3).
// The float64 finish of the sketch (compensated_finish.h) forms its products with A this way.
//
// Error-free. For float64 a, b without overflow: two_sum gives s = fl(a + b) and e with
// s + e = a + b exactly; two_prod gives p = fl(a b) and e with p + e = a b exactly, unless a b
// or a part of it underflows (|a b| below about 2^-969; then |p + e - a b| <= 2^-1074 per
// product, which the bounds below carry as kTinyPerTerm per term). No FMA is needed: Veltkamp's
// split is exact in round-to-nearest with FP contraction off, as this project builds.
//
// Dot2. The pair (p, s) after n calls of add(x_i, y_i) satisfies (their lemma 5.4 and
// proposition 5.5 before the final rounding)
//   |p + s - sum x_i y_i| <= gamma_n^2 sum |x_i y_i| (+ n kTinyPerTerm),
// and value() = fl(p + s) adds u |value()|. Accumulators merged by add_pair (a two_sum of the
// leading parts, the trailing parts added) keep the bound with n the total count: the merge is
// one more step of the same cascaded summation (their section 4, Sum2).

#include <cmath>

namespace sb::analysis {

/// s + e = a + b exactly, s = fl(a + b).
inline void two_sum(double a, double b, double& s, double& e) {
  s = a + b;
  const double bb = s - a;
  e = (a - (s - bb)) + (b - bb);
}

/// p + e = a b exactly, p = fl(a b) (Dekker's product on Veltkamp's halves).
inline void two_prod(double a, double b, double& p, double& e) {
  constexpr double kSplit = 134217729.0;  // 2^27 + 1
  const double ca = kSplit * a, cb = kSplit * b;
  const double ah = ca - (ca - a), al = a - ah;
  const double bh = cb - (cb - b), bl = b - bh;
  p = a * b;
  e = al * bl - (((p - ah * bh) - al * bh) - ah * bl);
}

/// The absolute error a product may add when it underflows (header): one unit of the least
/// subnormal, doubled for the split's parts.
inline constexpr double kTinyPerTerm = 2 * 4.9406564584124654e-324;

/// Dot2's accumulator: sum x_i y_i as the unevaluated pair p + s.
struct Dot2 {
  double p = 0, s = 0;

  void add(double x, double y) {
    double h, l, t, e;
    two_prod(x, y, h, l);
    two_sum(p, h, t, e);
    p = t;
    s += e + l;
  }
  /// Adds a value given as an unevaluated pair (hi + lo), exactly in its leading part.
  void add_pair(double hi, double lo) {
    double t, e;
    two_sum(p, hi, t, e);
    p = t;
    s += e + lo;
  }
  double value() const { return p + s; }
};

}  // namespace sb::analysis
