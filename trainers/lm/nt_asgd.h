#pragma once
// NT-ASGD (Merity et al. 2018, sec. 3): SGD that switches to averaged SGD when validation stops
// improving "non-monotonically". LibTorch has no ASGD; with the reference settings (t0 = 0,
// lambd = 0) torch.optim.ASGD is plain SGD plus a running mean of the iterates, which is what
// sgd_step + ParameterAverager implement.

#include <torch/torch.h>

#include <vector>

namespace sb::lm {

/// The non-monotone trigger: a new validation loss fires it when more than n losses were seen
/// before and it is worse than the best of all but the last n of them (AWD-LSTM's
/// `len(hist) > nonmono and loss > min(hist[:-nonmono])`). Every observed loss joins the history.
class NonMonotoneTrigger {
 public:
  explicit NonMonotoneTrigger(int64_t nonmono = 5);
  /// Records `loss`; true when the rule fires for it.
  bool observe(double loss);
  const std::vector<double>& history() const { return history_; }
  void set_history(std::vector<double> history) { history_ = std::move(history); }
  int64_t nonmono() const { return nonmono_; }

 private:
  int64_t nonmono_;
  std::vector<double> history_;
};

/// p <- p - lr (grad + wdecay p) for every parameter with a gradient (torch.optim.SGD without
/// momentum, weight decay added to the gradient).
void sgd_step(const std::vector<torch::Tensor>& params, double lr, double wdecay);

/// Running mean of the iterates since start(): after n updates, averages = (p_1 + ... + p_n) / n,
/// accumulated as a <- a + (p - a) / n (torch.optim.ASGD's ax with t0 = 0).
class ParameterAverager {
 public:
  /// Begins averaging these parameters (the next update() is iterate 1).
  void start(const std::vector<torch::Tensor>& params);
  bool active() const { return !averages_.empty(); }
  /// Folds in the current values of the parameters given to start().
  void update(const std::vector<torch::Tensor>& params);
  int64_t count() const { return count_; }
  const std::vector<torch::Tensor>& averages() const { return averages_; }
  /// For checkpoints: restore a saved state.
  void restore(std::vector<torch::Tensor> averages, int64_t count);
  void clear() { averages_.clear(), count_ = 0; }

 private:
  std::vector<torch::Tensor> averages_;
  int64_t count_ = 0;
};

/// Copies `values` into `params` for its lifetime and puts the originals back when destroyed:
/// evaluation with the averaged weights (AWD-LSTM swaps ax in and out the same way).
class SwapInGuard {
 public:
  SwapInGuard(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& values);
  ~SwapInGuard();
  SwapInGuard(const SwapInGuard&) = delete;
  SwapInGuard& operator=(const SwapInGuard&) = delete;

 private:
  std::vector<torch::Tensor> params_, saved_;
};

}  // namespace sb::lm
