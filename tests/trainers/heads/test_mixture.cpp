// MoS / MoSS against explicit mixtures computed from the definitions in float64.

#include <catch2/catch.hpp>

#include "tests/fixtures/head_test_helpers.h"
#include "trainers/heads/mixture.h"
#include "trainers/heads/output_head.h"

using namespace sb;
using sb::test::f64;

namespace {

// P = sum_k pi_k f_k with pi = g-normalised prior logits and f_k = g-normalised expert logits,
// g = exp (MoS) or exp * sigmoid (MoSS), evaluated naively: no logs at all.
torch::Tensor explicit_mixture(heads::MixtureImpl& mix, const torch::Tensor& h,
                               const torch::Tensor& w, const torch::Tensor& b, bool sig) {
  auto g = [&](const torch::Tensor& x) {
    const auto e = sig ? x.exp() * x.sigmoid() : x.exp();
    return e / e.sum(-1, true);
  };
  const int64_t n = h.size(0), k = mix.options.experts(), d = mix.options.embedding_size();
  const auto pi = g(torch::mm(h, mix.prior->weight.t()));  // (N, K)
  const auto ctx = torch::tanh(torch::addmm(mix.latent->bias, h, mix.latent->weight.t()));
  const auto f = g(torch::addmm(b, ctx.reshape({n * k, d}), w.t())).reshape({n, k, -1});
  return (pi.unsqueeze(-1) * f).sum(1);  // (N, M)
}

}  // namespace

TEST_CASE("MoS and MoSS: log P equals the explicit mixture of their definitions") {
  torch::manual_seed(41);
  const auto h = torch::randn({6, 8}, f64()), w = torch::randn({15, 4}, f64()),
             b = torch::randn({15}, f64());
  for (const bool sig : {false, true}) {
    INFO((sig ? "moss" : "mos"));
    heads::Mixture mix(heads::MixtureOptions(8, 4, 3).sigsoftmax(sig));
    mix->to(torch::kFloat64);
    const auto log_p = mix(h, w, b);
    const auto p = explicit_mixture(*mix, h, w, b, sig);
    CHECK(test::max_abs(log_p - p.log()) < 1e-12);
    CHECK(test::max_abs(log_p.exp().sum(-1) - 1) < 1e-12);
  }
}

TEST_CASE("MoS: no 1e-8 floor, log-probabilities go below log(1e-8)") {
  // The reference MoS code takes log(P + 1e-8), flooring log P at -18.42 (and changing the rank).
  torch::manual_seed(42);
  heads::Mixture mix(heads::MixtureOptions(8, 4, 2));
  mix->to(torch::kFloat64);
  const auto h = torch::randn({4, 8}, f64()), w = torch::randn({50, 4}, f64()) * 30;
  const auto log_p = mix(h, w, torch::Tensor());
  CHECK(log_p.min().item<double>() < std::log(1e-8) - 10);
  CHECK(log_p.isfinite().all().item<bool>());
}

TEST_CASE("OutputHead: mos and moss own their parameters, and K = 1 MoS is softmax of a context") {
  const auto spec = HeadSpec::parse("mos:K=1");
  heads::OutputHead head(heads::OutputHeadOptions(spec, 8, 4));
  head->to(torch::kFloat64);
  CHECK(head->parameters().size() == 3);  // latent weight + bias, prior weight
  torch::manual_seed(43);
  const auto h = torch::randn({5, 8}, f64()), w = torch::randn({11, 4}, f64()),
             b = torch::randn({11}, f64());
  const auto ctx = head->mixture->contexts(h);
  CHECK(test::max_abs(head(h, w, b) - torch::log_softmax(torch::addmm(b, ctx, w.t()), -1)) < 1e-13);
  heads::OutputHead moss(heads::OutputHeadOptions(HeadSpec::parse("moss:K=4"), 8, 4));
  CHECK(moss->mixture->options.sigsoftmax());
  CHECK(moss->mixture->options.experts() == 4);
  CHECK_THROWS_WITH(heads::Mixture(heads::MixtureOptions(8, 0, 2)), Catch::Contains(">= 1"));
}

