// fused_row_nll (the mixtures' per-expert NLL) against nll of the composed log-output functions:
// values and gradients under a separate upstream weight per row, float32 on both ISA paths,
// double backward, NaN rows, bad targets.

#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "tests/fixtures/head_test_helpers.h"
#include "tests/fixtures/kernel_isa.h"
#include "trainers/heads/kernels/sigmoid_family_kernel.h"
#include "trainers/heads/row_nll_function.h"
#include "trainers/heads/sigsoftmax.h"

using namespace sb;
using sb::test::f64;

namespace {

/// -log f(z)[t] per row from the composed log-output functions (no fused kernel involved).
torch::Tensor composed_row_nll(const torch::Tensor& z, const torch::Tensor& t, bool sigsoftmax) {
  const auto log_f = sigsoftmax ? heads::log_sigsoftmax_composed(z) : torch::log_softmax(z, -1);
  return -log_f.gather(/*dim=*/1, t.unsqueeze(1)).squeeze(1);
}

/// (values, d(sum_r w_r nll_r)/dz): w plays the upstream gradient of each row.
std::pair<torch::Tensor, torch::Tensor> value_and_grad(bool fused, const torch::Tensor& z,
                                                       const torch::Tensor& t,
                                                       const torch::Tensor& w, bool sigsoftmax) {
  auto x = z.detach().clone().requires_grad_(true);
  const auto out =
      fused ? heads::fused_row_nll(x, t, sigsoftmax) : composed_row_nll(x, t, sigsoftmax);
  (out * w).sum().backward();
  return {out.detach(), x.grad()};
}

}  // namespace

TEST_CASE("fused row NLL: float64 values and per-row weighted gradients equal the composed ops") {
  // Both sides float64 and O(1) to O(10): 1e-12 leaves room only for summation order.
  torch::manual_seed(61);
  for (const bool sig : {false, true}) {
    for (const int64_t m : {3, 8, 13, 1003}) {
      INFO((sig ? "sigsoftmax" : "softmax") << " M = " << m);
      const auto z = torch::randn({9, m}, f64()) * 4;
      const auto t = torch::randint(m, {9}, torch::kInt64);
      const auto w = torch::randn({9}, f64());  // signed, different per row
      const auto [v1, g1] = value_and_grad(true, z, t, w, sig);
      const auto [v0, g0] = value_and_grad(false, z, t, w, sig);
      CHECK(test::max_abs(v1 - v0) < 1e-12);
      CHECK(test::max_abs(g1 - g0) < 1e-12);
      CHECK(test::max_abs(g0) > 1e-2);  // a real gradient
    }
  }
}

TEST_CASE("fused row NLL: float32 vector code matches a float64 reference on both ISA paths") {
  SB_EACH_KERNEL_ISA();
  torch::manual_seed(62);
  for (const bool sig : {false, true}) {
    for (const int64_t m : {5, 16, 10000}) {
      INFO((sig ? "sigsoftmax" : "softmax")
           << " M = " << m << " isa " << kernels::sigmoid_family_isa());
      auto z = torch::randn({6, m}, f64()) * 6;
      z[0].fill_(-50.0);  // all equal: f = 1/M
      z[1] = z[1] - z[1].max() + 30.0;
      const auto t = torch::randint(m, {6}, torch::kInt64);
      t[1].fill_(z[1].argmax().item<int64_t>());  // the target is the row's max: f_t close to 1
      const auto w = torch::rand({6}, f64()) + 0.5;
      const auto [v64, g64] = value_and_grad(false, z, t, w, sig);
      const auto [v32, g32] =
          value_and_grad(true, z.to(torch::kFloat32), t, w.to(torch::kFloat32), sig);
      // Values: the input's float32 rounding (6e-8 relative of |z| <= ~60, slope <= 2) and the
      // ~2-ulp exp polynomial summed in float64: 1e-5 absolute on values up to ~60.
      CHECK(test::max_abs(v32.to(torch::kFloat64) - v64) < 1e-5);
      // Gradients: w_r (f_j - [j = t]) with |w_r| <= 1.5: f to a few float32 ulp, plus z's
      // rounding through exp (6e-8 * 60 relative): 1e-5 absolute.
      CHECK(test::max_abs(g32.to(torch::kFloat64) - g64) < 1e-5);
    }
  }
}

TEST_CASE("fused row NLL: double backward equals the composed ops'") {
  // create_graph runs the differentiable closed form; its derivative in the logits must equal
  // autograd's second derivative of the composed ops (float64, 1e-10).
  torch::manual_seed(63);
  for (const bool sig : {false, true}) {
    INFO((sig ? "sigsoftmax" : "softmax"));
    const auto z0 = torch::randn({4, 11}, f64()) * 2;
    const auto t = torch::randint(11, {4}, torch::kInt64);
    const auto w = torch::randn({4}, f64()), v = torch::randn({4, 11}, f64());
    torch::Tensor second[2];
    for (int fused = 0; fused < 2; ++fused) {
      auto z = z0.clone().requires_grad_(true);
      const auto out = fused ? heads::fused_row_nll(z, t, sig) : composed_row_nll(z, t, sig);
      const auto g = torch::autograd::grad({(out * w).sum()}, {z}, {}, /*retain_graph=*/true,
                                           /*create_graph=*/true)[0];
      second[fused] = torch::autograd::grad({(g * v).sum()}, {z})[0];
    }
    CHECK(test::max_abs(second[1] - second[0]) < 1e-10);
    CHECK(test::max_abs(second[0]) > 1e-3);
  }
}

TEST_CASE("fused row NLL: a NaN row stays in its row, targets outside 0..M-1 are refused") {
  auto z = torch::randn({3, 20});
  z[1][4] = std::nan("");
  const auto t = torch::tensor({1, 2, 3}, torch::kInt64);
  auto x = z.clone().requires_grad_(true);
  const auto out = heads::fused_row_nll(x, t, /*sigsoftmax=*/false);
  out.sum().backward();
  CHECK(std::isnan(out[1].item<double>()));
  CHECK(std::isfinite(out[0].item<double>()));
  CHECK(std::isfinite(out[2].item<double>()));
  CHECK(x.grad()[1].isnan().all().item<bool>());
  CHECK(x.grad()[0].isfinite().all().item<bool>());
  CHECK_THROWS_WITH(heads::fused_row_nll(z, torch::tensor({0, 20, 1}, torch::kInt64), false),
                    Catch::Contains("targets must lie in [0, 20)"));
  CHECK_THROWS_WITH(heads::fused_row_nll(z, torch::tensor({0, 1}, torch::kInt64), false),
                    Catch::Contains("must be (R, M) and (R)"));
}
