#pragma once
// One entry for the per-row NLL kernels of the two output functions the mixtures' experts use:
// softmax (softmax_nll_kernel.h) and sigsoftmax (sigmoid_family_kernel.h, A = 1). Shared by
// row_nll_function.cpp and linear_row_nll_function.cpp.

#include <cstdint>

#include "trainers/heads/kernels/sigmoid_family_kernel.h"
#include "trainers/heads/kernels/softmax_nll_kernel.h"

namespace sb::kernels {

/// loss[r] = -log f(z_r)[t_r] and stats[2r..2r+1] (row max, log-normaliser) for rows x cols.
template <class T>
void row_nll_forward(const T* z, const int64_t* t, double* loss, double* stats, int64_t rows,
                     int64_t cols, bool sigsoftmax) {
  if (sigsoftmax)
    sigmoid_family_nll_forward(z, t, loss, stats, rows, cols, /*sigsoftmax=*/true);
  else
    softmax_nll_forward(z, t, loss, stats, rows, cols);
}

/// gz[r, j] = scales[r] * d(-log f(z_r)[t_r]) / dz_rj from the forward's stats; gz may be z.
template <class T>
void row_nll_backward(const T* z, const int64_t* t, const double* stats, const double* scales,
                      T* gz, int64_t rows, int64_t cols, bool sigsoftmax) {
  if (sigsoftmax)
    sigmoid_family_nll_backward_rows(z, t, stats, scales, gz, rows, cols, /*sigsoftmax=*/true);
  else
    softmax_nll_backward(z, t, stats, scales, gz, rows, cols);
}

/// In place: loss[r] = -log f(z_r)[t_r] and z_r becomes d(-log f(z_r)[t_r]) / dz_r. Softmax: one
/// exp per element (softmax_nll_forward_grad); sigsoftmax: the forward and the backward on each row
/// while it is in cache.
template <class T>
void row_nll_forward_grad(T* z, const int64_t* t, double* loss, int64_t rows, int64_t cols,
                          bool sigsoftmax) {
  if (!sigsoftmax) return softmax_nll_forward_grad(z, t, loss, rows, cols);
  const double one = 1.0;
  double stats[2];
  for (int64_t r = 0; r < rows; ++r) {
    T* row = z + r * cols;
    row_nll_forward(row, t + r, loss + r, stats, 1, cols, /*sigsoftmax=*/true);
    row_nll_backward(row, t + r, stats, &one, row, 1, cols, /*sigsoftmax=*/true);
  }
}

}  // namespace sb::kernels
