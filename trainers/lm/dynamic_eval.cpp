#include "trainers/lm/dynamic_eval.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "common/errors.h"
#include "datasets/batchify.h"
#include "trainers/lm/evaluate.h"
#include "trainers/runkit/device.h"

namespace sb::lm {

namespace {

void require(bool ok, const std::string& name, double value, const std::string& rule) {
  if (!ok || !std::isfinite(value))
    throw OptionError::described(name, "dynamic evaluation: " + name + " must be " + rule +
                                           " and finite, got " + c10::str(value));
}

/// Keeps a copy of the weights W0 and puts it back, bit for bit, when it goes out of scope.
class RestoreWeights {
 public:
  RestoreWeights(AwdLstm& model, const std::vector<torch::Tensor>& params)
      : model_(model), params_(params) {
    torch::NoGradGuard no_grad;
    for (const auto& p : params_) saved_.push_back(p.detach().clone());
  }
  ~RestoreWeights() {
    torch::NoGradGuard no_grad;
    for (size_t k = 0; k < params_.size(); ++k) params_[k].copy_(saved_[k]);
    model_->zero_grad(/*set_to_none=*/true);
  }
  RestoreWeights(const RestoreWeights&) = delete;
  RestoreWeights& operator=(const RestoreWeights&) = delete;
  const std::vector<torch::Tensor>& w0() const { return saved_; }

