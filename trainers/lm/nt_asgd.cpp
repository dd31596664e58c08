#include "trainers/lm/nt_asgd.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/errors.h"

namespace sb::lm {

NonMonotoneTrigger::NonMonotoneTrigger(int64_t nonmono) : nonmono_(nonmono) {
  if (nonmono < 1)
    throw OptionError::described(
        "nonmono", "NonMonotoneTrigger: nonmono must be >= 1, got " + std::to_string(nonmono));
}

bool NonMonotoneTrigger::observe(double loss) {
  const auto n = static_cast<size_t>(nonmono_);
  bool fires = false;
  if (history_.size() > n) {
    const double best_before = *std::min_element(history_.begin(), history_.end() - n);
    fires = loss > best_before;
  }
  history_.push_back(loss);
  return fires;
}

void sgd_step(const std::vector<torch::Tensor>& params, double lr, double wdecay) {
  torch::NoGradGuard no_grad;
  for (const auto& p : params) {
    if (!p.grad().defined()) continue;
    auto g = p.grad();
    if (wdecay != 0) g = g.add(p, wdecay);
    p.add_(g, -lr);
  }
}

void ParameterAverager::start(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  averages_.clear();
  for (const auto& p : params) averages_.push_back(torch::zeros_like(p));
  count_ = 0;
}

void ParameterAverager::update(const std::vector<torch::Tensor>& params) {
  // internal: start() takes the model's parameters, and a resumed checkpoint's averages are
  // checked against them (WordLmTrainer::load_extra); update() gets the same parameters.
  if (params.size() != averages_.size())
    throw std::logic_error("ParameterAverager::update: " + std::to_string(params.size()) +
                           " parameters, started with " + std::to_string(averages_.size()));
  torch::NoGradGuard no_grad;
  ++count_;
  const double mu = 1.0 / static_cast<double>(count_);
  for (size_t i = 0; i < params.size(); ++i) {
    if (count_ == 1)
      averages_[i].copy_(params[i]);
    else
      averages_[i].add_(params[i].sub(averages_[i]).mul_(mu));
  }
}

void ParameterAverager::restore(std::vector<torch::Tensor> averages, int64_t count) {
  averages_ = std::move(averages);
  count_ = count;
}

SwapInGuard::SwapInGuard(const std::vector<torch::Tensor>& params,
                         const std::vector<torch::Tensor>& values)
    : params_(params) {
  // internal: the values are ParameterAverager's averages of these same parameters (their count
  // checked on resume by WordLmTrainer::load_extra).
  if (params.size() != values.size())
    throw std::logic_error("SwapInGuard: " + std::to_string(params.size()) + " parameters, " +
                           std::to_string(values.size()) + " values");
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i) {
    saved_.push_back(params[i].detach().clone());
    params_[i].copy_(values[i]);
  }
}

SwapInGuard::~SwapInGuard() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) params_[i].copy_(saved_[i]);
}

}  // namespace sb::lm
