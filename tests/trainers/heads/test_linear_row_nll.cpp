// fused_linear_row_nll (the decoder + per-row NLL as one node, whose forward leaves the unscaled
// gradient in the logits' place and whose backward is GEMMs only) against the composed ops linear
// + log-output + gather: values and the gradients in x, W and b under a separate upstream weight
// per row, float32 on both ISA paths, double backward, no bias, the in-place kernels it relies
// on, and OutputHead's softmax / sigsoftmax training loss, which takes it.

#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "tests/fixtures/head_test_helpers.h"
#include "tests/fixtures/kernel_isa.h"
#include "trainers/heads/kernels/row_nll_dispatch.h"
#include "trainers/heads/kernels/sigmoid_family_kernel.h"
#include "trainers/heads/linear_row_nll_function.h"
#include "trainers/heads/output_head.h"
#include "trainers/heads/sigsoftmax.h"

using namespace sb;
using sb::test::f64;

namespace {

/// -log f(x W^T + b)[t] per row: fused, or composed from linear, the log-output and gather.
torch::Tensor row_nll(bool fused, const torch::Tensor& x, const torch::Tensor& w,
                      const torch::Tensor& b, const torch::Tensor& t, bool sig) {
  if (fused) return heads::fused_linear_row_nll(x, w, b, t, sig);
  const auto z = torch::nn::functional::linear(x, w, b);
  const auto log_f = sig ? heads::log_sigsoftmax_composed(z) : torch::log_softmax(z, -1);
  return -log_f.gather(/*dim=*/1, t.unsqueeze(1)).squeeze(1);
}

struct Grads {
  torch::Tensor value, dx, dw, db;
};

/// Values and d(sum_r w_r nll_r)/d{x, W, b}; fused or composed (linear, log-output, gather).
Grads run(bool fused, const torch::Tensor& x0, const torch::Tensor& w0, const torch::Tensor& b0,
          const torch::Tensor& t, const torch::Tensor& up, bool sig) {
  auto x = x0.detach().clone().requires_grad_(true);
  auto w = w0.detach().clone().requires_grad_(true);
  auto b = b0.defined() ? b0.detach().clone().requires_grad_(true) : torch::Tensor();
  const auto out = row_nll(fused, x, w, b, t, sig);
  (out * up).sum().backward();
  return {out.detach(), x.grad(), w.grad(), b.defined() ? b.grad() : torch::Tensor()};
}

void check_close(const Grads& a, const Grads& b, double tol) {
  CHECK(test::max_abs(a.value - b.value) < tol);
  CHECK(test::max_abs(a.dx - b.dx) < tol);
  CHECK(test::max_abs(a.dw - b.dw) < tol);
  CHECK(a.db.defined() == b.db.defined());
  if (a.db.defined()) CHECK(test::max_abs(a.db - b.db) < tol);
}

}  // namespace

TEST_CASE(
    "fused linear row NLL: float64 values and gradients in x, W and b equal the composed ops") {
  // float64, values O(1) to O(10), R <= 9 rows summed into dW: 1e-12 leaves room only for the
  // order of the sums.
  torch::manual_seed(71);
  for (const bool sig : {false, true}) {
    for (const int64_t m : {3, 13, 1003}) {
      for (const bool with_bias : {true, false}) {
        INFO((sig ? "sigsoftmax" : "softmax") << " M = " << m << " bias " << with_bias);
        const auto x = torch::randn({9, 5}, f64()), w = torch::randn({m, 5}, f64()) * 1.5;
        const auto b = with_bias ? torch::randn({m}, f64()) : torch::Tensor();
        const auto t = torch::randint(m, {9}, torch::kInt64);
        const auto up = torch::randn({9}, f64());  // signed, different per row
        const auto fused = run(true, x, w, b, t, up, sig),
                   composed = run(false, x, w, b, t, up, sig);
        check_close(fused, composed, 1e-12);
        CHECK(test::max_abs(composed.dw) > 1e-2);  // a real gradient
      }
    }
  }
}

TEST_CASE("fused linear row NLL: float32 on both ISA paths matches a float64 reference") {
  SB_EACH_KERNEL_ISA();
  torch::manual_seed(72);
  for (const bool sig : {false, true}) {
    INFO((sig ? "sigsoftmax" : "softmax") << " isa " << kernels::sigmoid_family_isa());
    const int64_t r = 40, d = 16, m = 2000;
    const auto x = torch::randn({r, d}, f64()), w = torch::randn({m, d}, f64());
    const auto b = torch::randn({m}, f64()), t = torch::randint(m, {r}, torch::kInt64);
    const auto up = torch::rand({r}, f64()) + 0.5;
    const auto ref = run(false, x, w, b, t, up, sig);
    const auto f = torch::kFloat32;
    auto got = run(true, x.to(f), w.to(f), b.to(f), t, up.to(f), sig);
    for (auto* g : {&got.value, &got.dx, &got.dw, &got.db}) *g = g->to(torch::kFloat64);
    // Logits |z| <= ~20 from a float32 GEMM of d = 16 (relative 1e-6), through exp: values and
    // per-element gradients to ~1e-5; dx and dW sum R or M such terms of size |x|, |W| <= ~5
    // with float32 accumulation: 2e-4 absolute on entries of size ~1 to 10.
    CHECK(test::max_abs(got.value - ref.value) < 1e-4);
    CHECK(test::max_abs(got.dx - ref.dx) < 2e-4);
    CHECK(test::max_abs(got.dw - ref.dw) < 2e-4);
    CHECK(test::max_abs(got.db - ref.db) < 2e-4);
  }
}

