#include "trainers/fit/fit_logprob.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>

#include "common/errors.h"
#include "trainers/heads/output_head.h"

namespace sb::fit {

namespace {

/// The `words` most frequent ids of a count vector, ties by smaller id.
std::vector<int64_t> most_frequent(const std::vector<double>& count, int64_t words) {
  std::vector<int64_t> order(count.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return count[static_cast<size_t>(a)] > count[static_cast<size_t>(b)];
  });
  order.resize(static_cast<size_t>(words));
  return order;
}

/// p (C, vocab) -> (C, words + 1): the kept columns in `kept`'s order, then the rest's sum.
torch::Tensor merge_rare(const torch::Tensor& p, const std::vector<int64_t>& kept) {
  auto index = torch::tensor(kept, torch::kInt64);
  auto top = p.index_select(/*dim=*/1, index);  // (C, words)
  // The rest summed over its columns (not 1 - sum(top)): its relative precision when it is small.
  auto mask = torch::ones({p.size(1)}, torch::kBool);
  mask.index_fill_(/*dim=*/0, index, false);
  auto rest = p.index({torch::indexing::Slice(), mask}).sum(/*dim=*/1);  // (C)
  return torch::cat({top, rest.unsqueeze(1)}, /*dim=*/1);
}

}  // namespace

Target bigram_target(const std::vector<int64_t>& tokens, int64_t vocab, int64_t contexts,
                     double beta, int64_t words) {
  if (tokens.size() < 2)
    throw InputError::described("", "tokens", "bigram_target: fewer than 2 tokens");
  if (contexts < 1 || contexts > vocab)
    throw OptionError::described("contexts", "bigram_target: contexts must be in [1, " +
                                                 std::to_string(vocab) + "], got " +
                                                 std::to_string(contexts));
  if (!(beta > 0)) throw OptionError::described("beta", "bigram_target: beta must be > 0");
  if (words < 0)
    throw OptionError::described("words", "bigram_target: words must be >= 0 (0 = all)");
  std::vector<int64_t> as_context(static_cast<size_t>(vocab), 0);
  std::vector<double> unigram(static_cast<size_t>(vocab), 1.0);  // add-one
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int64_t w = tokens[i];
    if (w < 0 || w >= vocab)
      throw InputError::described("", "tokens", "bigram_target: token id out of range");
    unigram[static_cast<size_t>(w)] += 1.0;
    if (i + 1 < tokens.size()) ++as_context[static_cast<size_t>(w)];
  }
  // The most frequent previous words, ties by smaller id (deterministic).
  const auto order =
      most_frequent(std::vector<double>(as_context.begin(), as_context.end()), contexts);
  std::vector<int64_t> row_of(static_cast<size_t>(vocab), -1);
  for (int64_t r = 0; r < contexts; ++r)
    row_of[static_cast<size_t>(order[static_cast<size_t>(r)])] = r;

  auto counts = torch::zeros({contexts, vocab}, torch::kFloat64);  // (C, M)
  auto c = counts.accessor<double, 2>();
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    const int64_t r = row_of[static_cast<size_t>(tokens[i])];
    if (r >= 0) c[r][tokens[i + 1]] += 1.0;
  }
  auto u = torch::tensor(unigram, torch::kFloat64);
  u = u / u.sum();                                           // (M)
  auto n_c = counts.sum(/*dim=*/1, /*keepdim=*/true);        // (C, 1)
  auto p = (counts + beta * u.unsqueeze(0)) / (n_c + beta);  // (C, vocab)
  const bool merged = words > 0 && words < vocab;
  if (merged) p = merge_rare(p, most_frequent(unigram, words));  // (C, words + 1)
  Target t;
  t.log_p = p.log();
  t.weight = n_c.squeeze(1) / n_c.sum();
  std::ostringstream what;
  what << "smoothed bigram P*(w | previous word) of the " << contexts
       << " most frequent contexts, beta = " << beta;
  if (merged) what << ", the " << words << " most frequent words and the rest as one outcome";
  t.what = what.str();
  return t;
}

Target low_rank_target(int64_t contexts, int64_t vocab, int64_t r, double scale, uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  auto a = at::randn({contexts, r}, gen, torch::kFloat64);
  auto b = at::randn({vocab, r}, gen, torch::kFloat64);
  auto c = at::randn({vocab}, gen, torch::kFloat64);
  Target t;
  t.log_p = torch::log_softmax(scale * a.matmul(b.t()) + c, /*dim=*/1);  // (C, M)
  t.weight = torch::full({contexts}, 1.0 / static_cast<double>(contexts), torch::kFloat64);
  t.what = "softmax of a rank-" + std::to_string(r) + " logit matrix";
  return t;
}

