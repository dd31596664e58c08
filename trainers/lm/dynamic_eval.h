#pragma once
// Dynamic evaluation (Krause et al. 2017, "Dynamic evaluation of neural sequence models",
// arXiv:1709.07432, sec. 5: RMS-normalised updates with a global decay prior), as the paper applies
// it after finetuning (Kanai et al. 2018, supplementary C.1). docs/protocol.md,
// "Dynamic evaluation":
//   1. Gradient statistics on the training data (batch 100, segments of 5 tokens, state carried):
//      MS_p = sqrt(mean over the N_b batches of g_p^2), element-wise for every parameter p.
//   2. Decay rates: MS_p / mean(MS), the mean over every element of every parameter, clipped at
//      1 / lambda (so that lambda * decrate <= 1 and a step never overshoots W0).
//   3. Evaluation with batch size 1 in segments of `bptt` tokens: score a segment with the weights
//      adapted on the previous segments only, then backprop its loss and step
//        W <- W - lr * g / (MS + eps) + lambda * decrate * (W0 - W),   W0 = the trained weights.
// Everything runs in eval mode (no dropout, no weight drop) while gradients flow.

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "trainers/lm/dyneval_config.h"
#include "trainers/lm/model.h"
#include "trainers/runkit/metrics_log.h"

namespace sb::lm {

/// Defaults (from dyneval_defaults(), trainers/lm/dyneval_config.h): the paper's single-head
/// setting (Kanai et al. 2018 supplementary C.1.1: eps 1e-3, statistics with batch 100) with the
/// middle of its grid, lr 5e-5 of {3, 4, 5, 6, 7, 10}e-5 and lambda 2e-3 of {1, 2, 3, 5}e-3 (the
/// grid mode searches the rest; the paper reports only the grid, not the winners).
struct DynamicEvalOptions {
  /// eta: step size of the RMS-normalised gradient step (0 = no gradient step).
  TORCH_ARG(double, lr) = dyneval_defaults().lr;
  /// Global decay rate towards the trained weights W0 (0 = no decay).
  TORCH_ARG(double, lambda) = dyneval_defaults().lambda;
  /// Added to MS in the denominator of the gradient step (> 0).
  TORCH_ARG(double, eps) = dyneval_defaults().eps;
  /// Tokens per evaluation segment = per update. 5: the reference implementation's single bptt
  /// option, used both for the statistics and the evaluation (docs/protocol.md: "segments of 5
  /// tokens").
  TORCH_ARG(int64_t, bptt) = dyneval_defaults().bptt;
  /// Batch size of the gradient-statistics pass (paper: 100).
  TORCH_ARG(int64_t, stats_batch_size) = dyneval_defaults().stats_batch_size;
  /// Tokens per segment of the gradient-statistics pass (docs/protocol.md: 5).
  TORCH_ARG(int64_t, stats_bptt) = dyneval_defaults().stats_bptt;
  /// Stop the statistics pass after the segment that reaches this many training tokens
  /// (stats_batch_size * stats_bptt per segment); 0 = the whole training set. The segments are
  /// the first rows of the batchified stream, so even a short pass samples all 100 columns,
  /// i.e. the whole corpus.
  TORCH_ARG(int64_t, stats_tokens) = dyneval_defaults().stats_tokens;
};

/// Throws sb::OptionError naming the option and its value unless lr >= 0, lambda >= 0,
/// eps > 0, every bptt and batch size >= 1, stats_tokens >= 0, all finite.
void validate(const DynamicEvalOptions& options);

/// Step 1's result, one entry per model->parameters() in that order.
struct GradientStats {
  /// MS_p = sqrt(sum_k g_{p,k}^2 / N_b), float64, the shape of parameter p. Accumulated in float64
  /// from the float32 gradients.
  std::vector<torch::Tensor> ms;
  /// mean(MS): over every element of every parameter (a 1-element bias counts as much as one
  /// embedding entry), float64.
  double mean_ms = 0;
  int64_t batches = 0;   ///< N_b: backward passes averaged over
  int64_t tokens = 0;    ///< training tokens scored
  double mean_loss = 0;  ///< the head's mean per-token loss over those tokens (a sanity check)
};

/// Step 1 on `train_ids` (batchified with options.stats_batch_size, segments of
/// options.stats_bptt, the LSTM state carried and detached, the last segment possibly shorter).
/// The gradient of batch k is that of the head's mean loss over its stats_batch_size * len
/// targets (model->loss). Leaves the model in eval mode with its weights untouched and its
/// gradients cleared. Throws sb::InputError when there are fewer than 2 rows or every MS is
/// zero.
GradientStats gradient_statistics(AwdLstm& model, const std::vector<int64_t>& train_ids,
                                  const DynamicEvalOptions& options,
                                  const runkit::ProgressFn& progress = {});

/// Step 2: min(MS_p / mean(MS), 1 / lambda) per parameter, float64 (lambda = 0: not clipped).
std::vector<torch::Tensor> decay_rates(const GradientStats& stats, double lambda);

/// The static baseline with the same segmentation as dynamic_evaluate: batch size 1, segments of
/// `bptt`, state carried, no updates (evaluate() on the (N, 1) stream). Mean per-token loss.
double static_evaluate(AwdLstm& model, const std::vector<int64_t>& ids, int64_t bptt,
                       const runkit::ProgressFn& progress = {});

/// Step 3 over `ids` (predicts ids[1..]): the mean per-token loss of the head (NLL; for the
/// sparse head its training loss, as evaluate()), every segment scored before its update. The
/// model's weights are put back to W0 bit for bit before returning (also when it throws); the
/// model is left in eval mode with its gradients cleared. Returns +infinity as soon as a segment's
/// loss is not finite (a diverging lr). Throws sb::OptionError when the options are invalid or
/// there are fewer than 2 ids, std::logic_error when `stats` does not match the model's parameters
/// (count or shapes: statistics of another model).
double dynamic_evaluate(AwdLstm& model, const std::vector<int64_t>& ids, const GradientStats& stats,
                        const DynamicEvalOptions& options, const runkit::ProgressFn& progress = {});

/// One point of the lr x lambda grid and its mean per-token loss on the search split.
struct GridPoint {
  double lr = 0, lambda = 0, loss = 0;
};

struct GridSearchResult {
  std::vector<GridPoint> points;  ///< row-major: lrs[i] x lambdas[j] at i * lambdas.size() + j
  GridPoint best;                 ///< the lowest loss; the first in grid order among equals
};

/// The paper's selection of lr and lambda (Kanai et al. 2018, supplementary C.1.1: a grid search
/// on the validation set): dynamic_evaluate() at every (lr, lambda) of lrs x lambdas with the
/// other options of `base`. `on_point` sees each point as it finishes; `progress_of` gives the
/// progress callback of a point (may be empty). Throws sb::OptionError for an empty grid or an
/// invalid value (naming it), and when every point diverges (non-finite).
GridSearchResult grid_search(
    AwdLstm& model, const std::vector<int64_t>& ids, const GradientStats& stats,
    const DynamicEvalOptions& base, const std::vector<double>& lrs,
    const std::vector<double>& lambdas, const std::function<void(const GridPoint&)>& on_point = {},
    const std::function<runkit::ProgressFn(double lr, double lambda)>& progress_of = {});

}  // namespace sb::lm
