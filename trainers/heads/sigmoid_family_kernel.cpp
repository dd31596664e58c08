#include "sigmoid_family_kernel.h"

#include <cmath>
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
#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>
#define SB_INLINE inline __attribute__((always_inline))
#define SB_LAMBDA_INLINE __attribute__((always_inline))

namespace sb::kernels {
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
  if constexpr (A == 1) return z + vlogsigmoid(z);
  else return vlogsigmoid(z);
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

// General row: w = A z + logsigmoid(z) with t = exp(-|z|), then exp(w - m) for the sum.
// Stores w in out; returns sum exp(w - m).
template <int A>
SB_INLINE double general_row(const float* zr, float* outr, int64_t cols, vf m) {
  Sum64 acc;
  for_each_vector(cols, [&](int64_t j, int64_t n) SB_LAMBDA_INLINE {
    const vf z = load(zr + j, n, kNegInf);
    const vf t = vexp(-vmax(z, -z));
    const vf u = splat(1.0f) + t, r = splat(1.0f) / u;
    const vf ls = vmin(z, splat(0.0f)) - (vlog(u) + (t - (u - splat(1.0f))) * r);  // logsigmoid
    const vf w = A == 1 ? z + ls : ls;
    store(outr + j, w, n);
    acc.add(vexp(w - m));  // padding lanes add exp(-inf) = 0
  });
  return acc.total();
}

// Fast row, for 0 <= max z <= 80 (every row of a trained LM in practice). With c = e^{zmax},
// E = e^{z - zmax} <= 1 and p = E c = e^z:  w = (A + 1) z - log(1 + p), and
// e^{w - m} = E^A (E + p) / (1 + p), where m = w(zmax) is the row's max of w (w increases with z).
// One exp, one log, one division per element; no overflow (p <= e^80) and no denormals (E >= 1e-18
// or flushed: those terms are < 1e-18 of the max term).
template <int A>
SB_INLINE double fast_row(const float* zr, float* outr, int64_t cols, float zm) {
  const vf c = splat(static_cast<float>(std::exp(static_cast<double>(zm))));
  const vf zmax = splat(zm);
  Sum64 acc;
  for_each_vector(cols, [&](int64_t j, int64_t n) SB_LAMBDA_INLINE {
    const vf z = load(zr + j, n, kNegInf);
    const vf e = vexp(z - zmax);
    const vf p = e * c, u = splat(1.0f) + p, r = splat(1.0f) / u;
    store(outr + j, splat(A + 1.0f) * z - vlog(u), n);
    const vf ef = select(e < splat(1e-18f), splat(0.0f), e);
    const vf term = A == 1 ? ef * ((ef + p) * r) : (e + p) * r;
    acc.add(term);
  });
  return acc.total();
}

template <int A>
SB_INLINE void forward_rows_f32(const float* z, float* out, int64_t rows, int64_t cols) {
  for (int64_t row = 0; row < rows; ++row) {
    const float* zr = z + row * cols;
    float* outr = out + row * cols;
    bool has_nan = false;
    const float zm = row_max(zr, cols, &has_nan);
    if (has_nan) {
      for (int64_t j = 0; j < cols; ++j) outr[j] = std::numeric_limits<float>::quiet_NaN();
      continue;
    }
    // w is increasing in z (dw/dz = A + 1 - sigmoid(z) > 0), so max w = w(max z).
    const vf m = splat(vw<A>(splat(zm))[0]);
    const double sum = (zm >= 0.0f && zm <= 80.0f) ? fast_row<A>(zr, outr, cols, zm)
                                                   : general_row<A>(zr, outr, cols, m);
    // (w - m) - log(sum) rather than w - (m + log(sum)): m + log(sum) rounded to float loses
    // up to 1e-3 when |m| ~ 1e4, while w - m is exact near the maximum (Sterbenz).
    const vf log_sum = splat(static_cast<float>(std::log(sum)));
    for_each_vector(cols, [&](int64_t j, int64_t n) SB_LAMBDA_INLINE {
      store(outr + j, (load(outr + j, n, 0.0f) - m) - log_sum, n);
    });
  }
}

// grad_z = (g - e^{out} sum(g)) * (A + 1 - sigmoid(z)), sigmoid recomputed from z: cheaper than
// storing it in the forward (one more (N, M) buffer to allocate, write and read back).
template <int A>
SB_INLINE void backward_rows_f32(const float* g, const float* out, const float* z, float* gz,
                                 int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t o = r * cols;
    Sum64 acc;
    for_each_vector(cols, [&](int64_t j, int64_t n) SB_LAMBDA_INLINE {
      acc.add(load(g + o + j, n, 0.0f));
    });
    const vf s = splat(static_cast<float>(acc.total()));
    for_each_vector(cols, [&](int64_t j, int64_t n) SB_LAMBDA_INLINE {
      const vf f = vexp(load(out + o + j, n, kNegInf));
      // sigmoid(z) = 1 / (1 + e^{-z}); e^{-z} saturates at e^88 for z < -88, giving ~0.
      const vf sig = splat(1.0f) / (splat(1.0f) + vexp(-load(z + o + j, n, 0.0f)));
      store(gz + o + j, (load(g + o + j, n, 0.0f) - f * s) * (splat(A + 1.0f) - sig), n);
    });
  }
}

// float64: plain scalar loops over libm (used for reference-precision runs and tests).
template <int A>
double w64(double z) {
  const double ls = std::fmin(z, 0.0) - std::log1p(std::exp(-std::fabs(z)));
  return A == 1 ? z + ls : ls;
}

