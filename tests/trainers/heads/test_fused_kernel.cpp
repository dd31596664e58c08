// The fused sigmoid-family autograd Function against the composed torch ops it replaces.

#include <catch2/catch.hpp>

#include "tests/fixtures/head_test_helpers.h"
#include "tests/fixtures/kernel_isa.h"
#include "trainers/heads/g_sigmoid.h"
#include "trainers/heads/kernels/sigmoid_family_kernel.h"
#include "trainers/heads/sigmoid_family_function.h"
#include "trainers/heads/sigsoftmax.h"

using namespace sb;
using sb::test::f64;

namespace {

struct Pair {
  const char* name;
  torch::Tensor (*fused)(const torch::Tensor&);
  torch::Tensor (*composed)(const torch::Tensor&);
};
const Pair kPairs[] = {
    {"sigsoftmax", heads::log_sigsoftmax, heads::log_sigsoftmax_composed},
    {"sigmoid", heads::log_g_sigmoid, heads::log_g_sigmoid_composed},
};

// forward value and d(sum(w * out))/dz.
std::pair<torch::Tensor, torch::Tensor> value_and_grad(torch::Tensor (*fn)(const torch::Tensor&),
                                                       const torch::Tensor& z,
                                                       const torch::Tensor& w) {
  auto x = z.detach().clone().requires_grad_(true);
  const auto out = fn(x);
  (out * w).sum().backward();
  return {out.detach(), x.grad()};
}

}  // namespace

TEST_CASE("fused sigmoid family: float64 forward and backward equal the composed ops") {
  torch::manual_seed(31);
  // Column counts around the 8-lane vector width exercise the tails.
  for (const int64_t m : {1, 7, 8, 9, 33, 1000}) {
    const auto z = torch::randn({5, m}, f64()) * 5, w = torch::randn({5, m}, f64());
    for (const auto& p : kPairs) {
      INFO(p.name << " M = " << m);
      const auto [out_f, grad_f] = value_and_grad(p.fused, z, w);
      const auto [out_c, grad_c] = value_and_grad(p.composed, z, w);
      // Same formulas in float64 with different operation order: 1e-13 absolute.
      CHECK(test::max_abs(out_f - out_c) < 1e-13);
      CHECK(test::max_abs(grad_f - grad_c) < 1e-13);
    }
  }
}

TEST_CASE("fused sigmoid family: float32 vector code matches a float64 reference") {
  SB_EACH_KERNEL_ISA();  // AVX2 + FMA (when the CPU has it), then the baseline
  torch::manual_seed(32);
  for (const int64_t m : {3, 8, 13, 10000}) {
    auto z = torch::randn({8, m}, f64()) * 8;
    z[0].fill_(-1e4);                           // general rows (max z < 0) and the exp clamps
    z[1].slice(0, 0, (m + 1) / 2).fill_(90.0);  // general rows (max z > 80), beyond exp's range
    z[2] = z[2] - z[2].max();                   // max z = 0: the fast path's lower edge
    z[3] = z[3] - z[3].max() + 80.0;            // max z = 80: its upper edge
    z[4] = z[4] * 10;                           // E down to e^-300: the denormal flush
    const auto w = torch::randn({8, m}, f64());
    for (const auto& p : kPairs) {
      INFO(p.name << " M = " << m << " isa " << kernels::sigmoid_family_isa());
      const auto [out64, grad64] = value_and_grad(p.composed, z, w);
      const auto [out32, grad32] =
          value_and_grad(p.fused, z.to(torch::kFloat32), w.to(torch::kFloat32));
      // Per element: the input's float32 rounding (6e-8 relative, times slope <= 2) plus ~2-ulp
      // exp/log polynomials on values as large as |z| and |out| (up to ~200 here): 5e-7 of that
      // magnitude, plus 2e-6 for the row sum. The float64 row sums add nothing measurable.
      const auto bound = 2e-6 + 5e-7 * (z.abs() + out64.abs());
      CHECK(((out32.to(torch::kFloat64) - out64).abs() <= bound).all().item<bool>());
      // Gradients hold f_j * sum(g), as large as sum(g) (~100 for M = 10000): relative to that.
      const double scale = std::max(1.0, test::max_abs(grad64));
      CHECK(test::max_abs(grad32.to(torch::kFloat64) - grad64) < 2e-5 * scale);
    }
  }
}

TEST_CASE("fused sigmoid family: an unknown ISA name is refused") {
  CHECK_THROWS_WITH(kernels::set_sigmoid_family_isa("sse9"),
                    Catch::Contains("auto, baseline, avx2"));
}

TEST_CASE("fused sigmoid family: non-contiguous logits and double backward") {
  torch::manual_seed(33);
  const auto z = torch::randn({7, 5}, f64()).t();  // (5, 7), non-contiguous
  REQUIRE_FALSE(z.is_contiguous());
  for (const auto& p : kPairs) {
    INFO(p.name);
    CHECK(test::max_abs(p.fused(z) - p.composed(z.contiguous())) < 1e-13);

    // Second derivatives through create_graph: grad of (d sum(w out)/dz . v).
    const auto w = torch::randn({5, 7}, f64()), v = torch::randn({5, 7}, f64());
    auto second = [&](torch::Tensor (*fn)(const torch::Tensor&)) {
      auto x = z.detach().clone().requires_grad_(true);
      const auto g = torch::autograd::grad({(fn(x) * w).sum()}, {x}, {}, true, true)[0];
      return torch::autograd::grad({(g * v).sum()}, {x})[0];
    };
    CHECK(test::max_abs(second(p.fused) - second(p.composed)) < 1e-12);
  }
}

