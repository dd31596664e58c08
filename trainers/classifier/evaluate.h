#pragma once
// One pass of a classifier over a split: error rate, the training criterion and the NLL, and
// optionally the log-output rows for the HDF5 dump (contract/logprob_file.h).

#include <torch/torch.h>

#include <functional>

#include "trainers/classifier/model.h"
#include "trainers/classifier/splits.h"

namespace sb::classifier {

struct Evaluation {
  int64_t images = 0;
  double error_pct = 0;  ///< 100 x the fraction of images whose arg-max output is not the label
  double loss = 0;       ///< the training criterion (mean): NLL, sparse's eq. 5, or mse
  /// mean -log p(label) (not for mse); +inf when some label has probability 0 (sparse: outside
  /// the top k)
  double nll = 0;
  int64_t outside_support = 0;  ///< images whose label has log-probability -inf
};

/// Rows (count, M) of log-probabilities and their labels, in image order.
using RowSink = std::function<void(const torch::Tensor& log_probs, const torch::Tensor& labels)>;

/// Evaluates `model` (eval mode, no gradients) on `split` in batches of `batch_size`. The class
/// is the arg-max of the log-probabilities (of the linear outputs for mse): for heads that are
/// not increasing in z (spherical, taylor, softmax_abs) that differs from the logits' arg-max.
Evaluation evaluate(ConvNet& model, const Split& split, int64_t batch_size,
                    const RowSink& sink = nullptr);

}  // namespace sb::classifier
