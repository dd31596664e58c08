// Gradients: the closed forms of Theorem 5 (sigsoftmax) and supplementary B.2 (g:sigmoid), and
// every head against central finite differences in float64.

#include <catch2/catch.hpp>

#include "tests/fixtures/head_test_helpers.h"
#include "trainers/heads/g_sigmoid.h"
#include "trainers/heads/output_head.h"
#include "trainers/heads/sigsoftmax.h"
#include "trainers/heads/sparse_softmax.h"

using namespace sb;
using sb::test::f64;

namespace {

// Full Jacobian d log f_i / d z_j of one row by autograd: (M, M).
torch::Tensor jacobian(const std::function<torch::Tensor(const torch::Tensor&)>& fn,
                       const torch::Tensor& z_row) {
  const int64_t m = z_row.size(0);
  auto jac = torch::empty({m, m}, f64());
  for (int64_t i = 0; i < m; ++i) {
    auto z = z_row.detach().clone().unsqueeze(0).requires_grad_(true);
    fn(z)[0][i].backward();
    jac[i] = z.grad()[0];
  }
  return jac;
}

// Both evaluations of a head (fused, composed) at a random row z of 9 logits have the Jacobian
// (delta_ij - f_j)(c - sigmoid(z_j)): c = 2 for sigsoftmax (Theorem 5), 1 for g:sigmoid.
void check_closed_form_gradient(torch::Tensor (*fused)(const torch::Tensor&),
                                torch::Tensor (*composed)(const torch::Tensor&), double c,
                                uint64_t seed) {
  torch::manual_seed(seed);
  const auto z = torch::randn({9}, f64()) * 4;
  const auto sigmoid_z = z.sigmoid().unsqueeze(0);
  for (const auto& fn : {fused, composed}) {
    const auto f = fn(z.unsqueeze(0)).detach().exp();  // (1, 9)
    const auto expected = (torch::eye(9, f64()) - f) * (c - sigmoid_z);
    // Same float64 formula up to reordering: 1e-14 absolute on entries of size <= 2.
    CHECK(test::max_abs(jacobian(fn, z) - expected) < 1e-14);
  }
}

}  // namespace

TEST_CASE("sigsoftmax: gradient matches Theorem 5") {
  check_closed_form_gradient(heads::log_sigsoftmax, heads::log_sigsoftmax_composed, 2.0, 3);
}

TEST_CASE("g:sigmoid: gradient matches supplementary B.2") {
  check_closed_form_gradient(heads::log_g_sigmoid, heads::log_g_sigmoid_composed, 1.0, 4);
}

TEST_CASE("every head: gradient matches central finite differences in float64") {
  torch::manual_seed(5);
  // Logits kept away from 0 so that g:ReLU's kink and sparse's top-k boundary are not crossed
  // by the +-1e-6 steps.
  auto z = torch::randn({3, 12}, f64()) * 2;
  z = z + z.sign() * 0.2;
  const auto weights = torch::randn({3, 12}, f64());
  // Central differences with h = 1e-6: truncation O(h^2 f''') ~ 1e-11, rounding ~ 1e-16 / h
  // = 1e-10 per term; 1e-7 absolute on gradients of size O(1) leaves a wide margin and still
  // catches any wrong term (those are O(0.01) or larger).
  const double tol = 1e-7;
  auto specs = test::parameter_free_specs();
  for (const auto& spec : specs) {
    INFO(spec.to_string());
    // Scalar L = sum(weights * log f) over the finite entries (sparse: -inf off the top k).
    auto loss = [&](const torch::Tensor& x) {
      const auto out = heads::log_output(spec, x);
      const auto finite = out.isfinite();
      return (torch::where(finite, out, torch::zeros_like(out)) * weights).sum();
    };
    auto zz = z.clone().requires_grad_(true);
    loss(zz).backward();
    const auto numeric = test::finite_difference_grad(
        [&](const torch::Tensor& x) { return loss(x).item<double>(); }, z);
    CHECK(test::max_abs(zz.grad() - numeric) < tol);
  }

  SECTION("the sparse training loss (eq. 5)") {
    const auto targets = torch::tensor({1, 5, 11}, torch::kLong);
    auto zz = z.clone().requires_grad_(true);
    heads::sparse_softmax_loss(zz, targets, 5).backward();
    const auto numeric = test::finite_difference_grad(
        [&](const torch::Tensor& x) {
          return heads::sparse_softmax_loss(x, targets, 5).item<double>();
        },
        z);
    CHECK(test::max_abs(zz.grad() - numeric) < tol);
  }
}

TEST_CASE("module heads: gradients of every parameter match central finite differences") {
  torch::manual_seed(6);
  const auto h = torch::randn({4, 5}, f64()), w = torch::randn({9, 3}, f64()) * 0.8,
             b = torch::randn({9}, f64()) * 0.3;
  const auto targets = torch::tensor({0, 4, 8, 2}, torch::kLong);
  for (const auto* text : {"mos:K=2", "moss:K=3", "sigsoftmax:b=1"}) {
    INFO(text);
    const auto spec = HeadSpec::parse(text);
    const int64_t input = (spec.kind == HeadKind::sigsoftmax) ? 3 : 5;
    heads::OutputHead head(heads::OutputHeadOptions(spec, input, 3));
    head->to(torch::kFloat64);
    if (spec.kind == HeadKind::sigsoftmax) {
      torch::NoGradGuard no_grad;
      head->sigsoftmax->b.fill_(0.7);  // away from the default, to exercise dL/db
    }
    const auto hin = h.slice(1, 0, input).contiguous();
    auto ww = w.clone().requires_grad_(true);
    head->zero_grad();
    head->loss(hin, ww, b, targets).backward();
    auto eval = [&] {
      torch::NoGradGuard no_grad;
      return head->loss(hin, w, b, targets).item<double>();
    };
    for (auto& p : head->parameters()) {
      const auto analytic = p.grad().clone();
      auto numeric = torch::zeros_like(p);
      auto flat = p.data().view(-1);
      for (int64_t i = 0; i < flat.numel(); ++i) {
        const double v = flat[i].item<double>();
        flat[i] = v + 1e-6;
        const double up = eval();
        flat[i] = v - 1e-6;
        const double down = eval();
        flat[i] = v;
        numeric.view(-1)[i] = (up - down) / 2e-6;
      }
      CHECK(test::max_abs(analytic - numeric) < 1e-7);  // same budget as above
    }
    const auto numeric_w = test::finite_difference_grad(
        [&](const torch::Tensor& x) {
          torch::NoGradGuard no_grad;
          return head->loss(hin, x, b, targets).item<double>();
        },
        w);
    CHECK(test::max_abs(ww.grad() - numeric_w) < 1e-7);
  }
}