TEST_CASE("fused sigmoid family: results are bit-identical for 1 and 2 threads") {
  torch::manual_seed(34);
  const auto z = torch::randn({301, 777}) * 4, w = torch::randn({301, 777});
  const int saved = torch::get_num_threads();
  for (const auto& p : kPairs) {
    INFO(p.name);
    torch::set_num_threads(1);
    const auto [out1, grad1] = value_and_grad(p.fused, z, w);
    torch::set_num_threads(2);
    const auto [out2, grad2] = value_and_grad(p.fused, z, w);
    CHECK(torch::equal(out1, out2));
    CHECK(torch::equal(grad1, grad2));
  }
  torch::set_num_threads(saved);
}

TEST_CASE("fused sigmoid family: NaN logits propagate to their whole row only") {
  auto z = torch::randn({3, 20});
  z[1][4] = std::numeric_limits<float>::quiet_NaN();
  for (const auto& p : kPairs) {
    INFO(p.name);
    const auto out = p.fused(z);
    CHECK(out[1].isnan().all().item<bool>());
    CHECK(out[0].isfinite().all().item<bool>());
    CHECK(out[2].isfinite().all().item<bool>());
  }
}

namespace {

struct LossPair {
  const char* name;
  torch::Tensor (*fused)(const torch::Tensor&, const torch::Tensor&);
  torch::Tensor (*composed_log)(const torch::Tensor&);
};
const LossPair kLossPairs[] = {
    {"sigsoftmax", heads::sigsoftmax_nll_loss, heads::log_sigsoftmax_composed},
    {"sigmoid", heads::g_sigmoid_nll_loss, heads::log_g_sigmoid_composed},
};

std::pair<double, torch::Tensor> loss_and_grad(
    const std::function<torch::Tensor(const torch::Tensor&)>& loss_fn, const torch::Tensor& z) {
  auto x = z.detach().clone().requires_grad_(true);
  const auto loss = loss_fn(x);
  loss.backward();
  return {loss.item<double>(), x.grad()};
}

}  // namespace

TEST_CASE("fused head + NLL: loss and gradient equal nll_loss of the log-probabilities") {
  SB_EACH_KERNEL_ISA();
  torch::manual_seed(35);
  for (const int64_t m : {1, 7, 9, 1000}) {
    auto z = torch::randn({8, m}, f64()) * 6;
    z[0].fill_(-1e4);                           // general rows (max z < 0)
    z[1].slice(0, 0, (m + 1) / 2).fill_(90.0);  // general rows (max z > 80)
    z[2] = z[2] - z[2].max();                   // max z = 0
    z[3] = z[3] - z[3].max() + 80.0;            // max z = 80
    z[4] = z[4] * 10;                           // the denormal flush
    const auto targets = torch::randint(m, {8}, torch::kLong);
    for (const auto& p : kLossPairs) {
      INFO(p.name << " M = " << m << " isa " << kernels::sigmoid_family_isa());
      auto reference = [&](const torch::Tensor& x) {
        return torch::nll_loss(p.composed_log(x), targets);
      };
      auto fused = [&](const torch::Tensor& x) { return p.fused(x, targets); };
      const auto [ref_loss, ref_grad] = loss_and_grad(reference, z);
      const auto [loss64, grad64] = loss_and_grad(fused, z);
      // float64: the same formulas, reordered (1e-12 on losses of size <= ~1e4).
      CHECK(loss64 == Approx(ref_loss).epsilon(1e-12));
      CHECK(test::max_abs(grad64 - ref_grad) < 1e-13);
      // float32: per-row losses of size up to ~200 carry ~4 ulps (5e-7 relative) from rounded
      // inputs and the exp polynomial; gradients are bounded by 2/N, so 2e-6 absolute.
      const auto [loss32, grad32] = loss_and_grad(fused, z.to(torch::kFloat32));
      CHECK(loss32 == Approx(ref_loss).epsilon(5e-6).margin(1e-5));
      CHECK(test::max_abs(grad32.to(torch::kFloat64) - ref_grad) < 2e-6);
    }
  }
}

TEST_CASE("fused head + NLL: double backward and NaN rows") {
  torch::manual_seed(36);
  const auto z = torch::randn({4, 6}, f64()), v = torch::randn({4, 6}, f64());
  const auto targets = torch::tensor({0, 5, 2, 2}, torch::kLong);
  for (const auto& p : kLossPairs) {
    INFO(p.name);
    auto second = [&](const std::function<torch::Tensor(const torch::Tensor&)>& fn) {
      auto x = z.detach().clone().requires_grad_(true);
      const auto g = torch::autograd::grad({fn(x)}, {x}, {}, true, true)[0];
      return torch::autograd::grad({(g * v).sum()}, {x})[0];
    };
    const auto fused = second([&](const torch::Tensor& x) { return p.fused(x, targets); });
    const auto ref =
        second([&](const torch::Tensor& x) { return torch::nll_loss(p.composed_log(x), targets); });
    CHECK(test::max_abs(fused - ref) < 1e-12);

    auto bad = torch::randn({3, 10});
    bad[1][7] = std::numeric_limits<float>::quiet_NaN();
    auto x = bad.clone().requires_grad_(true);
    const auto loss = p.fused(x, torch::tensor({1, 2, 3}, torch::kLong));
    CHECK(std::isnan(loss.item<float>()));
    loss.backward();
    CHECK(x.grad()[1].isnan().all().item<bool>());
    CHECK(x.grad()[0].isfinite().all().item<bool>());
  }
  CHECK_THROWS_WITH(heads::sigsoftmax_nll_loss(torch::randn({2, 5}), torch::tensor({0, 5})),
                    Catch::Contains("[0, 5)"));
}
