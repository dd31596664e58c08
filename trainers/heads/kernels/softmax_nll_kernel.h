#pragma once
// Fused softmax + NLL per row (LibTorch-free, raw pointers), for the mixtures' experts: each row's
// -log softmax(z_r)[t_r] without the (rows, cols) log-probabilities, and its gradient with a
// separate upstream weight per row:
//   loss[r]      = lse(z_r) - z_r[t_r],                 lse = max z + log sum_j e^{z_j - max z}
//   grad_z[r, j] = scales[r] * (softmax(z_r)_j - [j = t_r])
// One pass over z forward (after the row max), one backward, each row staying in cache. float32
// uses the sigmoid-family kernels' 8-lane vector code and their run-time ISA choice
// (sigmoid_family_kernel.h: set_sigmoid_family_isa picks it for both).

#include <cstdint>

namespace sb::kernels {

/// z: rows x cols, row-major, contiguous; targets: (rows,) in [0, cols). Writes loss[r] and
/// stats[2r], stats[2r+1] (row max, log-normaliser) for the backward. A row holding a NaN gets a
/// NaN loss and a NaN gradient.
void softmax_nll_forward(const float* z, const int64_t* targets, double* loss, double* stats,
                         int64_t rows, int64_t cols);
void softmax_nll_forward(const double* z, const int64_t* targets, double* loss, double* stats,
                         int64_t rows, int64_t cols);

/// grad_z[r, j] = scales[r] * (softmax(z_r)_j - [j = targets[r]]). grad_z may be z itself (in
/// place: each row's target logit is read before the row is written).
void softmax_nll_backward(const float* z, const int64_t* targets, const double* stats,
                          const double* scales, float* grad_z, int64_t rows, int64_t cols);
void softmax_nll_backward(const double* z, const int64_t* targets, const double* stats,
                          const double* scales, double* grad_z, int64_t rows, int64_t cols);

/// The forward and the unscaled gradient at once, in place: loss[r] as softmax_nll_forward, and
/// z[r, j] becomes softmax(z_r)_j - [j = targets[r]] (softmax_nll_backward with scale 1), with one
/// exp per element. For a node whose backward needs only that gradient (linear_row_nll_function.h).
void softmax_nll_forward_grad(float* z, const int64_t* targets, double* loss, int64_t rows,
                              int64_t cols);
void softmax_nll_forward_grad(double* z, const int64_t* targets, double* loss, int64_t rows,
                              int64_t cols);

}  // namespace sb::kernels
