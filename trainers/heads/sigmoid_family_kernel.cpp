#include "sigmoid_family_kernel.h"

#include <cmath>
#include <cstring>
#include <limits>

// Runtime dispatch: GCC/Clang emit an AVX2 and a baseline body and pick one through an ifunc at
// load time. Elsewhere (other architectures, other compilers) the generic vector code compiles to
// whatever the target has.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SB_CLONES __attribute__((target_clones("arch=haswell", "default")))
#else
#define SB_CLONES
#endif
#define SB_INLINE inline __attribute__((always_inline))

namespace sb::kernels {
namespace {

constexpr int kLanes = 8;
typedef float vf __attribute__((vector_size(32)));    // 8 x float32
typedef int32_t vi __attribute__((vector_size(32)));  // 8 x int32 (comparison masks)
typedef double vd __attribute__((vector_size(64)));   // 8 x float64 (row sums)

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
// then scale by 2^n through the exponent bits. Max rel. error ~2 ulp; 0 below -87.3; NaN propagates.
SB_INLINE vf vexp(vf x) {
  const vf lo = splat(-87.33654f), hi = splat(88.0f);
  const vf xc = vmin(vmax(x, lo), hi);
  const vf t = xc * splat(1.44269504088896341f) + splat(0.5f);
  vi n = __builtin_convertvector(t, vi);  // truncation toward zero ...
  n += (__builtin_convertvector(n, vf) > t);  // ... corrected to floor (mask is -1 where true)
  const vf nf = __builtin_convertvector(n, vf);
  const vf r = xc - nf * splat(0.693359375f) - nf * splat(-2.12194440e-4f);
  vf p = splat(1.9875691500e-4f);
  p = p * r + splat(1.3981999507e-3f);
  p = p * r + splat(8.3334519073e-3f);
  p = p * r + splat(4.1665795894e-2f);
  p = p * r + splat(1.6666665459e-1f);
  p = p * r + splat(5.0000001201e-1f);
  p = p * r * r + r + splat(1.0f);
  const vf y = p * as_float((n + 127) << 23);
  return select(x < lo, splat(0.0f), select(x != x, x, y));
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

// sigmoid(z) from t = exp(-|z|) without overflow.
SB_INLINE vf vsigmoid(vf z) {
  const vf t = vexp(-vmax(z, -z));
  const vf r = splat(1.0f) / (splat(1.0f) + t);
  return select(z >= splat(0.0f), r, t * r);
}

template <int A>
SB_INLINE vf vw(vf z) {
  if constexpr (A == 1) return z + vlogsigmoid(z);
  else return vlogsigmoid(z);
}

SB_INLINE double hsum(vd v) {
  double s = 0;
  for (int i = 0; i < kLanes; ++i) s += v[i];
  return s;
}

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

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

template <int A>
SB_INLINE void forward_rows_f32(const float* z, float* out, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* zr = z + r * cols;
    float* outr = out + r * cols;
    // w is increasing in z (dw/dz = A + 1 - sigmoid(z) > 0), so max w = w(max z).
    vf zmax = splat(kNegInf);
    for (int64_t j = 0; j < cols; j += kLanes) zmax = vmax(zmax, load(zr + j, cols - j, kNegInf));
    float zm = zmax[0];
    for (int i = 1; i < kLanes; ++i) zm = zmax[i] > zm ? zmax[i] : zm;
    const vf m = splat(vw<A>(splat(zm))[0]);
    vd acc = {};
    for (int64_t j = 0; j < cols; j += kLanes) {
      const vf w = vw<A>(load(zr + j, cols - j, kNegInf));
      store(outr + j, w, cols - j);
      acc += __builtin_convertvector(vexp(w - m), vd);  // padding lanes add exp(-inf) = 0
    }
    // (w - m) - log(sum) rather than w - (m + log(sum)): m + log(sum) rounded to float loses
    // up to 1e-3 when |m| ~ 1e4, while w - m is exact near the maximum (Sterbenz).
    const vf log_sum = splat(static_cast<float>(std::log(hsum(acc))));
    for (int64_t j = 0; j < cols; j += kLanes)
      store(outr + j, (load(outr + j, cols - j, 0.0f) - m) - log_sum, cols - j);
  }
}

template <int A>
SB_INLINE void backward_rows_f32(const float* g, const float* out, const float* z, float* gz,
                                 int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t o = r * cols;
    vd acc = {};
    for (int64_t j = 0; j < cols; j += kLanes)
      acc += __builtin_convertvector(load(g + o + j, cols - j, 0.0f), vd);
    const vf s = splat(static_cast<float>(hsum(acc)));
    for (int64_t j = 0; j < cols; j += kLanes) {
      const int64_t n = cols - j;
      const vf f = vexp(load(out + o + j, n, kNegInf));
      const vf dw = splat(static_cast<float>(A + 1)) - vsigmoid(load(z + o + j, n, 0.0f));
      store(gz + o + j, (load(g + o + j, n, 0.0f) - f * s) * dw, n);
    }
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
    for (int64_t j = 0; j < cols; ++j) zm = zr[j] > zm ? zr[j] : zm;
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

SB_CLONES void forward_f32_a1(const float* z, float* out, int64_t rows, int64_t cols) {
  forward_rows_f32<1>(z, out, rows, cols);
}
SB_CLONES void forward_f32_a0(const float* z, float* out, int64_t rows, int64_t cols) {
  forward_rows_f32<0>(z, out, rows, cols);
}
SB_CLONES void backward_f32_a1(const float* g, const float* out, const float* z, float* gz,
                               int64_t rows, int64_t cols) {
  backward_rows_f32<1>(g, out, z, gz, rows, cols);
}
SB_CLONES void backward_f32_a0(const float* g, const float* out, const float* z, float* gz,
                               int64_t rows, int64_t cols) {
  backward_rows_f32<0>(g, out, z, gz, rows, cols);
}

}  // namespace

void sigmoid_family_forward(const float* z, float* out, int64_t rows, int64_t cols,
                            bool sigsoftmax) {
  sigsoftmax ? forward_f32_a1(z, out, rows, cols) : forward_f32_a0(z, out, rows, cols);
}

void sigmoid_family_forward(const double* z, double* out, int64_t rows, int64_t cols,
                            bool sigsoftmax) {
  sigsoftmax ? forward_rows_f64<1>(z, out, rows, cols) : forward_rows_f64<0>(z, out, rows, cols);
}

void sigmoid_family_backward(const float* grad, const float* out, const float* z, float* grad_z,
                             int64_t rows, int64_t cols, bool sigsoftmax) {
  sigsoftmax ? backward_f32_a1(grad, out, z, grad_z, rows, cols)
             : backward_f32_a0(grad, out, z, grad_z, rows, cols);
}

void sigmoid_family_backward(const double* grad, const double* out, const double* z,
                             double* grad_z, int64_t rows, int64_t cols, bool sigsoftmax) {
  sigsoftmax ? backward_rows_f64<1>(grad, out, z, grad_z, rows, cols)
             : backward_rows_f64<0>(grad, out, z, grad_z, rows, cols);
}

const char* sigmoid_family_isa() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") ? "avx2" : "baseline";
#else
  return "baseline";
#endif
}

}  // namespace sb::kernels
