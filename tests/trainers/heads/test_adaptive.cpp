// The adaptive heads (trainers/heads/adaptive.h): every row normalises, the training loss (target
// clusters only) equals the NLL of the assembled log-probabilities, gradients match central
// finite differences, the assembly matches a float64 re-computation from the definition, and
// cutoffs that do not fit M are refused in one line.

#include <catch2/catch.hpp>

#include "tests/fixtures/head_test_helpers.h"
#include "trainers/heads/adaptive.h"
#include "trainers/heads/output_head.h"

using namespace sb;
using sb::test::f64;
using sb::test::max_abs;

namespace {

struct Setup {
  heads::OutputHead head{nullptr};
  torch::Tensor hidden, weight, bias, targets;
};

// M = 60 words in a head of 12 and tails [12, 30), [30, 60); d = 16 (d_1 = 4, d_2 = 1).
Setup make(const std::string& spec, bool bias, int64_t n = 24, uint64_t seed = 5) {
  torch::manual_seed(seed);
  const int64_t M = 60, d = 16;
  Setup s;
  s.head = heads::OutputHead(
      heads::OutputHeadOptions(HeadSpec::parse(spec), d, d).vocab_size(M).decoder_bias(bias));
  s.head->to(torch::kFloat64);
  // Larger tail parameters than the initialisation, so the tail terms are not negligible.
  torch::NoGradGuard no_grad;
  for (auto& p : s.head->adaptive->parameters()) p.normal_(0, 0.7);
  s.hidden = torch::randn({n, d}, f64());
  s.weight = torch::randn({M, d}, f64()) * 0.5;
  s.bias = bias ? torch::randn({M}, f64()) : torch::Tensor();
  // Targets in every cluster: 0..59 cycled.
  s.targets = torch::arange(n, torch::kLong).remainder(M).mul(7).remainder(M);
  return s;
}

// log p from the definition, in probabilities and float64: p(w) = g(z_0)[w] for head words,
// g(z_0)[c_1 + i - 1] g(U_i P_i h + b[V_i])[w - c_i] for tail words.
torch::Tensor reference(heads::AdaptiveImpl& a, const torch::Tensor& h, const torch::Tensor& w,
                        const torch::Tensor& b, bool sig) {
  auto g = [sig](const torch::Tensor& z) {  // (N, K) -> probabilities
    const auto e = sig ? z.exp() * z.sigmoid() : z.exp();
    return e / e.sum(/*dim=*/1, /*keepdim=*/true);
  };
  const auto& c = a.options.cutoffs();
  const int64_t c1 = c.front(), M = a.options.vocab_size();
  auto z0 = h.matmul(w.narrow(0, 0, c1).t());
  if (b.defined()) z0 = z0 + b.narrow(0, 0, c1);
  auto zc = h.matmul(a.cluster_weight.t());
  if (a.cluster_bias.defined()) zc = zc + a.cluster_bias;
  const auto p0 = g(torch::cat({z0, zc}, 1));
  auto out = torch::empty({h.size(0), M}, f64());
  out.narrow(1, 0, c1).copy_(p0.narrow(1, 0, c1));
  for (size_t i = 0; i < c.size(); ++i) {
    const int64_t end = i + 1 < c.size() ? c[i + 1] : M;
    auto zi = h.matmul(a.projection[i].t()).matmul(a.output[i].t());
    if (b.defined()) zi = zi + b.narrow(0, c[i], end - c[i]);  // the decoder bias of its words
    const auto pi = g(zi);
    out.narrow(1, c[i], end - c[i]).copy_(p0.narrow(1, c1 + int64_t(i), 1) * pi);
  }
  return out.log();
}

}  // namespace

TEST_CASE(
    "adaptive heads: every row's log-probabilities normalise and match the definition "
    "re-computed in float64") {
  for (const std::string spec : {"adaptive:cutoffs=12,30", "adaptive_sigsoftmax:cutoffs=12,30"})
    for (const bool bias : {true, false}) {
      auto s = make(spec, bias);
      torch::NoGradGuard no_grad;
      const auto log_p = s.head->forward(s.hidden, s.weight, s.bias);  // (N, M)
      REQUIRE(log_p.sizes() == torch::IntArrayRef({24, 60}));
      // float64 sums of 60 terms: 1e-12.
      CHECK(max_abs(log_p.logsumexp(/*dim=*/1)) < 1e-12);
      const auto expected = reference(*s.head->adaptive, s.hidden, s.weight, s.bias,
                                      spec.rfind("adaptive_sigsoftmax", 0) == 0);
      // The same float64 formula in another order (log-domain vs probabilities): 1e-12.
      CHECK(max_abs(log_p - expected) < 1e-12);
    }
}

