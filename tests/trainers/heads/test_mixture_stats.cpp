// The mixture diagnostics (trainers/heads/mixture_stats.h) on constructed priors and experts whose
// entropies and divergences have closed forms. Everything is float64: the checks allow 1e-12 for
// rounding of sums of O(1) terms over at most a few hundred entries.

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "tests/fixtures/head_test_helpers.h"
#include "trainers/heads/mixture.h"
#include "trainers/heads/mixture_stats.h"

using namespace sb;
using sb::test::f64;

namespace {

constexpr double kTol = 1e-12;
const double kNegInf = -std::numeric_limits<double>::infinity();

/// log of a row-normalised tensor of positive weights, along the last dimension.
torch::Tensor log_normalised(const torch::Tensor& w) { return (w / w.sum(-1, true)).log(); }

/// -sum p log p of one probability vector, terms with p = 0 dropped.
double entropy(const std::vector<double>& p) {
  double h = 0;
  for (const double x : p)
    if (x > 0) h -= x * std::log(x);
  return h;
}

}  // namespace

TEST_CASE("mixture stats: a uniform prior has entropy log K, for each context and on average") {
  torch::manual_seed(5);
  for (const int64_t k : {2, 3, 15}) {
    INFO("K = " << k);
    const int64_t n = 9, m = 20;
    const auto log_pi = torch::full({n, k}, -std::log(static_cast<double>(k)), f64());
    const auto log_f = log_normalised(torch::rand({n, k, m}, f64()) + 0.1);
    heads::MixtureStatsAccumulator acc;
    acc.add(log_pi, log_f);
    const auto s = acc.result();
    CHECK(s.contexts == n);
    CHECK(s.experts == k);
    CHECK(std::abs(s.prior_entropy - std::log(static_cast<double>(k))) < kTol);
    CHECK(std::abs(s.mean_prior_entropy - std::log(static_cast<double>(k))) < kTol);
    CHECK(s.max_prior_entropy == Approx(std::log(static_cast<double>(k))).epsilon(1e-15));
    // Random experts disagree: strictly between 0 and H(pi) = log K.
    CHECK(s.disagreement > 1e-3);
    CHECK(s.disagreement < std::log(static_cast<double>(k)));
  }
}

TEST_CASE("mixture stats: identical experts have disagreement 0, whatever the prior") {
  torch::manual_seed(6);
  const int64_t n = 7, k = 4, m = 30;
  const auto log_pi = log_normalised(torch::rand({n, k}, f64()) + 0.05);
  const auto one = log_normalised(torch::rand({n, 1, m}, f64()) + 0.01);
  heads::MixtureStatsAccumulator acc;
  acc.add(log_pi, one.expand({n, k, m}));
  const auto s = acc.result();
  CHECK(std::abs(s.disagreement) < kTol);
  CHECK(s.prior_entropy > 0.1);  // the prior is spread: only the experts' agreement gives 0
}

TEST_CASE(
    "mixture stats: a collapsed prior has both entropies 0, one expert per context only the "
    "first") {
  const int64_t n = 6, k = 2, m = 5;
  torch::manual_seed(7);
  const auto log_f = log_normalised(torch::rand({n, k, m}, f64()) + 0.1);
  // Every context on expert 0 (pi = (1, 0) exactly: log pi = (0, -inf)).
  auto collapsed = torch::full({n, k}, kNegInf, f64());
  collapsed.select(/*dim=*/1, 0).fill_(0);
  heads::MixtureStatsAccumulator acc;
  acc.add(collapsed, log_f);
  auto s = acc.result();
  CHECK(std::abs(s.prior_entropy) < kTol);
  CHECK(std::abs(s.mean_prior_entropy) < kTol);
  CHECK(std::abs(s.disagreement) < kTol);  // a one-hot prior: P is that expert, KL(f || f) = 0
  CHECK(std::isfinite(s.disagreement));
  // Half the contexts on expert 0, half on expert 1: each context certain, the mean prior uniform.
  auto split = collapsed.clone();
  split.slice(/*dim=*/0, n / 2, n).select(/*dim=*/1, 0).fill_(kNegInf);
  split.slice(/*dim=*/0, n / 2, n).select(/*dim=*/1, 1).fill_(0);
  heads::MixtureStatsAccumulator acc2;
  acc2.add(split, log_f);
  s = acc2.result();
  CHECK(std::abs(s.prior_entropy) < kTol);
  CHECK(std::abs(s.mean_prior_entropy - std::log(2.0)) < kTol);
}

