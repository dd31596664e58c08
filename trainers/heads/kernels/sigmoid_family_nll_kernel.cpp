// Fused head + NLL for sigsoftmax (A = 1) and g:sigmoid (A = 0): the training loss without the
// (N, M) log-probabilities. Per row, with m = w(max z) and S = sum_j e^{w_j - m}:
//   loss = -log f_target = m + log S - w_target
//   dloss/dz_j = (f_j - [j = target]) (A + 1 - sigmoid(z_j)),   f_j = e^{w_j - m} / S   (Theorem 5)
// On fast rows (0 <= max z <= 80) e^{w_j - m} = E^A (E + p) / (1 + p) with E = e^{z_j - max z},
// p = E e^{max z} (fast_terms in vector_math.h), so neither pass evaluates a log:
// one exp and one division per element, forward and backward, and nothing (N, M) is written
// but the gradient.

#include <cmath>
#include <limits>

#include "trainers/heads/kernels/sigmoid_family_kernel.h"
#include "trainers/heads/kernels/vector_math.h"

namespace sb::kernels {
namespace {

// stats per row: {max z, log-normaliser lse = m + log S}.
template <int A>
SB_INLINE void nll_forward_rows_f32(const float* z, const int64_t* targets, double* loss,
                                    double* stats, int64_t rows, int64_t cols) {
  for (int64_t row = 0; row < rows; ++row) {
    const float* zr = z + row * cols;
    bool has_nan = false;
    const float zm = row_max(zr, cols, &has_nan);
    if (has_nan) {
      loss[row] = stats[2 * row] = stats[2 * row + 1] = std::numeric_limits<double>::quiet_NaN();
      continue;
    }
    const double m = w64<A>(zm);
    Sum64 acc;
    if (is_fast_row(zm)) {
      const vf c = splat(static_cast<float>(std::exp(static_cast<double>(zm)))), zmax = splat(zm);
      for_each_vector(cols, [&](int64_t j, int64_t n) SB_LAMBDA_INLINE {
        acc.add(fast_terms<A>(load(zr + j, n, kNegInf), zmax, c).term);
      });
    } else {
      const vf mv = splat(static_cast<float>(m));
      for_each_vector(cols, [&](int64_t j, int64_t n) SB_LAMBDA_INLINE {
        acc.add(vexp(vw<A>(load(zr + j, n, kNegInf)) - mv));
      });
    }
    const double lse = m + std::log(acc.total());
    stats[2 * row] = zm;
    stats[2 * row + 1] = lse;
    loss[row] = lse - w64<A>(zr[targets[row]]);
  }
}

template <int A>
SB_INLINE void nll_backward_rows_f32(const float* z, const int64_t* targets, const double* stats,
                                     const double* scales, float scalar, float* gz, int64_t rows,
                                     int64_t cols) {
  for (int64_t row = 0; row < rows; ++row) {
    const float scale = scales ? static_cast<float>(scales[row]) : scalar;
    const float* zr = z + row * cols;
    float* gr = gz + row * cols;
    const double zm = stats[2 * row], lse = stats[2 * row + 1];
    if (fill_nan_row(zm, gr, cols)) continue;
    const int64_t target = targets[row];
    const double zt = zr[target];  // read before the loops write: gz may alias z
    const double m = w64<A>(zm);
    const vf dw0 = splat(A + 1.0f), sv = splat(scale);
    if (is_fast_row(static_cast<float>(zm))) {
      const vf c = splat(static_cast<float>(std::exp(zm))), zmax = splat(static_cast<float>(zm));
      const vf inv_sum = splat(static_cast<float>(std::exp(m - lse)));
      for_each_vector(cols, [&](int64_t j, int64_t n) SB_LAMBDA_INLINE {
        const FastTerms t = fast_terms<A>(load(zr + j, n, 0.0f), zmax, c);
        store(gr + j, sv * (t.term * inv_sum) * (dw0 - t.sig), n);
      });
    } else {
      // (w - m) - log S, not w - lse: lse rounded to float loses ~1e-3 when |lse| ~ 1e4.
      const vf mv = splat(static_cast<float>(m)), log_sum = splat(static_cast<float>(lse - m));
      for_each_vector(cols, [&](int64_t j, int64_t n) SB_LAMBDA_INLINE {
        const vf zv = load(zr + j, n, 0.0f);
        const vf f = vexp((vw<A>(zv) - mv) - log_sum);
        const vf sig = splat(1.0f) / (splat(1.0f) + vexp(-zv));
        store(gr + j, sv * f * (dw0 - sig), n);
      });
    }
    // The target's -1, in float64: f_t - 1 loses nothing when f_t is close to 1.
    const double sig_t = 1 / (1 + std::exp(-zt));
    gr[target] = static_cast<float>(static_cast<double>(scale) * std::expm1(w64<A>(zt) - lse) *
                                    (A + 1 - sig_t));
  }
}

template <int A>
void nll_backward_rows_f64(const double* z, const int64_t* targets, const double* stats,
                           const double* scales, double scalar, double* gz, int64_t rows,
                           int64_t cols) {
  for (int64_t row = 0; row < rows; ++row) {
    const double scale = scales ? scales[row] : scalar;
    const double* zr = z + row * cols;
    const double lse = stats[2 * row + 1];
    const int64_t t = targets[row];
    const double zt = zr[t];  // read before the loop writes: gz may alias z
    for (int64_t j = 0; j < cols; ++j) {
      const double f = std::exp(w64<A>(zr[j]) - lse), sig = 1 / (1 + std::exp(-zr[j]));
      gz[row * cols + j] = scale * f * (A + 1 - sig);
    }
    gz[row * cols + t] = scale * std::expm1(w64<A>(zt) - lse) * (A + 1 - 1 / (1 + std::exp(-zt)));
    if (std::isnan(stats[2 * row]))
      for (int64_t j = 0; j < cols; ++j)
        gz[row * cols + j] = std::numeric_limits<double>::quiet_NaN();
  }
}

#define SB_NLL_ENTRY_POINTS(SUFFIX, ATTR)                                                     \
  template <int A>                                                                            \
  ATTR void nll_forward_##SUFFIX(const float* z, const int64_t* t, double* loss, double* st,  \
                                 int64_t rows, int64_t cols) {                                \
    nll_forward_rows_f32<A>(z, t, loss, st, rows, cols);                                      \
  }                                                                                           \
  template <int A>                                                                            \
  ATTR void nll_backward_##SUFFIX(const float* z, const int64_t* t, const double* st,         \
                                  const double* scales, float scale, float* gz, int64_t rows, \
                                  int64_t cols) {                                             \
    nll_backward_rows_f32<A>(z, t, st, scales, scale, gz, rows, cols);                        \
  }
