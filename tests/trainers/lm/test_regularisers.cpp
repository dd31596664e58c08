// AWD-LSTM regularisers: locked dropout shares one mask over time; embedding dropout drops whole
// words. Both are the identity outside training.

#include <catch2/catch.hpp>

#include "trainers/lm/embedding_dropout.h"
#include "trainers/lm/locked_dropout.h"

using namespace sb::lm;

TEST_CASE("locked dropout: one mask for all time steps, scaled by 1 / (1 - p)") {
  torch::manual_seed(1);
  const double p = 0.4;
  const auto x = torch::rand({35, 20, 50}) + 0.5;  // strictly positive: zeros only from the mask
  const auto y = locked_dropout(x, p, /*training=*/true);
  const auto ratio = y / x;  // (T, B, H): 0 or 1 / (1 - p)
  // Identical mask at every time step: the zero pattern exactly, the scale to float round-off
  // of (x m) / x (1e-6 relative).
  const auto zeros = y.eq(0);
  CHECK(torch::equal(zeros, zeros[0].unsqueeze(0).expand_as(zeros)));
  CHECK(torch::allclose(ratio, ratio[0].unsqueeze(0).expand_as(ratio), 1e-6, 1e-6));
  const auto kept = ratio[0] > 0;
  CHECK(torch::allclose(ratio[0].masked_select(kept), torch::full({}, 1 / (1 - p)), 1e-6, 1e-6));
  // 1000 Bernoulli(0.6) draws: std of the kept fraction is 0.015; 0.06 is 4 sigma.
  const double frac = kept.to(torch::kDouble).mean().item<double>();
  CHECK(std::abs(frac - (1 - p)) < 0.06);
  // Different sequences (columns) get different masks.
  CHECK_FALSE(torch::equal(kept.select(0, 0), kept.select(0, 1)));
}

TEST_CASE("locked dropout: identity in evaluation and at p = 0, p outside 0 <= p < 1 is an error") {
  const auto x = torch::randn({5, 3, 4});
  CHECK(torch::equal(locked_dropout(x, 0.5, /*training=*/false), x));
  CHECK(torch::equal(locked_dropout(x, 0.0, /*training=*/true), x));
  LockedDropout module(LockedDropoutOptions().p(0.3));
  module->eval();
  CHECK(torch::equal(module(x), x));
  module->train();
  CHECK_FALSE(torch::equal(module(x), x));
  CHECK_THROWS_WITH(locked_dropout(x, 1.0, true), Catch::Contains("0 <= p < 1, got 1"));
  CHECK_THROWS_WITH(LockedDropout(LockedDropoutOptions().p(-0.1)), Catch::Contains("0 <= p < 1"));
}

TEST_CASE("embedding dropout: a dropped word is zero at every position, kept words are scaled") {
  torch::manual_seed(2);
  const double p = 0.5;
  const auto weight = (torch::rand({8, 6}) + 0.5).requires_grad_(true);   // (V, E), no zeros
  const auto ids = torch::randint(8, {40, 5}, torch::kLong);              // (T, B)
  const auto out = embedding_dropout(weight, ids, p, /*training=*/true);  // (T, B, E)
  const auto plain = torch::embedding(weight, ids).detach();
  const auto ratio = (out.detach() / plain);
  bool some_dropped = false, some_kept = false;
  for (int64_t w = 0; w < 8; ++w) {
    const auto at = ids.eq(w);
    if (!at.any().item<bool>()) continue;
    const auto r = ratio.index({at});  // (occurrences, E)
    const double first = r[0][0].item<double>();
    CHECK((first == 0.0 || std::abs(first - 1 / (1 - p)) < 1e-6));
    CHECK(torch::allclose(r, torch::full_like(r, first)));  // the same for all occurrences
    (first == 0.0 ? some_dropped : some_kept) = true;
  }
  CHECK(some_dropped);
  CHECK(some_kept);
  // Gradients reach only the kept rows.
  out.sum().backward();
  for (int64_t w = 0; w < 8; ++w) {
    const auto at = ids.eq(w);
    if (!at.any().item<bool>()) continue;
    const bool dropped = ratio.index({at})[0][0].item<double>() == 0.0;
    CHECK(weight.grad()[w].abs().sum().item<double>() == Approx(0.0).margin(dropped ? 0.0 : 1e30));
    if (!dropped) CHECK(weight.grad()[w].abs().sum().item<double>() > 0);
  }
  CHECK(torch::equal(embedding_dropout(weight, ids, p, /*training=*/false),
                     torch::embedding(weight, ids)));
  CHECK_THROWS_WITH(embedding_dropout(weight, ids, 1.5, true), Catch::Contains("0 <= p < 1"));
}
