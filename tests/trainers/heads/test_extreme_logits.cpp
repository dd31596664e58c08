// Extreme logits: huge rows, deep negative rows, all-equal rows, the WikiText-2 vocabulary size,
// and float32 against float64.

#include <catch2/catch.hpp>

#include "tests/fixtures/head_test_helpers.h"
#include "trainers/heads/g_sigmoid.h"
#include "trainers/heads/output_head.h"
#include "trainers/heads/sigsoftmax.h"

using namespace sb;
using sb::test::f64;

TEST_CASE("extreme logits: rows of +-1e4 give finite log-probabilities that normalise") {
  auto z = torch::full({4, 20}, 1e4, f64());
  z[1].fill_(-1e4);
  z[2].slice(0, 0, 10).fill_(-1e4);  // half +1e4, half -1e4
  z[3] = torch::linspace(-1e4, 1e4, 20, f64());
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    for (const auto& spec : test::parameter_free_specs()) {
      if (spec.kind == HeadKind::sparse) continue;  // -inf off the top k by definition
      INFO(spec.to_string() << " " << dtype);
      const auto out = heads::log_output(spec, z.to(dtype)).to(torch::kFloat64);
      CHECK(out.isfinite().all().item<bool>());
      CHECK(test::max_abs(out.exp().sum(-1) - 1) < 1e-5);
    }
  }
}

TEST_CASE("sigsoftmax: the row [-300, -200, -150] is finite and follows 2(z - max z)") {
  const auto z = torch::tensor({{-300.0, -200.0, -150.0}}, f64());
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    for (const auto& fn : {heads::log_sigsoftmax, heads::log_sigsoftmax_composed}) {
      INFO(dtype);
      const auto out = fn(z.to(dtype)).to(torch::kFloat64);
      REQUIRE(out.isfinite().all().item<bool>());
      // log g(z) = 2z - softplus(z) = 2z - O(e^z): the asymptote is exact to ~e^-150 in float64;
      // float32 rounds values of size 300 to ~3e-5.
      const double tol = dtype == torch::kFloat64 ? 1e-12 : 1e-4;
      CHECK(test::max_abs(out - 2 * (z - z.max())) < tol);
    }
  }
}

TEST_CASE("g:sigmoid: deep negative rows tend to softmax, deep positive rows to uniform") {
  auto z = torch::tensor({{-300.0, -200.0, -150.0}, {300.0, 200.0, 150.0}}, f64());
  const auto out = heads::log_g_sigmoid(z);
  // logsigmoid(z) = z - log1p(e^z) -> z for z << 0; sigmoid(z) = 1 - e^-z for z >> 0.
  CHECK(test::max_abs(out[0] - torch::log_softmax(z[0], 0)) < 1e-12);
  CHECK(test::max_abs(out[1] + std::log(3.0)) < 1e-12);
}

TEST_CASE("extreme logits: all-equal rows give the uniform distribution") {
  for (const double c : {-1e4, -37.0, 0.0, 2.5, 1e4}) {
    const auto z = torch::full({2, 17}, c, f64());
    for (const auto& spec : test::parameter_free_specs()) {
      if (spec.kind == HeadKind::sparse) continue;  // ties: k of the 17 keep mass
      INFO(spec.to_string() << " c = " << c);
      CHECK(test::max_abs(heads::log_output(spec, z) + std::log(17.0)) < 1e-12);
    }
  }
}

TEST_CASE("extreme logits: M = 33278 in float32 agrees with float64") {
  torch::manual_seed(11);
  const auto z64 = torch::randn({4, 33278}, f64()) * 6;
  for (const auto& spec : test::parameter_free_specs()) {
    INFO(spec.to_string());
    const auto ref = heads::log_output(spec, z64);
    const auto out = heads::log_output(spec, z64.to(torch::kFloat32)).to(torch::kFloat64);
    const auto finite = ref.isfinite();
    CHECK(torch::equal(finite, out.isfinite()));
    // float32 inputs are z64 rounded (rel. 6e-8, so up to ~2e-6 on |z| ~ 30), then log-outputs of
    // size up to ~60 carry ~4e-6 rounding and the 33278-term sum ~1e-6: 5e-5 absolute.
    const auto diff = torch::where(finite, out - ref, torch::zeros_like(ref));
    CHECK(test::max_abs(diff) < 5e-5);
  }
}