SB_NLL_ENTRY_POINTS(baseline, )
#if SB_X86_DISPATCH
SB_NLL_ENTRY_POINTS(avx2, SB_AVX2)
#endif

}  // namespace

void sigmoid_family_nll_forward(const float* z, const int64_t* targets, double* loss, double* stats,
                                int64_t rows, int64_t cols, bool sigsoftmax) {
#if SB_X86_DISPATCH
  if (use_avx2_flag().load(std::memory_order_relaxed)) {
    sigsoftmax ? nll_forward_avx2<1>(z, targets, loss, stats, rows, cols)
               : nll_forward_avx2<0>(z, targets, loss, stats, rows, cols);
    return;
  }
#endif
  sigsoftmax ? nll_forward_baseline<1>(z, targets, loss, stats, rows, cols)
             : nll_forward_baseline<0>(z, targets, loss, stats, rows, cols);
}

void sigmoid_family_nll_forward(const double* z, const int64_t* targets, double* loss,
                                double* stats, int64_t rows, int64_t cols, bool sigsoftmax) {
  sigsoftmax ? nll_forward_rows_f64(z, targets, loss, stats, rows, cols,
                                    [](double v) { return w64<1>(v); })
             : nll_forward_rows_f64(z, targets, loss, stats, rows, cols,
                                    [](double v) { return w64<0>(v); });
}

namespace {

void nll_backward_f32(const float* z, const int64_t* targets, const double* stats,
                      const double* scales, double scale, float* grad_z, int64_t rows, int64_t cols,
                      bool sigsoftmax) {
  const auto s = static_cast<float>(scale);
#if SB_X86_DISPATCH
  if (use_avx2_flag().load(std::memory_order_relaxed)) {
    sigsoftmax ? nll_backward_avx2<1>(z, targets, stats, scales, s, grad_z, rows, cols)
               : nll_backward_avx2<0>(z, targets, stats, scales, s, grad_z, rows, cols);
    return;
  }
#endif
  sigsoftmax ? nll_backward_baseline<1>(z, targets, stats, scales, s, grad_z, rows, cols)
             : nll_backward_baseline<0>(z, targets, stats, scales, s, grad_z, rows, cols);
}

void nll_backward_f64(const double* z, const int64_t* targets, const double* stats,
                      const double* scales, double scale, double* grad_z, int64_t rows,
                      int64_t cols, bool sigsoftmax) {
  sigsoftmax ? nll_backward_rows_f64<1>(z, targets, stats, scales, scale, grad_z, rows, cols)
             : nll_backward_rows_f64<0>(z, targets, stats, scales, scale, grad_z, rows, cols);
}

}  // namespace

void sigmoid_family_nll_backward(const float* z, const int64_t* targets, const double* stats,
                                 double scale, float* grad_z, int64_t rows, int64_t cols,
                                 bool sigsoftmax) {
  nll_backward_f32(z, targets, stats, nullptr, scale, grad_z, rows, cols, sigsoftmax);
}

void sigmoid_family_nll_backward(const double* z, const int64_t* targets, const double* stats,
                                 double scale, double* grad_z, int64_t rows, int64_t cols,
                                 bool sigsoftmax) {
  nll_backward_f64(z, targets, stats, nullptr, scale, grad_z, rows, cols, sigsoftmax);
}

void sigmoid_family_nll_backward_rows(const float* z, const int64_t* targets, const double* stats,
                                      const double* scales, float* grad_z, int64_t rows,
                                      int64_t cols, bool sigsoftmax) {
  nll_backward_f32(z, targets, stats, scales, 0, grad_z, rows, cols, sigsoftmax);
}

void sigmoid_family_nll_backward_rows(const double* z, const int64_t* targets, const double* stats,
                                      const double* scales, double* grad_z, int64_t rows,
                                      int64_t cols, bool sigsoftmax) {
  nll_backward_f64(z, targets, stats, scales, 0, grad_z, rows, cols, sigsoftmax);
}

}  // namespace sb::kernels
