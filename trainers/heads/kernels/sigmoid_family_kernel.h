#pragma once
// Fused row kernels for the two heads built on log-sigmoid (LibTorch-free, raw pointers):
// clang-format off
//   sigsoftmax (A = 1): w = z + logsigmoid(z)   (Kanai et al. 2018, Definition 1: log g = 2z - softplus z)
//   g:sigmoid  (A = 0): w = logsigmoid(z)       (supplementary B.2)
//   log f = w - logsumexp(w)
// Backward (Theorem 5 / supplementary B.2): dlog f_i/dz_j = (delta_ij - f_j)(A + 1 - sigmoid(z_j)),
// so
//   grad_z_j = (g_j - f_j * sum_i g_i) * (A + 1 - sigmoid(z_j)).
// clang-format on
// One pass over z forward and one over (g, out, z) backward, each row staying in cache.
// float32 uses 8-lane vector code compiled twice (AVX2 + FMA, and baseline x86-64) and chosen at
// run time from the CPU's features, so the build never executes instructions the CPU lacks.

#include <cstdint>

namespace sb::kernels {

/// Rows per at::parallel_for task over rows of `cols` entries: enough elements (~64k) to
/// amortise the scheduling (the fused heads' autograd functions).
inline int64_t grain_rows(int64_t cols) {
  return cols >= (int64_t{1} << 16) ? 1 : (int64_t{1} << 16) / cols;
}

/// rows x cols, row-major, contiguous. `sigsoftmax` selects A = 1 (else g:sigmoid, A = 0).
/// A row holding a NaN comes out all-NaN.
void sigmoid_family_forward(const float* z, float* out, int64_t rows, int64_t cols,
                            bool sigsoftmax);
void sigmoid_family_forward(const double* z, double* out, int64_t rows, int64_t cols,
                            bool sigsoftmax);

/// grad: dL/dlog f; out: the forward's log f; z: the logits; grad_z: dL/dz.
void sigmoid_family_backward(const float* grad, const float* out, const float* z, float* grad_z,
                             int64_t rows, int64_t cols, bool sigsoftmax);
void sigmoid_family_backward(const double* grad, const double* out, const double* z, double* grad_z,
                             int64_t rows, int64_t cols, bool sigsoftmax);

/// Fused head + NLL (the training loss without the (N, M) log-probabilities). targets: (rows,)
/// in [0, cols). Writes loss[r] = -log f(z_r)[targets[r]] and stats[2r], stats[2r+1] (row max and
/// log-normaliser) for the backward. A row holding a NaN gets a NaN loss and a NaN gradient.
void sigmoid_family_nll_forward(const float* z, const int64_t* targets, double* loss, double* stats,
                                int64_t rows, int64_t cols, bool sigsoftmax);
void sigmoid_family_nll_forward(const double* z, const int64_t* targets, double* loss,
                                double* stats, int64_t rows, int64_t cols, bool sigsoftmax);

/// grad_z[r, j] = scale * (f_rj - [j = targets[r]]) * (A + 1 - sigmoid(z_rj)), with `scale` the
/// upstream gradient of each row's loss (1/N for a mean). grad_z may be z itself (in place: each
/// row's target logit is read before the row is written).
void sigmoid_family_nll_backward(const float* z, const int64_t* targets, const double* stats,
                                 double scale, float* grad_z, int64_t rows, int64_t cols,
                                 bool sigsoftmax);
void sigmoid_family_nll_backward(const double* z, const int64_t* targets, const double* stats,
                                 double scale, double* grad_z, int64_t rows, int64_t cols,
                                 bool sigsoftmax);

/// The same with each row's own upstream gradient: grad_z[r, j] = scales[r] * (...) (a sum of
/// per-row losses with weights, e.g. a mixture's posterior over its experts).
void sigmoid_family_nll_backward_rows(const float* z, const int64_t* targets, const double* stats,
                                      const double* scales, float* grad_z, int64_t rows,
                                      int64_t cols, bool sigsoftmax);
void sigmoid_family_nll_backward_rows(const double* z, const int64_t* targets, const double* stats,
                                      const double* scales, double* grad_z, int64_t rows,
                                      int64_t cols, bool sigsoftmax);

/// "avx2" or "baseline": the float32 code path in use (by default the best this CPU has).
const char* sigmoid_family_isa();

/// Forces a path: "auto" (the CPU's best), "baseline", or "avx2" (throws sb::OptionError
/// if the CPU lacks AVX2/FMA or the name is unknown). For tests and benchmarks.
void set_sigmoid_family_isa(const char* isa);

}  // namespace sb::kernels
