#include "trainers/heads/kernels/sigmoid_family_kernel.h"

#include <atomic>
#include <cmath>
#include <limits>
#include <string>

#include "common/errors.h"
#include "trainers/heads/kernels/vector_math.h"

namespace sb::kernels {
namespace {

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

// Cost (perf, AVX2, 700 x 10000): the forward is bound by the log polynomial's FMA chain, about
// 5 cycles per element; the backward is at the memory floor (it streams g, out, z and writes the
// gradient). Storing sigmoid(z) for the backward was measured slower (one more (N, M) buffer).
//
// Fast row (see fast_terms in vector_math.h): stores w, returns sum e^{w - m}.
template <int A>
SB_INLINE double fast_row(const float* zr, float* outr, int64_t cols, float zm) {
  const vf c = splat(static_cast<float>(std::exp(static_cast<double>(zm))));
  const vf zmax = splat(zm);
  Sum64 acc;
  for_each_vector(cols, [&](int64_t j, int64_t n) SB_LAMBDA_INLINE {
    const vf z = load(zr + j, n, kNegInf);
    const FastTerms f = fast_terms<A>(z, zmax, c);
    store(outr + j, splat(A + 1.0f) * z - vlog(f.u), n);
    acc.add(f.term);
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
    const double sum =
        is_fast_row(zm) ? fast_row<A>(zr, outr, cols, zm) : general_row<A>(zr, outr, cols, m);
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
    for_each_vector(
        cols, [&](int64_t j, int64_t n) SB_LAMBDA_INLINE { acc.add(load(g + o + j, n, 0.0f)); });
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
#define SB_ENTRY_POINTS(SUFFIX, ATTR)                                                         \
  ATTR void forward_a1_##SUFFIX(const float* z, float* out, int64_t rows, int64_t cols) {     \
    forward_rows_f32<1>(z, out, rows, cols);                                                  \
  }                                                                                           \
  ATTR void forward_a0_##SUFFIX(const float* z, float* out, int64_t rows, int64_t cols) {     \
    forward_rows_f32<0>(z, out, rows, cols);                                                  \
  }                                                                                           \
  ATTR void backward_a1_##SUFFIX(const float* g, const float* out, const float* z, float* gz, \
                                 int64_t rows, int64_t cols) {                                \
    backward_rows_f32<1>(g, out, z, gz, rows, cols);                                          \
  }                                                                                           \
  ATTR void backward_a0_##SUFFIX(const float* g, const float* out, const float* z, float* gz, \
                                 int64_t rows, int64_t cols) {                                \
    backward_rows_f32<0>(g, out, z, gz, rows, cols);                                          \
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

std::atomic<int>& use_avx2() { return use_avx2_flag(); }

}  // namespace

std::atomic<int>& use_avx2_flag() {
  static std::atomic<int> flag{cpu_has_avx2() ? 1 : 0};
  return flag;
}

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

void sigmoid_family_backward(const double* grad, const double* out, const double* z, double* grad_z,
                             int64_t rows, int64_t cols, bool sigsoftmax) {
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
      throw OptionError::described("isa", "set_sigmoid_family_isa: this CPU lacks AVX2/FMA");
    use_avx2().store(1);
  } else {
    throw OptionError::described(
        "isa", "set_sigmoid_family_isa: '" + want + "' is not one of auto, baseline, avx2");
  }
}

}  // namespace sb::kernels
