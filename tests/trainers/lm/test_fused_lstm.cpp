// fused_lstm (trainers/lm/fused_lstm.h) against at::lstm, the function it replaces: outputs, the
// final state and every gradient (input, h0, c0, both weights, both biases) under random upstream
// gradients on all three outputs. float64 to 1e-10 relative (the two differ only in the order of
// the sums: the weight gradient as one product over the window against a sum of T products, the
// 1e-16 rounding of each over T = 7 steps and small sizes stays far below 1e-10); float32 to
// 1e-4 relative (the same differences at float32's 6e-8 rounding, grown through the
// recurrence). A model with fused_lstm = true trains to the same loss as at::lstm's.

#include <catch2/catch.hpp>

#include "trainers/lm/fused_lstm.h"
#include "trainers/lm/model.h"
#include "trainers/lm/train_step.h"
#include "trainers/lm/weight_drop_lstm.h"

using namespace sb::lm;

namespace {

struct LstmRun {
  std::vector<torch::Tensor> values;  // output, h_T, c_T, then the 7 inputs' gradients
};

// One run of `fused` or at::lstm over the same inputs and upstream gradients.
LstmRun run_lstm(bool fused, torch::ScalarType dtype, int64_t steps, int64_t batch, int64_t in,
                 int64_t hidden) {
  torch::manual_seed(7);
  auto opts = torch::TensorOptions().dtype(dtype);
  auto leaf = [&](std::vector<int64_t> shape) {
    return (torch::rand(shape, opts) - 0.5).mul_(1.2).requires_grad_(true);
  };
  auto x = leaf({steps, batch, in}), h0 = leaf({1, batch, hidden}), c0 = leaf({1, batch, hidden});
  auto w_ih = leaf({4 * hidden, in}), w_hh = leaf({4 * hidden, hidden});
  auto b_ih = leaf({4 * hidden}), b_hh = leaf({4 * hidden});
  auto g_out = torch::randn({steps, batch, hidden}, opts);
  auto g_h = torch::randn({1, batch, hidden}, opts), g_c = torch::randn({1, batch, hidden}, opts);
  torch::Tensor out, h, c;
  if (fused) {
    std::tie(out, h, c) = fused_lstm(x, h0, c0, w_ih, w_hh, b_ih, b_hh);
  } else {
    std::tie(out, h, c) = at::lstm(x, {h0, c0}, {w_ih, w_hh, b_ih, b_hh}, /*has_biases=*/true,
                                   /*num_layers=*/1, /*dropout=*/0.0, /*train=*/true,
                                   /*bidirectional=*/false, /*batch_first=*/false);
  }
  torch::autograd::backward({out, h, c}, {g_out, g_h, g_c});
  LstmRun r;
  r.values = {out.detach(), h.detach(), c.detach()};
  for (const auto& t : {x, h0, c0, w_ih, w_hh, b_ih, b_hh}) r.values.push_back(t.grad());
  return r;
}

double max_relative(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item<double>();
}

}  // namespace

TEST_CASE("fused_lstm gives at::lstm's outputs and gradients in float64", "[fused_lstm]") {
  const auto fused = run_lstm(true, torch::kDouble, 7, 3, 5, 4);
  const auto aten = run_lstm(false, torch::kDouble, 7, 3, 5, 4);
  const char* names[] = {"output", "h_T",    "c_T",    "d input", "d h0",
                         "d c0",   "d w_ih", "d w_hh", "d b_ih",  "d b_hh"};
  for (size_t i = 0; i < aten.values.size(); ++i) {
    INFO(names[i]);
    REQUIRE(fused.values[i].sizes() == aten.values[i].sizes());
    CHECK(max_relative(fused.values[i], aten.values[i]) < 1e-10);
  }
}

TEST_CASE("fused_lstm gives at::lstm's outputs and gradients in float32, one step and many",
          "[fused_lstm]") {
  for (int64_t steps : {1, 35}) {
    const auto fused = run_lstm(true, torch::kFloat, steps, 20, 100, 64);
    const auto aten = run_lstm(false, torch::kFloat, steps, 20, 100, 64);
    for (size_t i = 0; i < aten.values.size(); ++i) {
      INFO("steps " << steps << ", value " << i);
      CHECK(max_relative(fused.values[i], aten.values[i]) < 1e-4);
    }
  }
}

TEST_CASE("fused_lstm refuses a double backward instead of giving a wrong one", "[fused_lstm]") {
  auto x = torch::rand({2, 1, 3}, torch::kDouble).requires_grad_(true);
  auto w_ih = torch::rand({8, 3}, torch::kDouble).requires_grad_(true);
  auto w_hh = torch::rand({8, 2}, torch::kDouble), b = torch::zeros({8}, torch::kDouble);
  auto z = torch::zeros({1, 1, 2}, torch::kDouble);
  auto [out, h, c] = fused_lstm(x, z, z, w_ih, w_hh, b, b);
  CHECK_THROWS_AS(torch::autograd::grad({out.sum()}, {x}, {}, /*retain_graph=*/true,
                                        /*create_graph=*/true),
                  std::logic_error);
}

TEST_CASE("a model with fused_lstm trains to at::lstm's losses over ten steps", "[fused_lstm]") {
  // Weight drop on, so the fused path gets the dropped weight through autograd as at::lstm does.
  auto losses = [](bool fused) {
    torch::manual_seed(3);
    AwdLstm model(AwdLstmOptions(50, sb::HeadSpec::parse("softmax"))
                      .emsize(8)
                      .nhid(12)
                      .nlayers(2)
                      .wdrop(0.3)
                      .fused_lstm(fused));
    model->train();
    const auto params = model->parameters();
    auto state = model->zero_state(4);
    std::vector<double> out;
    for (int step = 0; step < 10; ++step) {
      const auto x = torch::randint(50, {6, 4}), y = torch::randint(50, {6, 4});
      model->zero_grad();
      auto s = segment_loss(model, x, y, state, /*alpha=*/2, /*beta=*/1);
      out.push_back(s.raw_loss.item<double>());
      s.loss.backward();
      clipped_sgd_step(params, /*clip=*/0.25, /*lr=*/5, /*wdecay=*/1.2e-6);
      state = std::move(s.state);
    }
    return out;
  };
  const auto fused = losses(true), aten = losses(false);
  for (size_t i = 0; i < aten.size(); ++i) {
    INFO("step " << i);
    CHECK(fused[i] == Approx(aten[i]).epsilon(1e-4));  // float32 rounding over ten SGD steps
  }
  CHECK(aten.back() != aten.front());  // it trains: the check compares moving losses
}