TEST_CASE("mixture stats: the disagreement equals H(P) - sum_k pi_k H(f_k) in closed form") {
  // K = 2 experts over M = 2 words: f1 = (a, 1 - a), f2 = (b, 1 - b), pi = (p, 1 - p). The library
  // sums pi_k KL(f_k || P); the reference is the entropy form of the same Jensen-Shannon
  // divergence, computed here in scalars.
  const double cases[][3] = {{0.3, 0.9, 0.2}, {0.5, 0.5, 0.99}, {0.05, 0.7, 0.6}, {0.8, 0.1, 0.5}};
  for (const auto& c : cases) {
    const double p = c[0], a = c[1], b = c[2];
    INFO("p = " << p << ", a = " << a << ", b = " << b);
    const auto log_pi = torch::tensor({std::log(p), std::log(1 - p)}, f64()).view({1, 2});
    const auto log_f =
        torch::tensor({std::log(a), std::log(1 - a), std::log(b), std::log(1 - b)}, f64())
            .view({1, 2, 2});
    heads::MixtureStatsAccumulator acc;
    acc.add(log_pi, log_f);
    const auto s = acc.result();
    const double pa = p * a + (1 - p) * b;
    const double js =
        entropy({pa, 1 - pa}) - p * entropy({a, 1 - a}) - (1 - p) * entropy({b, 1 - b});
    CHECK(std::abs(s.disagreement - js) < kTol);
    CHECK(std::abs(s.prior_entropy - entropy({p, 1 - p})) < kTol);
  }
  // Experts with disjoint supports under a uniform prior: the disagreement reaches H(pi) = log 2.
  const auto log_pi = torch::full({1, 2}, -std::log(2.0), f64());
  const auto log_f = torch::tensor({0.0, kNegInf, kNegInf, 0.0}, f64()).view({1, 2, 2});
  heads::MixtureStatsAccumulator acc;
  acc.add(log_pi, log_f);
  CHECK(std::abs(acc.result().disagreement - std::log(2.0)) < kTol);
}

TEST_CASE("mixture stats: batches added one by one give the statistics of all contexts at once") {
  torch::manual_seed(8);
  const int64_t n = 10, k = 3, m = 12;
  const auto log_pi = log_normalised(torch::rand({n, k}, f64()) + 0.05);
  const auto log_f = log_normalised(torch::rand({n, k, m}, f64()) + 0.05);
  heads::MixtureStatsAccumulator whole, parts;
  whole.add(log_pi, log_f);
  parts.add(log_pi.slice(0, 0, 3), log_f.slice(0, 0, 3));
  parts.add(log_pi.slice(0, 3, n), log_f.slice(0, 3, n));
  const auto a = whole.result(), b = parts.result();
  CHECK(a.contexts == b.contexts);
  CHECK(std::abs(a.prior_entropy - b.prior_entropy) < kTol);
  CHECK(std::abs(a.mean_prior_entropy - b.mean_prior_entropy) < kTol);
  CHECK(std::abs(a.disagreement - b.disagreement) < kTol);
  // The mean prior's entropy is at least the mean entropy (concavity of H): 0.1 apart here.
  CHECK(a.mean_prior_entropy >= a.prior_entropy);
  CHECK_THROWS_WITH(parts.add(log_pi.slice(1, 0, 2), log_f.slice(1, 0, 2)),
                    Catch::Contains("K = 2 after batches with K = 3"));
  CHECK_THROWS_WITH(whole.add(log_pi, log_f.slice(0, 0, 4)),
                    Catch::Contains("(N, K) and (N, K, M)"));
}

TEST_CASE("mixture stats: MoS components recombine to mix(), and its statistics lie in range") {
  // components() is what the trainer's statistics read; logsumexp over K of log pi + log f must be
  // mix() itself (the same float64 ops: 1e-13).
  torch::manual_seed(9);
  heads::Mixture mix(heads::MixtureOptions(8, 4, 3));
  mix->to(torch::kFloat64);
  const auto h = torch::randn({6, 8}, f64()), w = torch::randn({15, 4}, f64()) * 2,
             b = torch::randn({15}, f64());
  const auto ctx = mix->contexts(h), prior = mix->prior_logits(h);
  const auto [log_pi, log_f] = mix->components(ctx, prior, w, b);
  CHECK(log_pi.sizes() == at::IntArrayRef({6, 3}));
  CHECK(log_f.sizes() == at::IntArrayRef({6, 3, 15}));
  CHECK(test::max_abs((log_f + log_pi.unsqueeze(-1)).logsumexp(1) - mix->mix(ctx, prior, w, b)) <
        1e-13);
  heads::MixtureStatsAccumulator acc;
  acc.add(log_pi, log_f);
  const auto s = acc.result();
  CHECK(s.prior_entropy > 0);
  CHECK(s.prior_entropy <= s.max_prior_entropy);
  CHECK(s.disagreement > 0);
  CHECK(s.disagreement <= s.prior_entropy + kTol);  // the JS divergence is at most H(pi) per row
}