double weighted_kl(const Target& target, const torch::Tensor& log_q) {
  auto p = target.log_p.exp();
  auto per_context = (p * (target.log_p - log_q.to(torch::kFloat64))).sum(/*dim=*/1);  // (C)
  return (target.weight * per_context).sum().item<double>();
}

double weighted_entropy(const Target& target) {
  return -(target.weight * (target.log_p.exp() * target.log_p).sum(/*dim=*/1)).sum().item<double>();
}

Rank numerical_rank(const torch::Tensor& matrix) {
  auto m = matrix.to(torch::kFloat64);
  auto s = at::linalg_svdvals(m);
  Rank r;
  r.sigma_max = s.numel() ? s.max().item<double>() : 0.0;
  r.tol = 0.5 * std::sqrt(static_cast<double>(m.size(0) + m.size(1) + 1)) * r.sigma_max *
          std::numeric_limits<double>::epsilon();
  r.rank = (s > r.tol).sum().item<int64_t>();
  return r;
}

namespace {

// Free contexts, a decoder and the head: the whole model of the fit.
struct Model : torch::nn::Module {
  torch::Tensor contexts, weight, bias;  // (C, d), (M, d), (M) or undefined
  heads::OutputHead head{nullptr};

  Model(const Target& t, const FitOptions& o) {
    const int64_t C = t.log_p.size(0), M = t.log_p.size(1);
    contexts = register_parameter("contexts", torch::randn({C, o.d}) * 0.5);
    weight = register_parameter("weight", torch::randn({M, o.d}) / std::sqrt(double(o.d)));
    if (o.bias) {
      // g:sigmoid starts from b = -log M, as the profiles do (README, "Why g:sigmoid lags"):
      // from b = 0 its normaliser starts at M / 2.
      const double b0 = o.spec.kind == HeadKind::sigmoid ? -std::log(double(M)) : 0.0;
      bias = register_parameter("bias", torch::full({M}, b0));
    }
    head = register_module("head",
                           heads::OutputHead(heads::OutputHeadOptions(o.spec, /*input_size=*/o.d,
                                                                      /*embedding_size=*/o.d)
                                                 .vocab_size(M)));
  }

  torch::Tensor log_q() { return head->forward(contexts, weight, bias); }  // (C, M)
};

}  // namespace

WindowStep window_step(double decrease, double kl, int& plateaus, const FitOptions& o) {
  const double tol = o.rel_tol * std::abs(kl) + o.abs_tol;
  if (decrease <= -tol) return WindowStep::halve;  // a rise: the step overshoots, not a plateau
  if (decrease >= tol) return WindowStep::keep;
  if (plateaus == o.lr_halvings) return WindowStep::converged;
  ++plateaus;
  return WindowStep::halve;
}

FitResult fit(const Target& target, const FitOptions& o) {
  if (o.d < 1) throw OptionError::described("d", "fit: d must be >= 1");
  if (is_adaptive(o.spec))
    throw OptionError::described("head", "fit: the adaptive heads are not fitted");
  torch::manual_seed(o.seed);
  Model model(target, o);
  const auto p = target.log_p.exp().to(torch::kFloat32);  // (C, M)
  const auto w = target.weight.to(torch::kFloat32);       // (C)
  torch::optim::Adam opt(model.parameters(), torch::optim::AdamOptions(o.lr));
  const double entropy = weighted_entropy(target);  // loss - entropy: the KL the test watches
  double lr = o.lr, window_start = std::numeric_limits<double>::infinity();
  int plateaus = 0;
  FitResult r;
  for (const auto& t : model.parameters()) r.parameters += t.numel();
  for (r.steps = 1; r.steps <= o.max_steps; ++r.steps) {
    opt.zero_grad();
    // The weighted cross-entropy: KL plus the target's (constant) entropy.
    auto loss = -(w * (p * model.log_q()).sum(/*dim=*/1)).sum();
    loss.backward();
    opt.step();
    if (r.steps % o.check_every != 0) continue;
    const double kl = loss.item<double>() - entropy;
    const double decrease = window_start - kl;
    r.last_rel_change = decrease / std::max(std::abs(kl), 1e-12);
    window_start = kl;
    if (o.progress) o.progress(r.steps, kl);
    const WindowStep step = window_step(decrease, kl, plateaus, o);
    if (step == WindowStep::converged) {
      r.converged = true;
      break;
    }
    if (step == WindowStep::halve) {
      lr *= 0.5;
      for (auto& group : opt.param_groups())
        static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
    }
  }
  r.steps = std::min(r.steps, o.max_steps);
  torch::NoGradGuard no_grad;
  model.to(torch::kFloat64);  // the fitted function itself, without float32 rounding
  r.log_q = model.log_q();
  r.kl = weighted_kl(target, r.log_q);
  return r;
}

}  // namespace sb::fit