 private:
  AwdLstm& model_;
  std::vector<torch::Tensor> params_, saved_;
};

}  // namespace

void validate(const DynamicEvalOptions& o) {
  require(o.lr() >= 0, "lr", o.lr(), ">= 0");
  require(o.lambda() >= 0, "lambda", o.lambda(), ">= 0");
  require(o.eps() > 0, "eps", o.eps(), "> 0");
  require(o.bptt() >= 1, "bptt", static_cast<double>(o.bptt()), ">= 1");
  require(o.stats_batch_size() >= 1, "stats_batch_size", static_cast<double>(o.stats_batch_size()),
          ">= 1");
  require(o.stats_bptt() >= 1, "stats_bptt", static_cast<double>(o.stats_bptt()), ">= 1");
  require(o.stats_tokens() >= 0, "stats_tokens", static_cast<double>(o.stats_tokens()), ">= 0");
}

GradientStats gradient_statistics(AwdLstm& model, const std::vector<int64_t>& train_ids,
                                  const DynamicEvalOptions& options,
                                  const runkit::ProgressFn& progress) {
  validate(options);
  const int64_t B = options.stats_batch_size(), bptt = options.stats_bptt();
  if (static_cast<int64_t>(train_ids.size()) < 2 * B)
    throw InputError::described("", "train",
                                "gradient statistics: " + std::to_string(train_ids.size()) +
                                    " training tokens give fewer than 2 rows at batch size " +
                                    std::to_string(B));
  const auto data = data::batchify(train_ids, B).to(runkit::device_of(*model));  // (N, B)
  const int64_t n = data.size(0);
  int64_t segments = (n - 1 + bptt - 1) / bptt;
  if (options.stats_tokens() > 0)
    segments = std::min(segments, (options.stats_tokens() + B * bptt - 1) / (B * bptt));

  model->eval();  // no dropout: the statistics of the model that will be evaluated
  const auto params = model->parameters();
  std::vector<torch::Tensor> sum_sq;
  for (const auto& p : params)
    sum_sq.push_back(torch::zeros(p.sizes(), p.options().dtype(torch::kDouble)));
  auto state = model->zero_state(B);
  GradientStats stats;
  double loss_sum = 0;
  for (int64_t s = 0; s < segments; ++s) {
    auto [x, y] = data::get_batch(data, s * bptt, bptt);  // (len, B)
    model->zero_grad();
    auto out = model->forward(x, state);
    const auto loss = model->loss(out.output, y.reshape({-1}));
    loss.backward();
    {
      torch::NoGradGuard no_grad;
      for (size_t k = 0; k < params.size(); ++k) {
        const auto& g = params[k].grad();
        if (!g.defined()) continue;  // a parameter the loss does not reach: g = 0
        const auto g64 = g.to(torch::kDouble);
        sum_sq[k].addcmul_(g64, g64);
      }
    }
    const int64_t len = x.size(0);
    loss_sum += loss.item<double>() * static_cast<double>(len * B);
    stats.tokens += len * B;
    ++stats.batches;
    state = detach_state(out.state);
    if (progress) progress(s + 1, segments, stats.tokens);
  }
  model->zero_grad(/*set_to_none=*/true);

  // MS_p = sqrt(mean_k g_{p,k}^2); decay rates are normalised by the mean of MS over every
  // element of every parameter (Krause et al. 2017, sec. 5; docs/protocol.md "Dynamic evaluation").
  double ms_sum = 0;
  int64_t elements = 0;
  for (auto& acc : sum_sq) {
    stats.ms.push_back(acc.div_(static_cast<double>(stats.batches)).sqrt_());
    ms_sum += stats.ms.back().sum().item<double>();
    elements += acc.numel();
  }
  stats.mean_ms = ms_sum / static_cast<double>(elements);
  stats.mean_loss = loss_sum / static_cast<double>(stats.tokens);
  if (!(stats.mean_ms > 0) || !std::isfinite(stats.mean_ms))
    throw InputError::described("", "mean(MS)",
                                "gradient statistics: mean(MS) over " + std::to_string(elements) +
                                    " weights and " + std::to_string(stats.batches) +
                                    " batches is " + c10::str(stats.mean_ms) + " (mean loss " +
                                    c10::str(stats.mean_loss) + "); need a finite value > 0");
  return stats;
}

std::vector<torch::Tensor> decay_rates(const GradientStats& stats, double lambda) {
  if (!(lambda >= 0) || !std::isfinite(lambda))
    throw OptionError::described(
        "lambda", "decay_rates: lambda must be >= 0 and finite, got " + c10::str(lambda));
  std::vector<torch::Tensor> rates;
  for (const auto& ms : stats.ms) {
    auto rate = ms / stats.mean_ms;
    // Clipped at 1 / lambda so that lambda * rate <= 1: the decay step never overshoots W0
    // (Krause et al. 2017, sec. 5).
    if (lambda > 0) rate.clamp_max_(1 / lambda);
    rates.push_back(rate);
  }
  return rates;
}

double static_evaluate(AwdLstm& model, const std::vector<int64_t>& ids, int64_t bptt,
                       const runkit::ProgressFn& progress) {
  if (ids.size() < 2)
    throw OptionError::described(
        "ids", "static evaluation: need at least 2 tokens, got " + std::to_string(ids.size()));
  return evaluate(model, data::batchify(ids, /*batch_size=*/1), bptt, progress);
}

double dynamic_evaluate(AwdLstm& model, const std::vector<int64_t>& ids, const GradientStats& stats,
                        const DynamicEvalOptions& options, const runkit::ProgressFn& progress) {
  validate(options);
  if (ids.size() < 2)
    throw OptionError::described(
        "ids", "dynamic evaluation: need at least 2 tokens, got " + std::to_string(ids.size()));
  const auto params = model->parameters();
  // internal: run_dyneval takes the statistics from gradient_statistics() of this same model.
  if (stats.ms.size() != params.size())
    throw std::logic_error("dynamic evaluation: gradient statistics for " +
                           std::to_string(stats.ms.size()) + " parameters, the model has " +
                           std::to_string(params.size()));
  for (size_t k = 0; k < params.size(); ++k)
    // internal: as above, one MS tensor of each parameter's shape, in the same order.
    if (stats.ms[k].sizes() != params[k].sizes())
      throw std::logic_error("dynamic evaluation: parameter " + std::to_string(k) + " has shape " +
                             c10::str(params[k].sizes()) + ", its gradient statistics " +
                             c10::str(stats.ms[k].sizes()));
  // Per-parameter factors of the update, in the parameter's dtype: lambda * decrate and
  // lr / (MS + eps).
  const auto rates = decay_rates(stats, options.lambda());
  std::vector<torch::Tensor> decay, step_scale;
  for (size_t k = 0; k < params.size(); ++k) {
    decay.push_back((rates[k] * options.lambda()).to(params[k].scalar_type()));
    step_scale.push_back(
        (options.lr() / (stats.ms[k] + options.eps())).to(params[k].scalar_type()));
  }

  const RestoreWeights restore(model, params);  // W0, put back on every way out
  const auto& w0 = restore.w0();
  model->eval();
  const auto data = data::batchify(ids, /*batch_size=*/1).to(runkit::device_of(*model));  // (N, 1)
  const int64_t n = data.size(0), bptt = options.bptt();
  const int64_t segments = (n - 1 + bptt - 1) / bptt;
  auto state = model->zero_state(1);
  double total = 0;
  int64_t tokens = 0, done = 0;
  for (int64_t i = 0; i < n - 1; i += bptt) {
    auto [x, y] = data::get_batch(data, i, bptt);  // (len, 1)
    model->zero_grad();
    auto out = model->forward(x, state);
    const auto loss = model->loss(out.output, y.reshape({-1}));
    // Scored before the update: the segment is predicted from the previous segments only.
    const double value = loss.item<double>();
    if (!std::isfinite(value)) return std::numeric_limits<double>::infinity();
    const int64_t len = x.size(0);
    total += value * static_cast<double>(len);
    tokens += len;
    loss.backward();
    {
      // W <- W - lr * g / (MS + eps) + lambda * decrate * (W0 - W)  (Krause et al. 2017, sec. 5:
      // RMS-normalised step and the global prior pulling back to the trained weights).
      torch::NoGradGuard no_grad;
      for (size_t k = 0; k < params.size(); ++k) {
        auto w = params[k];
        auto step = (w0[k] - w).mul_(decay[k]);
        const auto& g = w.grad();
        if (g.defined()) step.addcmul_(g, step_scale[k], /*value=*/-1);
        w.add_(step);
      }
    }
    state = detach_state(out.state);
    if (progress) progress(++done, segments, tokens);
  }
  return total / static_cast<double>(tokens);
}

GridSearchResult grid_search(AwdLstm& model, const std::vector<int64_t>& ids,
                             const GradientStats& stats, const DynamicEvalOptions& base,
                             const std::vector<double>& lrs, const std::vector<double>& lambdas,
                             const std::function<void(const GridPoint&)>& on_point,
                             const std::function<runkit::ProgressFn(double, double)>& progress_of) {
  if (lrs.empty() || lambdas.empty())
    throw OptionError::described(lrs.empty() ? "lrs" : "lambdas",
                                 "grid search: needs at least one lr and one lambda, got " +
                                     std::to_string(lrs.size()) + " x " +
                                     std::to_string(lambdas.size()));
  for (double lr : lrs) validate(DynamicEvalOptions(base).lr(lr));
  for (double lambda : lambdas) validate(DynamicEvalOptions(base).lambda(lambda));
  GridSearchResult result;
  result.best.loss = std::numeric_limits<double>::infinity();
  for (double lr : lrs) {
    for (double lambda : lambdas) {
      const auto options = DynamicEvalOptions(base).lr(lr).lambda(lambda);
      const GridPoint point{
          lr, lambda,
          dynamic_evaluate(model, ids, stats, options,
                           progress_of ? progress_of(lr, lambda) : runkit::ProgressFn{})};
      result.points.push_back(point);
      if (on_point) on_point(point);
      if (point.loss < result.best.loss) result.best = point;  // strict: the first equal wins
    }
  }
  if (!std::isfinite(result.best.loss))
    throw OptionError::described("lrs", "grid search: every one of the " +
                                            std::to_string(result.points.size()) +
                                            " grid points diverged (non-finite loss)");
  return result;
}

}  // namespace sb::lm