TEST_CASE(
    "adaptive heads: the training loss over the target clusters equals the NLL of the "
    "assembled log-probabilities") {
  for (const std::string spec :
       {"adaptive:cutoffs=12,30", "adaptive_sigsoftmax:cutoffs=12,30", "adaptive:cutoffs=5"}) {
    auto s = make(spec, /*bias=*/true, /*n=*/40);
    torch::NoGradGuard no_grad;
    const double loss = s.head->loss(s.hidden, s.weight, s.bias, s.targets).item<double>();
    const auto log_p = s.head->forward(s.hidden, s.weight, s.bias);
    const double nll = -log_p.gather(1, s.targets.unsqueeze(1)).mean().item<double>();
    // Both float64, the same terms summed in another order: 1e-12 relative.
    CHECK(std::abs(loss - nll) < 1e-12 * std::abs(nll));
  }
}

TEST_CASE("adaptive heads: gradients of the training loss match central finite differences") {
  for (const std::string spec : {"adaptive:cutoffs=12,30", "adaptive_sigsoftmax:cutoffs=12,30"}) {
    auto s = make(spec, /*bias=*/true, /*n=*/10);
    auto& a = *s.head->adaptive;
    // Every tensor the loss depends on: the hidden vectors, the decoder and the head's own.
    std::vector<torch::Tensor*> inputs{&s.hidden,         &s.weight,       &s.bias,
                                       &a.cluster_weight, &a.cluster_bias, &a.projection[0],
                                       &a.projection[1],  &a.output[0],    &a.output[1]};
    for (torch::Tensor* x : inputs) x->requires_grad_(true);
    s.head->loss(s.hidden, s.weight, s.bias, s.targets).backward();
    for (torch::Tensor* x : inputs) {
      const auto saved = x->detach().clone();
      auto loss_at = [&](const torch::Tensor& value) {
        torch::NoGradGuard no_grad;
        x->detach().copy_(value);
        const double l = s.head->loss(s.hidden, s.weight, s.bias, s.targets).item<double>();
        x->detach().copy_(saved);
        return l;
      };
      const auto numeric = test::finite_difference_grad(loss_at, saved);
      // Central differences with h = 1e-6 on a smooth loss of size ~5: truncation ~h^2 f''' and
      // rounding ~1e-16 / h, both below 1e-7.
      REQUIRE(x->grad().defined());
      CHECK(max_abs(x->grad() - numeric) < 1e-7);
    }
  }
}

TEST_CASE(
    "adaptive heads: the tail projections shrink by div per cluster and only the target's "
    "cluster is evaluated in training") {
  auto s = make("adaptive:cutoffs=12,30,45,div=2", /*bias=*/false);
  auto& a = *s.head->adaptive;
  CHECK(a.tail_dim(0) == 8);  // 16 / 2
  CHECK(a.tail_dim(1) == 4);  // 16 / 4
  CHECK(a.tail_dim(2) == 2);  // 16 / 8
  CHECK_FALSE(a.cluster_bias.defined());
  // Targets all in the head cluster: the tail parameters get no gradient at all.
  const auto head_targets = torch::arange(10, torch::kLong);
  s.head->loss(s.hidden.narrow(0, 0, 10), s.weight, s.bias, head_targets).backward();
  for (const auto& p : a.output) CHECK_FALSE(p.grad().defined());
  CHECK(a.cluster_weight.grad().defined());
}

TEST_CASE(
    "adaptive heads: cutoffs that are not increasing or do not fit M are refused in one "
    "line") {
  CHECK_THROWS_WITH(HeadSpec::parse("adaptive:cutoffs=30,12"),
                    Catch::Contains("cutoffs must be increasing"));
  CHECK_THROWS_WITH(HeadSpec::parse("adaptive:cutoffs=0,12"),
                    Catch::Contains("cutoffs must be increasing"));
  CHECK_THROWS_WITH(HeadSpec::parse("adaptive:cutoffs=12,x"), Catch::Contains("not an integer"));
  CHECK_THROWS_WITH(HeadSpec::parse("adaptive:div=0.5"), Catch::Contains("div must be >= 1"));
  CHECK_THROWS_WITH(
      heads::OutputHead(heads::OutputHeadOptions(HeadSpec::parse("adaptive:cutoffs=12,60"), 16, 16)
                            .vocab_size(60)),
      Catch::Contains("the last cutoff 60 is not below the M = 60"));
  CHECK_THROWS_WITH(
      heads::OutputHead(heads::OutputHeadOptions(HeadSpec::parse("adaptive"), 16, 16)),
      Catch::Contains("needs the vocabulary size"));
  auto s = make("adaptive:cutoffs=12,30", /*bias=*/true, /*n=*/4);
  CHECK_THROWS_WITH(s.head->loss(s.hidden, s.weight, s.bias, torch::full({4}, 60, torch::kLong)),
                    Catch::Contains("targets must lie in [0, 60)"));
}
