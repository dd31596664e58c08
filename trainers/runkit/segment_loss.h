#pragma once
// The evaluation loop of the recurrent LMs (AWD-LSTM's evaluate(), Merity et al. 2018): a token
// stream batchified into columns, read in order in segments of `bptt` rows with the model's state
// carried; shared by the word LM and the character LM.

#include <torch/torch.h>

#include <functional>

#include "trainers/runkit/metrics_log.h"

namespace sb::runkit {

/// Starts an evaluation over B columns: the callee sets its recurrent state to zero.
using SegmentStart = std::function<void(int64_t columns)>;

/// One segment of a stateful evaluation: the mean loss (a 0-dim tensor) of the targets (len B)
/// given the inputs (len, B); the callee carries its recurrent state to the next call.
using SegmentEval =
    std::function<torch::Tensor(const torch::Tensor& input, const torch::Tensor& target)>;

/// The evaluation loop of the LSTM LMs (AWD-LSTM's evaluate()): `model` in eval mode, no
/// gradients; start(B), then data (N, B) from batchify() in order, in segments of `bptt` rows,
/// each target the next row's token; returns the mean per-token loss, each segment weighted by
/// its token count. Throws for N < 2 or a non-2-D data.
double mean_segment_loss(torch::nn::Module& model, const torch::Tensor& data, int64_t bptt,
                         const SegmentStart& start, const SegmentEval& segment,
                         const runkit::ProgressFn& progress = {});

}  // namespace sb::runkit