template <int A>
void forward_rows_f64(const double* z, double* out, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const double* zr = z + r * cols;
    double* outr = out + r * cols;
    double zm = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < cols; ++j) zm = std::fmax(zm, zr[j]);  // fmax: NaN-free max
    const double m = w64<A>(zm);
    double sum = 0;
    for (int64_t j = 0; j < cols; ++j) {
      outr[j] = w64<A>(zr[j]);
      sum += std::exp(outr[j] - m);
    }
    const double log_sum = std::log(sum);
    for (int64_t j = 0; j < cols; ++j) outr[j] = (outr[j] - m) - log_sum;
  }
}

template <int A>
void backward_rows_f64(const double* g, const double* out, const double* z, double* gz,
                       int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t o = r * cols;
    double s = 0;
    for (int64_t j = 0; j < cols; ++j) s += g[o + j];
    for (int64_t j = 0; j < cols; ++j) {
      const double zj = z[o + j], t = std::exp(-std::fabs(zj));
      const double sig = zj >= 0 ? 1 / (1 + t) : t / (1 + t);
      gz[o + j] = (g[o + j] - std::exp(out[o + j]) * s) * (A + 1 - sig);
    }
  }
}

// The entry points, per ISA. Identical bodies; only the compiler's target differs.
#define SB_ENTRY_POINTS(SUFFIX, ATTR)                                                          \
  ATTR void forward_a1_##SUFFIX(const float* z, float* out, int64_t rows, int64_t cols) {     \
    forward_rows_f32<1>(z, out, rows, cols);                                                   \
  }                                                                                            \
  ATTR void forward_a0_##SUFFIX(const float* z, float* out, int64_t rows, int64_t cols) {     \
    forward_rows_f32<0>(z, out, rows, cols);                                                   \
  }                                                                                            \
  ATTR void backward_a1_##SUFFIX(const float* g, const float* out, const float* z, float* gz, \
                                 int64_t rows, int64_t cols) {                                \
    backward_rows_f32<1>(g, out, z, gz, rows, cols);                                           \
  }                                                                                            \
  ATTR void backward_a0_##SUFFIX(const float* g, const float* out, const float* z, float* gz, \
                                 int64_t rows, int64_t cols) {                                \
    backward_rows_f32<0>(g, out, z, gz, rows, cols);                                           \
  }
SB_ENTRY_POINTS(baseline, )
#if SB_X86_DISPATCH
SB_ENTRY_POINTS(avx2, SB_AVX2)
#endif

bool cpu_has_avx2() {
#if SB_X86_DISPATCH
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

// 1: AVX2 + FMA, 0: baseline. Initialised from the CPU, overridable for tests and benchmarks.
std::atomic<int>& use_avx2() {
  static std::atomic<int> flag{cpu_has_avx2() ? 1 : 0};
  return flag;
}

}  // namespace

void sigmoid_family_forward(const float* z, float* out, int64_t rows, int64_t cols,
                            bool sigsoftmax) {
#if SB_X86_DISPATCH
  if (use_avx2().load(std::memory_order_relaxed)) {
    sigsoftmax ? forward_a1_avx2(z, out, rows, cols) : forward_a0_avx2(z, out, rows, cols);
    return;
  }
#endif
  sigsoftmax ? forward_a1_baseline(z, out, rows, cols) : forward_a0_baseline(z, out, rows, cols);
}

void sigmoid_family_forward(const double* z, double* out, int64_t rows, int64_t cols,
                            bool sigsoftmax) {
  sigsoftmax ? forward_rows_f64<1>(z, out, rows, cols) : forward_rows_f64<0>(z, out, rows, cols);
}

void sigmoid_family_backward(const float* grad, const float* out, const float* z, float* grad_z,
                             int64_t rows, int64_t cols, bool sigsoftmax) {
#if SB_X86_DISPATCH
  if (use_avx2().load(std::memory_order_relaxed)) {
    sigsoftmax ? backward_a1_avx2(grad, out, z, grad_z, rows, cols)
               : backward_a0_avx2(grad, out, z, grad_z, rows, cols);
    return;
  }
#endif
  sigsoftmax ? backward_a1_baseline(grad, out, z, grad_z, rows, cols)
             : backward_a0_baseline(grad, out, z, grad_z, rows, cols);
}

void sigmoid_family_backward(const double* grad, const double* out, const double* z,
                             double* grad_z, int64_t rows, int64_t cols, bool sigsoftmax) {
  sigsoftmax ? backward_rows_f64<1>(grad, out, z, grad_z, rows, cols)
             : backward_rows_f64<0>(grad, out, z, grad_z, rows, cols);
}

const char* sigmoid_family_isa() { return use_avx2().load() ? "avx2" : "baseline"; }

void set_sigmoid_family_isa(const char* isa) {
  const std::string want = isa;
  if (want == "auto") {
    use_avx2().store(cpu_has_avx2() ? 1 : 0);
  } else if (want == "baseline") {
    use_avx2().store(0);
  } else if (want == "avx2") {
    if (!cpu_has_avx2())
      throw std::invalid_argument("set_sigmoid_family_isa: this CPU lacks AVX2/FMA");
    use_avx2().store(1);
  } else {
    throw std::invalid_argument("set_sigmoid_family_isa: '" + want +
                                "' is not one of auto, baseline, avx2");
  }
}

}  // namespace sb::kernels
