#pragma once
// Evaluation passes of a trained AWD-LSTM: the mean loss over a batched stream, and the test-set
// dump of log-probabilities to the HDF5 contract (analysis/logprob_file.h).

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "analysis/logprob_file.h"
#include "trainers/heads/mixture_stats.h"
#include "trainers/lm/awd_lstm.h"
#include "trainers/lm/run_log.h"

namespace sb::lm {

/// One segment of a stateful evaluation: the mean loss (a 0-dim tensor) of the targets (len B)
/// given the inputs (len, B); the callee carries its recurrent state to the next call.
using SegmentEval =
    std::function<torch::Tensor(const torch::Tensor& input, const torch::Tensor& target)>;

/// The evaluation loop of the LSTM LMs (AWD-LSTM's evaluate()): data (N, B) from batchify() in
/// order, in segments of `bptt` rows, each target the next row's token; returns the mean
/// per-token loss, each segment weighted by its token count. Throws for N < 2 or a non-2-D data.
double mean_segment_loss(const torch::Tensor& data, int64_t bptt, const SegmentEval& segment,
                         const ProgressFn& progress = {});

/// Mean per-token loss of the head (NLL; eq. 5 for sparse) over data (N, B) from batchify(),
/// in segments of `bptt` with the LSTM state carried, as AWD-LSTM's evaluate(). Puts the model
/// in eval mode and leaves it there; no gradients.
double evaluate(AwdLstm& model, const torch::Tensor& data, int64_t bptt,
                const ProgressFn& progress = {});

/// Mixture heads: the prior's entropies and the experts' disagreement (heads/mixture_stats.h) over
/// every position of data (N, B), read as evaluate() reads it (segments of `bptt`, state carried,
/// eval mode, no gradients). Throws std::invalid_argument for a single head.
heads::MixtureStats mixture_stats(AwdLstm& model, const torch::Tensor& data, int64_t bptt);

/// Runs the model over `ids` with batch size 1 (segments of `bptt`, state carried) and streams
/// row t = log P(. | ids[0..t]) for the target ids[t + 1] into `path` (T = ids.size() - 1 rows,
/// float32, block by block: never the whole matrix in memory). The header's head/d/bias/vocab are
/// taken from the model; num_tokens from ids. Returns the ppl stored in the file,
/// exp(-mean log_probs[t, target_t]) over the float32 values as written.
double dump_log_probs(AwdLstm& model, const std::vector<int64_t>& ids, int64_t bptt,
                      const std::string& path, analysis::LogProbHeader header,
                      const ProgressFn& progress = {});

}  // namespace sb::lm
