#include "trainers/heads/kernels/softmax_nll_kernel.h"

#include <cmath>
#include <limits>

#include "trainers/heads/kernels/vector_math.h"

namespace sb::kernels {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

SB_INLINE void forward_rows_f32(const float* z, const int64_t* targets, double* loss, double* stats,
                                int64_t rows, int64_t cols) {
  for (int64_t row = 0; row < rows; ++row) {
    const float* zr = z + row * cols;
    bool has_nan = false;
    const float zm = row_max(zr, cols, &has_nan);
    if (has_nan) {
      loss[row] = stats[2 * row] = stats[2 * row + 1] = kNaN;
      continue;
    }
    const vf mv = splat(zm);
    Sum64 acc;
    for_each_vector(cols, [&](int64_t j, int64_t n) SB_LAMBDA_INLINE {
      acc.add(vexp(load(zr + j, n, kNegInf) - mv));  // padding: exp(-inf) = 0
    });
    const double lse = static_cast<double>(zm) + std::log(acc.total());
    stats[2 * row] = zm;
    stats[2 * row + 1] = lse;
    loss[row] = lse - static_cast<double>(zr[targets[row]]);
  }
}

SB_INLINE void backward_rows_f32(const float* z, const int64_t* targets, const double* stats,
                                 const double* scales, float* gz, int64_t rows, int64_t cols) {
  for (int64_t row = 0; row < rows; ++row) {
    const float* zr = z + row * cols;
    float* gr = gz + row * cols;
    const double zm = stats[2 * row], lse = stats[2 * row + 1];
    if (fill_nan_row(zm, gr, cols)) continue;
    const int64_t t = targets[row];
    const double zt = zr[t];  // read before the loop writes: gz may alias z
    // f_j = e^{z_j - max z} / S: the max is subtracted in float32 (exact for the largest terms),
    // 1 / S = e^{max z - lse} folded into the scale.
    const vf mv = splat(static_cast<float>(zm));
    const vf sv = splat(static_cast<float>(scales[row] * std::exp(zm - lse)));
    for_each_vector(cols, [&](int64_t j, int64_t n) SB_LAMBDA_INLINE {
      store(gr + j, sv * vexp(load(zr + j, n, 0.0f) - mv), n);
    });
    // The target's f_t - 1 in float64: no cancellation when f_t is close to 1.
    gr[t] = static_cast<float>(scales[row] * std::expm1(zt - lse));
  }
}

// The forward and the unscaled gradient in one visit of each row, in place: e_j = e^{z_j - max z}
// is stored as it is summed, then scaled by 1 / S; one exp per element instead of the forward's
// and the backward's one each.
SB_INLINE void forward_grad_rows_f32(float* z, const int64_t* targets, double* loss, int64_t rows,
                                     int64_t cols) {
  for (int64_t row = 0; row < rows; ++row) {
    float* zr = z + row * cols;
    bool has_nan = false;
    const float zm = row_max(zr, cols, &has_nan);
    if (has_nan) {
      loss[row] = kNaN;
      fill_nan_row(kNaN, zr, cols);
      continue;
    }
    const int64_t t = targets[row];
    const double zt = zr[t];
    const vf mv = splat(zm);
    Sum64 acc;
    for_each_vector(cols, [&](int64_t j, int64_t n) SB_LAMBDA_INLINE {
      const vf e = vexp(load(zr + j, n, kNegInf) - mv);  // padding: exp(-inf) = 0
      acc.add(e);
      store(zr + j, e, n);
    });
    const double sum = acc.total(), lse = static_cast<double>(zm) + std::log(sum);
    loss[row] = lse - zt;
    const vf inv = splat(static_cast<float>(1.0 / sum));
    for_each_vector(cols, [&](int64_t j, int64_t n)
                              SB_LAMBDA_INLINE { store(zr + j, load(zr + j, n, 0.0f) * inv, n); });
    zr[t] = static_cast<float>(std::expm1(zt - lse));  // f_t - 1 in float64, as the backward
  }
}

#define SB_SOFTMAX_NLL_ENTRY_POINTS(SUFFIX, ATTR)                                            \
  ATTR void forward_##SUFFIX(const float* z, const int64_t* t, double* loss, double* st,     \
                             int64_t rows, int64_t cols) {                                   \
    forward_rows_f32(z, t, loss, st, rows, cols);                                            \
  }                                                                                          \
  ATTR void backward_##SUFFIX(const float* z, const int64_t* t, const double* st,            \
                              const double* scales, float* gz, int64_t rows, int64_t cols) { \
    backward_rows_f32(z, t, st, scales, gz, rows, cols);                                     \
  }                                                                                          \
  ATTR void forward_grad_##SUFFIX(float* z, const int64_t* t, double* loss, int64_t rows,    \
                                  int64_t cols) {                                            \
    forward_grad_rows_f32(z, t, loss, rows, cols);                                           \
  }