TEST_CASE("fused linear row NLL: double backward equals the composed ops'") {
  // create_graph recomputes z from x, W, b and runs the differentiable closed form; its
  // derivative must equal autograd's second derivative of the composed ops (float64, 1e-10).
  torch::manual_seed(73);
  for (const bool sig : {false, true}) {
    INFO((sig ? "sigsoftmax" : "softmax"));
    const auto x0 = torch::randn({4, 3}, f64()), w0 = torch::randn({11, 3}, f64());
    const auto b0 = torch::randn({11}, f64()), t = torch::randint(11, {4}, torch::kInt64);
    const auto up = torch::randn({4}, f64()), v = torch::randn({4, 3}, f64());
    torch::Tensor second[2];
    for (int fused = 0; fused < 2; ++fused) {
      auto x = x0.clone().requires_grad_(true);
      auto w = w0.clone().requires_grad_(true);
      auto b = b0.clone().requires_grad_(true);
      const auto out = row_nll(fused == 1, x, w, b, t, sig);
      const auto gx = torch::autograd::grad({(out * up).sum()}, {x}, {}, /*retain_graph=*/true,
                                            /*create_graph=*/true)[0];
      second[fused] = torch::autograd::grad({(gx * v).sum()}, {w})[0];
    }
    CHECK(test::max_abs(second[1] - second[0]) < 1e-10);
    CHECK(test::max_abs(second[0]) > 1e-3);
  }
}

TEST_CASE(
    "fused linear row NLL: without a gradient it returns the NLL alone, and bad shapes are "
    "refused") {
  torch::manual_seed(74);
  const auto x = torch::randn({6, 4}), w = torch::randn({30, 4}), b = torch::randn({30});
  const auto t = torch::randint(30, {6}, torch::kInt64);
  const auto z = torch::nn::functional::linear(x, w, b);
  const auto expected = -torch::log_softmax(z, -1).gather(1, t.unsqueeze(1)).squeeze(1);
  const auto got = heads::fused_linear_row_nll(x, w, b, t, /*sigsoftmax=*/false);
  CHECK_FALSE(got.requires_grad());
  CHECK(test::max_abs(got - expected) < 1e-5);  // float32 logits of size ~5: a few ulp
  CHECK_THROWS_WITH(heads::fused_linear_row_nll(x, w.narrow(1, 0, 3), b, t, false),
                    Catch::Contains("must be (R, d) and (M, d)"));
  CHECK_THROWS_WITH(heads::fused_linear_row_nll(x, w, b.narrow(0, 0, 5), t, false),
                    Catch::Contains("bias"));
  auto xg = x.clone().requires_grad_(true);
  CHECK_THROWS_WITH(
      heads::fused_linear_row_nll(xg, w, b, torch::tensor({0, 1, 2, 3, 4, 30}), false),
      Catch::Contains("targets must lie in [0, 30)"));
}

TEST_CASE("row NLL kernels: the gradient written in place equals the one written elsewhere") {
  // The fused node relies on gz == z being allowed: the target's logit is read before the row
  // is overwritten. Bit-identical: the same operations on the same values.
  SB_EACH_KERNEL_ISA();
  torch::manual_seed(75);
  for (const bool sig : {false, true}) {
    INFO((sig ? "sigsoftmax" : "softmax") << " isa " << kernels::sigmoid_family_isa());
    const auto z = torch::randn({5, 1000}) * 5;
    const auto t = torch::randint(1000, {5}, torch::kInt64);
    double loss[5], stats[10];
    const double scales[5] = {1.0, 0.5, -2.0, 1.0, 3.0};
    kernels::row_nll_forward(z.data_ptr<float>(), t.data_ptr<int64_t>(), loss, stats, 5, 1000, sig);
    auto apart = torch::empty_like(z), inplace = z.clone();
    kernels::row_nll_backward(z.data_ptr<float>(), t.data_ptr<int64_t>(), stats, scales,
                              apart.data_ptr<float>(), 5, 1000, sig);
    kernels::row_nll_backward(inplace.data_ptr<float>(), t.data_ptr<int64_t>(), stats, scales,
                              inplace.data_ptr<float>(), 5, 1000, sig);
    CHECK(torch::equal(apart, inplace));
    const auto zd = z.to(torch::kFloat64);
    double loss64[5], stats64[10];
    kernels::row_nll_forward(zd.data_ptr<double>(), t.data_ptr<int64_t>(), loss64, stats64, 5, 1000,
                             sig);
    auto apart64 = torch::empty_like(zd), inplace64 = zd.clone();
    kernels::row_nll_backward(zd.data_ptr<double>(), t.data_ptr<int64_t>(), stats64, scales,
                              apart64.data_ptr<double>(), 5, 1000, sig);
    kernels::row_nll_backward(inplace64.data_ptr<double>(), t.data_ptr<int64_t>(), stats64, scales,
                              inplace64.data_ptr<double>(), 5, 1000, sig);
    CHECK(torch::equal(apart64, inplace64));
  }
}

