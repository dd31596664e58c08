#pragma once
// One analysis spread over several processes (rank_analysis --mpi, analysis/mpi/): each process
// streams its own contiguous share of the rows and the partial sums are added across processes.
// This header knows no MPI: the binary hands in the reductions as functions, so the library stays
// the one-process code with a few meeting points.
//
// What is added where: the gram method's partial G_r = A_r^T A_r (reduced onto process 0, which
// alone solves and reports), the sketch's partial Y and probe norms every pass (every process
// needs the next basis: the same sums and the same seed give every process the same Q), the
// non-finite counts and the signs. A sum over processes is one more summation order of the same
// dot products, so the Gram path's rounding bound (gamma_T ||A^T A||, any order: Higham 2002,
// section 3.1) and the sketch's (sketch.h) already cover it: the certificate needs no new margin.
// The sketch's R factors are not summed but stacked (each process's in its own rows of a zero
// matrix, added) and factored once more, a step whose backward error streamed_qr.h adds.
// Two runs with different process counts agree to that rounding, not bit for bit.
//
// Errors found while streaming (a NaN in one process's rows, rows declared log-probabilities that
// do not normalise) are exchanged at the next meeting point, so every process stops with the same
// one-line message instead of leaving the others waiting in a reduction.

#include <cstdint>
#include <functional>
#include <utility>

#include "analysis/matrix_source.h"
#include "analysis/spectrum.h"

namespace sb::analysis {

struct Collective {
  int rank = 0, size = 1;
  /// Element-wise sum of n doubles over all processes, the result on every process.
  std::function<void(double* data, int64_t n)> allreduce_sum;
  /// Element-wise maximum, the result on every process.
  std::function<void(double* data, int64_t n)> allreduce_max;
  /// Element-wise sum onto process 0 (the other processes' buffers are left undefined).
  std::function<void(double* data, int64_t n)> reduce_sum_to_root;
  bool root() const { return rank == 0; }
};

/// Process `rank`'s rows of `rows`: [first, first + count), contiguous shares in rank order whose
/// sizes differ by at most one.
std::pair<int64_t, int64_t> row_share(int64_t rows, int rank, int size);

/// The rows [first, first + count) of another source, as rows 0..count - 1; it also records the
/// smallest and largest value read (the sign facts of the whole matrix come from them).
class RowShare final : public ForwardingSource {
 public:
  RowShare(const MatrixSource& inner, int64_t first, int64_t count);
  int64_t rows() const override { return count_; }
  void read_rows(int64_t begin, int64_t count, float* out) const override;
  void read_rows(int64_t begin, int64_t count, double* out) const override;
  int64_t first() const { return first_; }
  double min_seen() const { return min_; }
  double max_seen() const { return max_; }

 private:
  template <class T>
  void note(const T* rows, int64_t n) const;
  int64_t first_, count_;
  mutable double min_, max_;
};

/// Adds the processes' non-finite counts and keeps the first position (in whole-matrix rows:
/// `row_offset` is this process's first row) on every process.
void reduce_scan(FiniteScan& scan, const Collective& c, int64_t row_offset);

class NormalisationCheck;
/// Every process's normalisation findings merged into each one's check (input_kind.h): the first
/// non-normalised row of the whole matrix, its logsumexp, the largest |logsumexp|.
void reduce_normalisation(NormalisationCheck& check, const Collective& c);

/// Whether the whole matrix is one-signed, from every process's smallest and largest value.
bool reduce_same_sign(double min_seen, double max_seen, const Collective& c);

}  // namespace sb::analysis