TEST_CASE(
    "MoS and MoSS: the gathered NLL equals the NLL of the full mixture, values and gradients") {
  // nll() forms only each expert's normaliser and target column; the reference is nll_loss of
  // mix()'s (N, M) log-probabilities, differentiated by autograd. Both float64, so agreement to
  // 1e-12 leaves room only for rounding (the NLLs are O(1), the gradients O(0.1)).
  torch::manual_seed(43);
  const int64_t n = 7, m = 40;
  const auto h = torch::randn({n, 8}, f64());
  const auto targets = torch::randint(m, {n}, torch::kInt64);
  for (const bool sig : {false, true}) {
    INFO((sig ? "moss" : "mos"));
    heads::Mixture mix(heads::MixtureOptions(8, 4, 3).sigsoftmax(sig));
    mix->to(torch::kFloat64);
    const auto w0 = torch::randn({m, 4}, f64()) * 3, b0 = torch::randn({m}, f64());
    std::vector<torch::Tensor> grads[2];
    torch::Tensor values[2];
    for (int way = 0; way < 2; ++way) {
      const auto ctx = mix->contexts(h).detach().requires_grad_();
      const auto prior = mix->prior_logits(h).detach().requires_grad_();
      const auto w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
      values[way] = way == 0 ? mix->nll(ctx, prior, w, b, targets)
                             : torch::nll_loss(mix->mix(ctx, prior, w, b), targets);
      values[way].backward();
      grads[way] = {ctx.grad(), prior.grad(), w.grad(), b.grad()};
    }
    CHECK(std::abs(values[0].item<double>() - values[1].item<double>()) < 1e-12);
    for (size_t i = 0; i < grads[0].size(); ++i) {
      INFO("gradient " << i << " (contexts, prior logits, weight, bias)");
      CHECK(test::max_abs(grads[0][i] - grads[1][i]) < 1e-12);
      CHECK(test::max_abs(grads[1][i]) > 1e-3);  // a real gradient, not two zeros
    }
  }
  heads::Mixture mix(heads::MixtureOptions(8, 4, 3));
  mix->to(torch::kFloat64);
  CHECK_THROWS_WITH(mix->nll(mix->contexts(h), mix->prior_logits(h), torch::randn({m, 4}, f64()),
                             torch::Tensor(), targets.narrow(0, 0, n - 1)),
                    Catch::Contains("Mixture::nll: targets") && Catch::Contains("expected (7)"));
}

TEST_CASE("MoS and MoSS: the float32 training NLL matches its float64 value and gradients") {
  // Training runs nll() in float32 through the fused per-expert kernels (fused_row_nll); the
  // reference is the same loss in float64. Sizes as the cpu profile's model: M = 10000, d = 100,
  // K = 2, logits O(1). Tolerances: the NLL to 1e-5 relative (float32 inputs, float64 row sums);
  // gradients to 1e-4 of their largest entry (float32 f_j and responsibilities, a few ulp each,
  // summed over N = 64 rows in the weight gradient).
  torch::manual_seed(44);
  const int64_t n = 64, m = 10000, d = 100;
  const auto h = torch::randn({n, 60}, f64());
  const auto targets = torch::randint(m, {n}, torch::kInt64);
  for (const bool sig : {false, true}) {
    INFO((sig ? "moss" : "mos"));
    heads::Mixture mix(heads::MixtureOptions(60, d, 2).sigsoftmax(sig));
    mix->to(torch::kFloat64);
    const auto ctx0 = mix->contexts(h).detach(), prior0 = mix->prior_logits(h).detach() * 3;
    const auto w0 = torch::randn({m, d}, f64()) * 0.3, b0 = torch::randn({m}, f64());
    torch::Tensor value[2];
    std::vector<torch::Tensor> grads[2];
    for (int way = 0; way < 2; ++way) {
      const auto dtype = way == 0 ? torch::kFloat64 : torch::kFloat32;
      const auto leaf = [&](const torch::Tensor& x) {
        return x.to(dtype).detach().clone().requires_grad_();
      };
      const auto ctx = leaf(ctx0), prior = leaf(prior0), w = leaf(w0), b = leaf(b0);
      value[way] = mix->nll(ctx, prior, w, b, targets);
      value[way].backward();
      grads[way] = {ctx.grad(), prior.grad(), w.grad(), b.grad()};
    }
    const double v64 = value[0].item<double>(), v32 = value[1].item<double>();
    CHECK(std::abs(v32 - v64) < 1e-5 * v64);
    for (size_t i = 0; i < grads[0].size(); ++i) {
      INFO("gradient " << i << " (contexts, prior logits, weight, bias)");
      const double scale = test::max_abs(grads[0][i]);
      CHECK(scale > 1e-4);
      CHECK(test::max_abs(grads[1][i].to(torch::kFloat64) - grads[0][i]) < 1e-4 * scale);
    }
  }
}

TEST_CASE("MoS and MoSS without the latent bias: contexts are tanh(W_h h), two parameters") {
  torch::manual_seed(45);
  heads::Mixture mix(heads::MixtureOptions(8, 4, 3).latent_bias(false));
  mix->to(torch::kFloat64);
  CHECK_FALSE(mix->latent->bias.defined());
  CHECK(mix->parameters().size() == 2);  // W_h and W_pi
  const auto h = torch::randn({5, 8}, f64());
  CHECK(test::max_abs(mix->contexts(h) - torch::tanh(torch::mm(h, mix->latent->weight.t()))) <
        1e-15);
  heads::OutputHead head(
      heads::OutputHeadOptions(HeadSpec::parse("moss:K=2"), 8, 4).latent_bias(false));
  CHECK_FALSE(head->mixture->latent->bias.defined());
}