TEST_CASE(
    "row NLL kernels: the forward with the gradient in place equals the forward then the "
    "backward") {
  // row_nll_forward_grad: softmax stores e^{z - max} while summing and scales by 1/S (one exp);
  // the backward computes e^{z - max} e^{max - lse}. The same terms rounded in another order:
  // float32 gradients in [-1, 1] to 1e-6, losses (float64 sums of the same terms) to 1e-6;
  // float64 to 1e-13. A NaN row stays NaN.
  SB_EACH_KERNEL_ISA();
  torch::manual_seed(76);
  for (const bool sig : {false, true}) {
    INFO((sig ? "sigsoftmax" : "softmax") << " isa " << kernels::sigmoid_family_isa());
    for (const auto dtype : {torch::kFloat32, torch::kFloat64}) {
      auto z = (torch::randn({6, 777}, torch::kFloat64) * 6).to(dtype);
      z[2][5] = std::nan("");
      const auto t = torch::randint(777, {6}, torch::kInt64);
      const auto ones = torch::ones({6}, torch::kFloat64);
      auto loss_a = torch::empty({6}, torch::kFloat64), loss_b = torch::empty({6}, torch::kFloat64);
      auto stats = torch::empty({12}, torch::kFloat64);
      auto apart = torch::empty_like(z), inplace = z.clone();
      AT_DISPATCH_FLOATING_TYPES(z.scalar_type(), "test", [&] {
        kernels::row_nll_forward(z.data_ptr<scalar_t>(), t.data_ptr<int64_t>(),
                                 loss_a.data_ptr<double>(), stats.data_ptr<double>(), 6, 777, sig);
        kernels::row_nll_backward(z.data_ptr<scalar_t>(), t.data_ptr<int64_t>(),
                                  stats.data_ptr<double>(), ones.data_ptr<double>(),
                                  apart.data_ptr<scalar_t>(), 6, 777, sig);
        kernels::row_nll_forward_grad(inplace.data_ptr<scalar_t>(), t.data_ptr<int64_t>(),
                                      loss_b.data_ptr<double>(), 6, 777, sig);
      });
      const double tol = dtype == torch::kFloat32 ? 1e-6 : 1e-13;
      const auto finite = torch::tensor({0, 1, 3, 4, 5});
      CHECK(test::max_abs(loss_a.index_select(0, finite) - loss_b.index_select(0, finite)) < tol);
      CHECK(test::max_abs((apart.index_select(0, finite) - inplace.index_select(0, finite))
                              .to(torch::kFloat64)) < tol);
      CHECK(std::isnan(loss_b[2].item<double>()));
      CHECK(inplace[2].isnan().all().item<bool>());
    }
  }
}

TEST_CASE(
    "OutputHead: the softmax and sigsoftmax training losses, one node, equal the NLL of the "
    "head's log-output, values and gradients in the hidden state, decoder weight and bias") {
  // loss() takes the fused node on CPU float; nll_loss(forward()) composes the decoder, the
  // log-output and the gather. float64: 1e-12 (the order of sums); float32: 2e-5 on a mean of
  // O(1) values and gradients of size <= ~1 (float32 GEMMs of d = 6, exps to a few ulp).
  torch::manual_seed(77);
  for (const auto* text : {"softmax", "sigsoftmax"}) {
    for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
      INFO(text << " " << (dtype == torch::kFloat64 ? "float64" : "float32"));
      heads::OutputHead head(heads::OutputHeadOptions(HeadSpec::parse(text), 6, 6));
      head->to(dtype);
      const auto opts = torch::TensorOptions().dtype(dtype);
      const auto h0 = torch::randn({12, 6}, opts), w0 = torch::randn({300, 6}, opts);
      const auto b0 = torch::randn({300}, opts) * 0.5;
      const auto t = torch::randint(300, {12}, torch::kInt64);
      torch::Tensor value[2], grads[2][3];
      for (int fused = 0; fused < 2; ++fused) {
        auto h = h0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true),
             b = b0.clone().requires_grad_(true);
        const auto loss =
            fused ? head->loss(h, w, b, t) : torch::nll_loss(head->forward(h, w, b), t);
        loss.backward();
        value[fused] = loss.detach().to(torch::kFloat64);
        grads[fused][0] = h.grad().to(torch::kFloat64);
        grads[fused][1] = w.grad().to(torch::kFloat64);
        grads[fused][2] = b.grad().to(torch::kFloat64);
      }
      const double tol = dtype == torch::kFloat64 ? 1e-12 : 2e-5;
      CHECK(test::max_abs(value[1] - value[0]) < tol);
      for (int i = 0; i < 3; ++i) CHECK(test::max_abs(grads[1][i] - grads[0][i]) < tol);
      CHECK(test::max_abs(grads[0][0]) > 1e-3);  // a real gradient
    }
  }
}
