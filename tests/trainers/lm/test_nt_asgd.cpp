// NT-ASGD: the non-monotone trigger fires exactly where the rule says; the averaged weights are
// the mean of the iterates since the trigger; SGD with weight decay matches its closed form.

#include <catch2/catch.hpp>

#include "trainers/lm/nt_asgd.h"

using namespace sb::lm;

TEST_CASE("NT-ASGD: the trigger fires on the first loss worse than the best before the last n") {
  // n = 3. The rule needs > 3 earlier losses; loss 5.0 at index 4 compares with min(hist[:-3]) =
  // min(9) -> no; index 5 (5.5) vs min(9, 8) -> no; index 6 (8.5) vs min(9, 8, 7) = 7 -> fires.
  NonMonotoneTrigger trigger(3);
  const std::vector<double> losses{9, 8, 7, 6, 5.0, 5.5, 8.5, 4};
  std::vector<int> fired;
  for (size_t i = 0; i < losses.size(); ++i)
    if (trigger.observe(losses[i])) fired.push_back(static_cast<int>(i));
  // 8.5 > 7 fires (index 6); 4 is better than everything (index 7 does not fire).
  CHECK(fired == std::vector<int>{6});
  CHECK(trigger.history() == losses);
}

TEST_CASE("NT-ASGD: a loss equal to the old best does not fire, the n most recent are ignored") {
  NonMonotoneTrigger trigger(2);
  for (double loss : {5.0, 4.0, 9.0}) CHECK_FALSE(trigger.observe(loss));  // <= 2 earlier
  CHECK_FALSE(trigger.observe(5.0));  // min(hist[:-2]) = 5: equal is not worse
  CHECK(trigger.observe(4.5));        // min(5, 4) = 4 < 4.5; the recent 9 and 5 do not count
  CHECK_THROWS_WITH(NonMonotoneTrigger(0), Catch::Contains("nonmono must be >= 1, got 0"));
}

TEST_CASE("NT-ASGD: averaged weights are the mean of the iterates since the trigger") {
  torch::manual_seed(2);
  auto p = torch::randn({4, 3}, torch::requires_grad());
  std::vector<torch::Tensor> params{p};
  // Three SGD steps before the trigger are not averaged.
  for (int i = 0; i < 3; ++i) {
    p.mutable_grad() = torch::randn({4, 3});
    sgd_step(params, 0.5, 0.0);
  }
  ParameterAverager averager;
  averager.start(params);
  auto sum = torch::zeros({4, 3}, torch::kDouble);
  for (int i = 0; i < 50; ++i) {
    p.mutable_grad() = torch::randn({4, 3});
    sgd_step(params, 0.5, 0.0);
    averager.update(params);
    sum += p.detach().to(torch::kDouble);
  }
  CHECK(averager.count() == 50);
  // Running mean in float32 vs the float64 sum / n: 50 updates, each rounding at ~6e-8 relative.
  CHECK(torch::allclose(averager.averages()[0].to(torch::kDouble), sum / 50, 1e-5, 1e-5));
  // SwapInGuard: the averages inside, the iterate back afterwards, bit for bit.
  const auto iterate = p.detach().clone();
  {
    SwapInGuard guard(params, averager.averages());
    CHECK(torch::equal(p, averager.averages()[0]));
  }
  CHECK(torch::equal(p, iterate));
}

TEST_CASE("NT-ASGD: an SGD step is p - lr (g + wdecay p), parameters without a gradient stay") {
  auto p = torch::tensor({1.0, -2.0}, torch::dtype(torch::kDouble).requires_grad(true));
  auto q = torch::tensor({3.0}, torch::dtype(torch::kDouble).requires_grad(true));
  p.mutable_grad() = torch::tensor({0.5, 0.25}, torch::kDouble);
  sgd_step({p, q}, 2.0, 0.1);
  CHECK(p[0].item<double>() == Approx(1.0 - 2.0 * (0.5 + 0.1 * 1.0)).epsilon(1e-15));
  CHECK(p[1].item<double>() == Approx(-2.0 - 2.0 * (0.25 - 0.1 * 2.0)).epsilon(1e-15));
  CHECK(q.item<double>() == 3.0);
}
