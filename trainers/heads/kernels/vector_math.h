#pragma once
// Internal to the sigmoid-family kernels: 8-lane float32 vector math written with GCC/Clang vector
// extensions (exp, log, logsigmoid), row helpers, and the ISA dispatch macros. Everything is
// always-inlined into the entry points, which are compiled once per ISA (see SB_ENTRY_POINTS in
// the kernel sources), so one source serves AVX2 + FMA and baseline x86-64.

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

// Runtime dispatch: on x86-64 each float32 entry point is compiled twice, once for AVX2 + FMA and
// once for the baseline ISA, and the CPU's features pick one (checked once). Not target_clones:
// its "arch=haswell" clone is chosen by CPU *model*, so newer non-Haswell CPUs got the baseline.
// Elsewhere the generic vector code compiles to whatever the target has.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SB_X86_DISPATCH 1
#define SB_AVX2 __attribute__((target("avx2,fma")))
#else
#define SB_X86_DISPATCH 0
#define SB_AVX2
#endif
#define SB_INLINE inline __attribute__((always_inline))
#define SB_LAMBDA_INLINE __attribute__((always_inline))

namespace sb::kernels {

/// 1: the float32 entry points run their AVX2 + FMA build, 0: the baseline build. Initialised from
/// the CPU; set_sigmoid_family_isa() overrides it. Defined in sigmoid_family_kernel.cpp.
std::atomic<int>& use_avx2_flag();

namespace {

constexpr int kLanes = 8;
typedef float vf __attribute__((vector_size(32)));    // 8 x float32
typedef int32_t vi __attribute__((vector_size(32)));  // 8 x int32 (comparison masks)
typedef float vf4 __attribute__((vector_size(16)));   // 4 x float32 (half of vf)
typedef double vd4 __attribute__((vector_size(32)));  // 4 x float64 (row sums)

SB_INLINE vf splat(float x) { return vf{x, x, x, x, x, x, x, x}; }
SB_INLINE vf select(vi mask, vf a, vf b) { return mask ? a : b; }
SB_INLINE vf vmax(vf a, vf b) { return select(a > b, a, b); }
SB_INLINE vf vmin(vf a, vf b) { return select(a < b, a, b); }
SB_INLINE vf as_float(vi x) {
  vf out;
  std::memcpy(&out, &x, sizeof out);
  return out;
}
SB_INLINE vi as_int(vf x) {
  vi out;
  std::memcpy(&out, &x, sizeof out);
  return out;
}

// exp(x): x = n ln2 + r, |r| <= ln2/2, degree-6 minimax polynomial (Cephes expf coefficients),
// then scale by 2^n through the exponent bits. Max rel. error ~2 ulp; 0 below -87.3. NaN inputs
// are the callers' business (the forward makes NaN rows all-NaN up front).
SB_INLINE vf vexp(vf x) {
  const vf lo = splat(-87.33654f), hi = splat(88.0f);
  const vf xc = vmin(vmax(x, lo), hi);
  // n = round(x log2 e) by the 1.5 * 2^23 trick: the sum's low mantissa bits hold n.
  const vf magic = splat(12582912.0f);
  const vf shifted = xc * splat(1.44269504088896341f) + magic;
  const vi n = as_int(shifted) - as_int(magic);
  const vf nf = shifted - magic;
  const vf r = xc - nf * splat(0.693359375f) - nf * splat(-2.12194440e-4f);
  vf p = splat(1.9875691500e-4f);
  p = p * r + splat(1.3981999507e-3f);
  p = p * r + splat(8.3334519073e-3f);
  p = p * r + splat(4.1665795894e-2f);
  p = p * r + splat(1.6666665459e-1f);
  p = p * r + splat(5.0000001201e-1f);
  p = p * r * r + r + splat(1.0f);
  const vf y = p * as_float((n + 127) << 23);
  return select(x < lo, splat(0.0f), y);
}

// log(x) for x > 0 (Cephes logf): x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(1 + (m - 1)) by a
// degree-9 polynomial. Max rel. error ~2 ulp for normal x; the callers only pass x in [1, 2].
SB_INLINE vf vlog(vf x) {
  vi bits = as_int(x);
  vi e = ((bits >> 23) & 0xff) - 126;
  vf m = as_float((bits & 0x007fffff) | 0x3f000000);  // mantissa in [0.5, 1)
  const vi small = m < splat(0.70710678118654752f);
  e += small;  // -1 where small
  m = select(small, m + m, m) - splat(1.0f);
  const vf ef = __builtin_convertvector(e, vf);
  const vf z = m * m;
  vf y = splat(7.0376836292e-2f);
  y = y * m - splat(1.1514610310e-1f);
  y = y * m + splat(1.1676998740e-1f);
  y = y * m - splat(1.2420140846e-1f);
  y = y * m + splat(1.4249322787e-1f);
  y = y * m - splat(1.6668057665e-1f);
  y = y * m + splat(2.0000714765e-1f);
  y = y * m - splat(2.4999993993e-1f);
  y = y * m + splat(3.3333331174e-1f);
  y = y * m * z;
  y += ef * splat(-2.12194440e-4f);
  y -= splat(0.5f) * z;
  return m + y + ef * splat(0.693359375f);
}

// log1p(t) for t in [0, 1]: log(u) with u = 1 + t, plus the rounding error of u (t - (u - 1)) / u.
SB_INLINE vf vlog1p(vf t) {
  const vf u = splat(1.0f) + t;
  return vlog(u) + (t - (u - splat(1.0f))) / u;
}

// logsigmoid(z) = min(z, 0) - log1p(exp(-|z|)); exact asymptotes on both sides, -inf stays -inf.
SB_INLINE vf vlogsigmoid(vf z) {
  const vf t = vexp(-vmax(z, -z));
  return vmin(z, splat(0.0f)) - vlog1p(t);
}

template <int A>
SB_INLINE vf vw(vf z) {
  if constexpr (A == 1)
    return z + vlogsigmoid(z);
  else
    return vlogsigmoid(z);
}

// A float64 row sum of float32 vectors, kept in two native 4 x double registers (an 8 x double
// vector type is lowered through the stack by GCC, which cost more than the exp in the backward).
struct Sum64 {
  vd4 lo = {}, hi = {};
  SB_INLINE void add(vf v) {
    lo += __builtin_convertvector(__builtin_shufflevector(v, v, 0, 1, 2, 3), vd4);
    hi += __builtin_convertvector(__builtin_shufflevector(v, v, 4, 5, 6, 7), vd4);
  }
  SB_INLINE double total() const {
    const vd4 t = lo + hi;
    return (t[0] + t[1]) + (t[2] + t[3]);
  }
};

SB_INLINE vf load(const float* p, int64_t n, float pad) {
  vf v = splat(pad);
  if (n >= kLanes) {
    std::memcpy(&v, p, sizeof v);
  } else {
    for (int64_t i = 0; i < n; ++i) v[i] = p[i];
  }
  return v;
}
SB_INLINE void store(float* p, vf v, int64_t n) {
  if (n >= kLanes) {
    std::memcpy(p, &v, sizeof v);
  } else {
    for (int64_t i = 0; i < n; ++i) p[i] = v[i];
  }
}

// Calls f(j, n) over a row in 8-lane steps: full vectors with n == kLanes (a compile-time constant
// once inlined, so load/store become plain vector moves), then one padded tail with n < kLanes.
template <class F>
SB_INLINE void for_each_vector(int64_t cols, F&& f) {
  int64_t j = 0;
  for (; j + kLanes <= cols; j += kLanes) f(j, int64_t{kLanes});
  if (j < cols) f(j, cols - j);
}

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Scans a row: its max and whether it holds a NaN (NaN rows come out all-NaN).
SB_INLINE float row_max(const float* zr, int64_t cols, bool* has_nan) {
  vf zmax = splat(kNegInf);
  vi nan = {};
  for_each_vector(cols, [&](int64_t j, int64_t n) SB_LAMBDA_INLINE {
    const vf z = load(zr + j, n, kNegInf);
    zmax = vmax(zmax, z);
    nan |= (z != z);
  });
  float zm = zmax[0];
  bool any_nan = false;
  for (int i = 0; i < kLanes; ++i) {
    zm = zmax[i] > zm ? zmax[i] : zm;
    any_nan |= nan[i] != 0;
  }
  *has_nan = any_nan;
  return zm;
}

// A row whose forward pass met a NaN (its stats are NaN) gets an all-NaN gradient: true then.
SB_INLINE bool fill_nan_row(double zm, float* gr, int64_t cols) {
  if (!std::isnan(zm)) return false;
  for (int64_t j = 0; j < cols; ++j) gr[j] = std::numeric_limits<float>::quiet_NaN();
  return true;
}

// The same scan of a float64 row (the reference-precision paths), in scalar code.
inline double row_max(const double* zr, int64_t cols, bool* has_nan) {
  double zm = -std::numeric_limits<double>::infinity();
  bool any_nan = false;
  for (int64_t j = 0; j < cols; ++j) {
    zm = std::fmax(zm, zr[j]);
    any_nan |= std::isnan(zr[j]);
  }
  *has_nan = any_nan;
  return zm;
}

// w(z) = A z + logsigmoid(z) in float64 (reference-precision paths and scalar fix-ups).
template <int A>
double w64(double z) {
  const double ls = std::fmin(z, 0.0) - std::log1p(std::exp(-std::fabs(z)));
  return A == 1 ? z + ls : ls;
}

// The float64 reference forward of a row NLL whose output is exp(w(z_j)) normalised over the row:
// w(z) = z for softmax, w64<A> for the sigmoid family (w increases with z, so w(max z) is the
// row's largest weight). Per row, stats = (max z, lse = log sum_j e^{w(z_j)}) and
// loss = lse - w(z_target); a row holding a NaN gets NaN in all three.
template <class W>
void nll_forward_rows_f64(const double* z, const int64_t* targets, double* loss, double* stats,
                          int64_t rows, int64_t cols, W w) {
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  for (int64_t row = 0; row < rows; ++row) {
    const double* zr = z + row * cols;
    bool has_nan = false;
    const double zm = row_max(zr, cols, &has_nan);
    const double m = w(zm);
    double sum = 0;
    for (int64_t j = 0; j < cols; ++j) sum += std::exp(w(zr[j]) - m);
    stats[2 * row] = has_nan ? nan : zm;
    stats[2 * row + 1] = has_nan ? nan : m + std::log(sum);
    loss[row] = has_nan ? nan : stats[2 * row + 1] - w(zr[targets[row]]);
  }
}

// Fast rows: 0 <= max z <= 80 (every row of a trained LM in practice). With c = e^{max z},
// E = e^{z - max z} <= 1 and p = E c = e^z:  w = (A + 1) z - log(1 + p), and
// e^{w - m} = E^A (E + p) / (1 + p), where m = w(max z) is the row's max of w (w increases with
// z). One exp and one division per element (plus a log where w itself is needed); no overflow
// (p <= e^80) and no denormals (E >= 1e-18 or flushed: those terms are < 1e-18 of the max term).
inline bool is_fast_row(float zmax) { return zmax >= 0.0f && zmax <= 80.0f; }

struct FastTerms {
  vf u;     // 1 + e^z
  vf sig;   // sigmoid(z) = p / (1 + p)
  vf term;  // e^{w - m}
};

template <int A>
SB_INLINE FastTerms fast_terms(vf z, vf zmax, vf c) {
  const vf e = vexp(z - zmax);
  const vf p = e * c, u = splat(1.0f) + p, r = splat(1.0f) / u;
  if constexpr (A == 1) {
    const vf ef = select(e < splat(1e-18f), splat(0.0f), e);
    return {u, p * r, ef * ((ef + p) * r)};
  } else {
    return {u, p * r, (e + p) * r};
  }
}

}  // namespace
}  // namespace sb::kernels
