// The paper's theorems as numerical facts: Theorem 2's bound, Theorem 3's counterexample
// (supplementary A), Theorem 4's limit.

#include <cmath>

#include <catch2/catch.hpp>

#include "tests/fixtures/head_test_helpers.h"
#include "trainers/heads/output_head.h"
#include "trainers/heads/sigsoftmax.h"
#include "trainers/heads/softmax.h"

using namespace sb;
using sb::test::f64;

namespace {
int64_t numerical_rank(const torch::Tensor& a) {
  const auto s = torch::linalg_svdvals(a);
  // Numerical Recipes threshold in float64 (docs/protocol.md): 0.5 sqrt(M + T + 1) sigma_max eps.
  const double tol = 0.5 * std::sqrt(static_cast<double>(a.size(0) + a.size(1) + 1)) *
                     s.max().item<double>() * 2.220446049250313e-16;
  return (s > tol).sum().item<int64_t>();
}
}  // namespace

TEST_CASE("sigsoftmax: Theorem 3 counterexample (supplementary A) is rank 3, softmax rank 2") {
  const auto u = torch::tensor({1.0, 2.0, 0.0}, f64());
  const auto z = torch::stack({0 * u, u, -u});  // three inputs from the 1-dimensional space {k u}
  const auto ls = heads::log_sigsoftmax(z), lsm = heads::log_softmax(z);

  // Supplementary eq. (2)-(3): closed forms of log f(z1) and log f(z2).
  CHECK(test::max_abs(ls[0] + std::log(3.0)) < 1e-14);
  const double e = std::exp(1.0), sig1 = 1 / (1 + std::exp(-1.0)), sig2 = 1 / (1 + std::exp(-2.0));
  const double c = std::log((1 + 2 * sig1 * e + 2 * sig2 * e * e) / 2);
  const auto expected2 = torch::tensor(
      {2 - std::log(1 + e) - c, 4 - std::log(1 + e * e) - c, -std::log(2.0) - c}, f64());
  CHECK(test::max_abs(ls[1] - expected2) < 1e-14);

  const auto s_sig = torch::linalg_svdvals(ls), s_soft = torch::linalg_svdvals(lsm);
  CHECK(numerical_rank(ls) == 3);   // linearly independent: more than d + 1 = 2
  CHECK(numerical_rank(lsm) == 2);  // Theorem 2: at most d + 1 = 2
  CHECK(s_sig[2].item<double>() > 1e-3 * s_sig[0].item<double>());  // far from the threshold
  CHECK(s_soft[2].item<double>() < 1e-14 * s_soft[0].item<double>());
}

TEST_CASE("softmax: Theorem 2 bounds the rank by d + 2 with a bias, sigsoftmax exceeds it") {
  torch::manual_seed(21);
  const int64_t t = 300, d = 5, m = 40;
  const auto h = torch::randn({t, d}, f64()), w = torch::randn({d, m}, f64()),
             b = torch::randn({m}, f64());
  const auto logits_bias = torch::addmm(b, h, w), logits = torch::mm(h, w);
  CHECK(numerical_rank(heads::log_softmax(logits_bias)) == d + 2);
  CHECK(numerical_rank(heads::log_softmax(logits)) == d + 1);
  CHECK(numerical_rank(heads::log_sigsoftmax(logits_bias)) > d + 2);
  CHECK(numerical_rank(heads::log_sigsoftmax(logits)) > d + 1);
}

TEST_CASE("sigsoftmax: Theorem 4, exp(z) sigmoid(z + b) tends to softmax as b grows") {
  torch::manual_seed(22);
  const auto z = torch::randn({5, 30}, f64()) * 2;
  const auto soft = heads::log_softmax(z);
  double previous = std::numeric_limits<double>::infinity();
  for (const double b : {0.0, 2.0, 4.0, 8.0, 16.0, 24.0}) {
    const double gap =
        test::max_abs(heads::log_sigsoftmax_shifted(z, torch::tensor(b, f64())) - soft);
    INFO("b = " << b << ": max |log f - log softmax| = " << gap);
    CHECK(gap < previous);  // monotone approach
    previous = gap;
  }
  // At b = 24: |log sigmoid(z + b)| <= e^{-(24 - max|z|)} ~ 1e-7 for |z| < 8.
  CHECK(previous < 1e-6);
  // b = 0 is sigsoftmax itself.
  CHECK(test::max_abs(heads::log_sigsoftmax_shifted(z, torch::tensor(0.0, f64())) -
                      heads::log_sigsoftmax(z)) < 1e-14);
}
