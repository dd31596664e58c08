#pragma once
// Evaluation passes of a trained AWD-LSTM: the mean loss over a batched stream, and the test-set
// dump of log-probabilities to the HDF5 contract (contract/logprob_file.h).

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "contract/logprob_file.h"
#include "trainers/heads/mixture_stats.h"
#include "trainers/lm/model.h"
#include "trainers/runkit/metrics_log.h"
#include "trainers/runkit/segment_loss.h"

namespace sb::lm {

/// Mean per-token loss of the head (NLL; eq. 5 for sparse) over data (N, B) from batchify(),
/// in segments of `bptt` with the LSTM state carried, as AWD-LSTM's evaluate(). Puts the model
/// in eval mode and leaves it there; no gradients.
double evaluate(AwdLstm& model, const torch::Tensor& data, int64_t bptt,
                const runkit::ProgressFn& progress = {});

/// Mixture heads: the prior's entropies and the experts' disagreement (heads/mixture_stats.h) over
/// every position of data (N, B), read as evaluate() reads it (segments of `bptt`, state carried,
/// eval mode, no gradients). Throws std::logic_error for a single head.
heads::MixtureStats mixture_stats(AwdLstm& model, const torch::Tensor& data, int64_t bptt);

/// Runs the model over `ids` with batch size 1 (segments of `bptt`, state carried) and streams
/// row t = log P(. | ids[0..t]) for the target ids[t + 1] into `path` (T = ids.size() - 1 rows,
/// float32, block by block: never the whole matrix in memory) under `header`, whose T must be
/// ids.size() - 1 and M the model's vocabulary (std::logic_error otherwise: the caller's bug).
/// Returns the ppl stored in the file, exp(-mean log_probs[t, target_t]) over the float32 values
/// as written.
double dump_log_probs(AwdLstm& model, const std::vector<int64_t>& ids, int64_t bptt,
                      const std::string& path, const contract::LogProbHeader& header,
                      const runkit::ProgressFn& progress = {});

}  // namespace sb::lm
