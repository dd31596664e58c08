// Normalisation, arg-max, agreement with the papers' definitions, sparse semantics, bad arguments.

#include <catch2/catch.hpp>

#include "tests/fixtures/head_test_helpers.h"
#include "trainers/heads/g_relu.h"
#include "trainers/heads/output_head.h"
#include "trainers/heads/sparse_softmax.h"
#include "trainers/heads/spherical_family.h"

using namespace sb;
using sb::test::f64;

namespace {
torch::Tensor random_logits(int64_t n, int64_t m, double scale, torch::ScalarType dtype) {
  torch::manual_seed(1234);
  return (torch::randn({n, m}, f64()) * scale).to(dtype);
}
}  // namespace

TEST_CASE("output functions: probabilities are non-negative and sum to 1 (checked in float64)") {
  for (const auto dtype : {torch::kFloat64, torch::kFloat32}) {
    const auto z = random_logits(16, 50, 3.0, dtype);
    for (const auto& spec : test::parameter_free_specs()) {
      INFO(spec.to_string() << " " << dtype);
      const auto p = heads::log_output(spec, z).to(torch::kFloat64).exp();  // (16, 50)
      CHECK(p.min().item<double>() >= 0.0);
      // float64: rounding of 50 terms ~ 1e-15; float32: ~50 * 6e-8 worst case.
      const double tol = dtype == torch::kFloat64 ? 1e-12 : 5e-6;
      CHECK(test::max_abs(p.sum(-1) - 1.0) < tol);
    }
  }
}

TEST_CASE("output functions: each head equals its definition computed naively in float64") {
  const auto z = random_logits(8, 40, 2.0, torch::kFloat64);  // |z| < ~8: the naive forms are exact
  for (const auto& spec : test::parameter_free_specs()) {
    INFO(spec.to_string());
    const auto p = heads::log_output(spec, z).exp();
    // Both are float64 evaluations of the same formula; 1e-12 allows ~1e4 ulp of reordering.
    CHECK(test::max_abs(p - test::naive_probabilities(spec, z)) < 1e-12);
  }
}

TEST_CASE("output functions: increasing heads preserve the arg-max") {
  auto z = random_logits(64, 100, 2.0, torch::kFloat64);
  z.select(1, 3).add_(10.0);  // ensure a positive maximum (g:ReLU ties all non-positive logits)
  z = z + torch::randn({64, 100}, f64()) * 3.0;
  for (const auto& spec : test::parameter_free_specs()) {
    if (!test::monotone(spec.kind)) continue;
    INFO(spec.to_string());
    CHECK(torch::equal(heads::log_output(spec, z).argmax(-1), z.argmax(-1)));
  }
}

TEST_CASE("sparse softmax: -inf off the top k, softmax over the top k, loss is eq. 5") {
  const auto z = random_logits(6, 30, 1.0, torch::kFloat64);
  const int64_t k = 4;
  const auto out = heads::log_sparse_softmax(z, k);
  CHECK((out == -std::numeric_limits<double>::infinity()).sum(-1).eq(30 - k).all().item<bool>());
  const auto top = z.topk(k, -1);
  const auto kept = out.gather(-1, std::get<1>(top));
  CHECK(test::max_abs(kept - torch::log_softmax(std::get<0>(top), -1)) < 1e-14);

  // eq. 5 for a target inside and one outside the top k: finite in both cases.
  const auto targets = torch::stack({std::get<1>(top)[0][0], z[1].argmin()}).to(torch::kLong);
  const auto rows = z.slice(0, 0, 2);
  const double expected = ((std::get<0>(rows.topk(k, -1)).logsumexp(-1) -
                            rows.gather(-1, targets.unsqueeze(-1)).squeeze(-1))
                               .mean())
                              .item<double>();
  const double got = heads::sparse_softmax_loss(rows, targets, k).item<double>();
  CHECK(std::isfinite(got));
  CHECK(got == Approx(expected).epsilon(1e-14));
  CHECK(heads::log_sparse_softmax(z, 30).isfinite().all().item<bool>());  // k = M: plain softmax
}

TEST_CASE("output functions: bad arguments give errors naming the problem") {
  const auto z = torch::randn({4, 10});
  const auto spec = HeadSpec::of(HeadKind::softmax);
  CHECK_THROWS_WITH(heads::log_output(spec, torch::randn({10})),
                    Catch::Contains("expected rank 2") && Catch::Contains("[10]"));
  CHECK_THROWS_WITH(heads::log_output(spec, torch::randn({2, 3, 4})),
                    Catch::Contains("expected rank 2"));
  CHECK_THROWS_WITH(heads::log_output(spec, torch::ones({2, 3}, torch::kLong)),
                    Catch::Contains("floating-point"));
  CHECK_THROWS_WITH(heads::log_output(spec, torch::randn({2, 0})), Catch::Contains("M >= 1"));
  CHECK_THROWS_WITH(heads::log_sparse_softmax(z, 0), Catch::Contains("1 <= k <= M = 10"));
  CHECK_THROWS_WITH(heads::log_sparse_softmax(z, 11), Catch::Contains("got k = 11"));
  CHECK_THROWS_WITH(heads::log_spherical_softmax(z, 0.0), Catch::Contains("eps must be > 0"));
  CHECK_THROWS_WITH(heads::log_g_relu(z, -1.0), Catch::Contains("eps must be > 0"));
  CHECK_THROWS_WITH(heads::sparse_softmax_loss(z, torch::tensor({0, 1, 2, 10}), 3),
                    Catch::Contains("[0, 10)"));
  CHECK_THROWS_WITH(heads::log_output(HeadSpec::of(HeadKind::mos), z),
                    Catch::Contains("use OutputHead"));
  // Undefined targets: the documented std::logic_error (a caller's programming error), not a
  // c10::Error from sizes().
  CHECK_THROWS_AS(heads::sparse_softmax_loss(z, torch::Tensor(), 3), std::logic_error);
  CHECK_THROWS_WITH(heads::sigsoftmax_nll_loss(z, torch::Tensor()),
                    Catch::Contains("targets are undefined"));
}

TEST_CASE("OutputHead: single heads apply their function to the decoder's logits") {
  torch::manual_seed(7);
  const auto h = torch::randn({5, 6}, f64()), w = torch::randn({12, 6}, f64()),
             b = torch::randn({12}, f64());
  const auto targets = torch::tensor({0, 3, 11, 5, 7}, torch::kLong);
  for (const auto& spec : test::parameter_free_specs()) {
    INFO(spec.to_string());
    heads::OutputHead head(heads::OutputHeadOptions(spec, 6, 6));
    head->to(torch::kFloat64);
    const auto logits = torch::addmm(b, h, w.t());
    const auto got = head(h, w, b), want = heads::log_output(spec, logits);
    REQUIRE(torch::equal(got.isfinite(), want.isfinite()));  // sparse: -inf off the top k
    CHECK(test::max_abs(torch::where(want.isfinite(), got - want, torch::zeros_like(got))) < 1e-13);
    const double loss = head->loss(h, w, b, targets).item<double>();
    const double expected =
        spec.kind == HeadKind::sparse
            ? heads::sparse_softmax_loss(logits, targets, spec.k).item<double>()
            : torch::nll_loss(heads::log_output(spec, logits), targets).item<double>();
    CHECK(loss == Approx(expected).epsilon(1e-13));
  }
  CHECK_THROWS_WITH(
      heads::OutputHead(heads::OutputHeadOptions(HeadSpec::of(HeadKind::softmax), 7, 6)),
      Catch::Contains("must equal embedding_size"));
}