SB_SOFTMAX_NLL_ENTRY_POINTS(baseline, )
#if SB_X86_DISPATCH
SB_SOFTMAX_NLL_ENTRY_POINTS(avx2, SB_AVX2)
#endif

}  // namespace

void softmax_nll_forward(const float* z, const int64_t* targets, double* loss, double* stats,
                         int64_t rows, int64_t cols) {
#if SB_X86_DISPATCH
  if (use_avx2_flag().load(std::memory_order_relaxed))
    return forward_avx2(z, targets, loss, stats, rows, cols);
#endif
  forward_baseline(z, targets, loss, stats, rows, cols);
}

void softmax_nll_backward(const float* z, const int64_t* targets, const double* stats,
                          const double* scales, float* grad_z, int64_t rows, int64_t cols) {
#if SB_X86_DISPATCH
  if (use_avx2_flag().load(std::memory_order_relaxed))
    return backward_avx2(z, targets, stats, scales, grad_z, rows, cols);
#endif
  backward_baseline(z, targets, stats, scales, grad_z, rows, cols);
}

void softmax_nll_forward_grad(float* z, const int64_t* targets, double* loss, int64_t rows,
                              int64_t cols) {
#if SB_X86_DISPATCH
  if (use_avx2_flag().load(std::memory_order_relaxed))
    return forward_grad_avx2(z, targets, loss, rows, cols);
#endif
  forward_grad_baseline(z, targets, loss, rows, cols);
}

void softmax_nll_forward_grad(double* z, const int64_t* targets, double* loss, int64_t rows,
                              int64_t cols) {
  for (int64_t row = 0; row < rows; ++row) {
    double* zr = z + row * cols;
    bool has_nan = false;
    const double zm = row_max(zr, cols, &has_nan);
    if (has_nan) {
      loss[row] = kNaN;
      for (int64_t j = 0; j < cols; ++j) zr[j] = kNaN;
      continue;
    }
    const int64_t t = targets[row];
    const double zt = zr[t];
    double sum = 0;
    for (int64_t j = 0; j < cols; ++j) sum += (zr[j] = std::exp(zr[j] - zm));
    const double lse = zm + std::log(sum);
    loss[row] = lse - zt;
    for (int64_t j = 0; j < cols; ++j) zr[j] /= sum;
    zr[t] = std::expm1(zt - lse);
  }
}

void softmax_nll_forward(const double* z, const int64_t* targets, double* loss, double* stats,
                         int64_t rows, int64_t cols) {
  nll_forward_rows_f64(z, targets, loss, stats, rows, cols, [](double v) { return v; });
}

void softmax_nll_backward(const double* z, const int64_t* targets, const double* stats,
                          const double* scales, double* grad_z, int64_t rows, int64_t cols) {
  for (int64_t row = 0; row < rows; ++row) {
    const double* zr = z + row * cols;
    double* gr = grad_z + row * cols;
    const double lse = stats[2 * row + 1];
    if (std::isnan(stats[2 * row])) {
      for (int64_t j = 0; j < cols; ++j) gr[j] = kNaN;
      continue;
    }
    const int64_t t = targets[row];
    const double zt = zr[t];  // read before the loop writes: gz may alias z
    for (int64_t j = 0; j < cols; ++j) gr[j] = scales[row] * std::exp(zr[j] - lse);
    gr[t] = scales[row] * std::expm1(zt - lse);
  }
}

}  // namespace sb::kernels
