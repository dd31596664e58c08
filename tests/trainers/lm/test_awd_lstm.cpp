// AWD-LSTM: weight drop touches only hidden-to-hidden weights and only in training; the decoder is
// tied to the embedding; the carried state makes segments equal one long pass; AR/TAR match their
// closed forms.

#include <catch2/catch.hpp>

#include "trainers/lm/ar_tar.h"
#include "trainers/lm/model.h"
#include "trainers/lm/weight_drop_lstm.h"

using namespace sb;
using namespace sb::lm;

namespace {

// An independent LSTM in float64, one step at a time (gate order i, f, g, o as torch.nn.LSTM).
torch::Tensor reference_lstm(const torch::Tensor& x, const torch::Tensor& w_ih,
                             const torch::Tensor& w_hh, const torch::Tensor& b_ih,
                             const torch::Tensor& b_hh) {
  const auto X = x.to(torch::kDouble), Wi = w_ih.to(torch::kDouble), Wh = w_hh.to(torch::kDouble);
  const auto b = (b_ih + b_hh).to(torch::kDouble);
  const int64_t T = x.size(0), B = x.size(1), H = w_hh.size(1);
  auto h = torch::zeros({B, H}, torch::kDouble), c = torch::zeros({B, H}, torch::kDouble);
  std::vector<torch::Tensor> outputs;
  for (int64_t t = 0; t < T; ++t) {
    const auto gates = torch::matmul(X[t], Wi.t()) + torch::matmul(h, Wh.t()) + b;  // (B, 4H)
    const auto g = gates.chunk(4, /*dim=*/1);
    c = torch::sigmoid(g[1]) * c + torch::sigmoid(g[0]) * torch::tanh(g[2]);
    h = torch::sigmoid(g[3]) * torch::tanh(c);
    outputs.push_back(h);
  }
  return torch::stack(outputs);  // (T, B, H)
}

}  // namespace

TEST_CASE("weight drop: training drops only W_hh, with one fresh mask per forward") {
  torch::manual_seed(3);
  WeightDropLstm layer(WeightDropLstmOptions(6, 8).weight_drop(0.5));
  const auto x = torch::randn({7, 3, 6});
  const auto w_ih = layer->weight_ih.detach().clone(), w_hh = layer->weight_hh_raw.detach().clone();
  layer->train();
  // The same generator state gives forward() the mask effective_weight_hh() shows.
  torch::manual_seed(11);
  const auto dropped = layer->effective_weight_hh().detach();
  torch::manual_seed(11);
  const auto [y, state] = layer->forward(x);
  // Float32 LSTM vs the float64 reference over 7 steps: 1e-5 covers float32 round-off.
  CHECK(torch::allclose(y.to(torch::kDouble),
                        reference_lstm(x, w_ih, dropped, layer->bias_ih, layer->bias_hh), 1e-5,
                        1e-5));
  // The mask: entries are 0 or w / (1 - p); 128 of 256 dropped in expectation (std 8).
  const auto zero = dropped.eq(0);
  CHECK(torch::allclose(dropped.masked_select(~zero), (w_hh * 2).masked_select(~zero)));
  const auto dropped_count = zero.sum().item<int64_t>();
  CHECK(dropped_count > 128 - 40);
  CHECK(dropped_count < 128 + 40);
  // The raw parameters are untouched, and W_ih was used as is (the reference used the raw W_ih).
  CHECK(torch::equal(layer->weight_ih, w_ih));
  CHECK(torch::equal(layer->weight_hh_raw, w_hh));
  // DropConnect gradient: zero exactly where the weight was dropped.
  y.sum().backward();
  CHECK(torch::all(layer->weight_hh_raw.grad().masked_select(zero).eq(0)).item<bool>());
  CHECK(layer->weight_ih.grad().ne(0).sum().item<int64_t>() > 0);
  // A second forward draws a new mask.
  CHECK_FALSE(torch::equal(layer->forward(x).first, y));
}

TEST_CASE("weight drop: evaluation uses the raw weights and is deterministic") {
  torch::manual_seed(4);
  WeightDropLstm layer(WeightDropLstmOptions(5, 4).weight_drop(0.5));
  layer->eval();
  const auto x = torch::randn({6, 2, 5});
  const auto y = layer->forward(x).first;
  CHECK(torch::equal(layer->forward(x).first, y));
  CHECK(torch::allclose(
      y.to(torch::kDouble),
      reference_lstm(x, layer->weight_ih, layer->weight_hh_raw, layer->bias_ih, layer->bias_hh),
      1e-5, 1e-5));
  CHECK_THROWS_WITH(WeightDropLstm(WeightDropLstmOptions(5, 4).weight_drop(1.0)),
                    Catch::Contains("0 <= p < 1, got 1"));
}

namespace {
AwdLstm tiny_model(const std::string& head, int64_t nhidlast = 0) {
  return AwdLstm(AwdLstmOptions(/*vocab_size=*/30, HeadSpec::parse(head))
                     .emsize(8)
                     .nhid(12)
                     .nhidlast(nhidlast)
                     .nlayers(3)
                     .dropoutl(0.2));
}
}  // namespace

TEST_CASE("AWD-LSTM: the decoder is the embedding (tied) with a bias, for every head") {
  for (const std::string head : {"softmax", "sigsoftmax", "mos:K=3", "moss:K=3"}) {
    INFO(head);
    torch::manual_seed(5);
    auto model = tiny_model(head, head.rfind("mo", 0) == 0 ? 10 : 0);
    model->eval();
    const auto ids = torch::randint(0, 5, {9, 2}, torch::kLong);  // inputs use words 0..4 only
    const auto targets = torch::randint(0, 30, {18}, torch::kLong);
    auto out = model->forward(ids);
    model->loss(out.output, targets).backward();
    // Row 29 of the embedding never enters as an input, so its gradient comes from the decoder.
    CHECK(model->embedding.grad()[29].abs().sum().item<double>() > 0);
    CHECK(model->decoder_bias.grad().abs().sum().item<double>() > 0);
    // log P is a distribution over M: logsumexp = 0 to float32 round-off (1e-5).
    const auto log_p = model->log_probs(out.output);  // (18, 30)
    CHECK(log_p.sizes() == torch::IntArrayRef({18, 30}));
    CHECK(torch::allclose(log_p.logsumexp(/*dim=*/1), torch::zeros({18}), 0, 1e-5));
    // The training loss (fused kernels for sigsoftmax) equals the NLL of log_probs in eval mode.
    CHECK(model->loss(out.output, targets).item<double>() ==
          Approx(torch::nll_loss(log_p, targets).item<double>()).epsilon(1e-5));
    CHECK(model->d() == 8);
  }
}

TEST_CASE("AWD-LSTM: dropout only in training, the carried state joins segments exactly") {
  torch::manual_seed(6);
  auto model = tiny_model("softmax");
  const auto ids = torch::randint(0, 30, {10, 3}, torch::kLong);
  model->train();
  CHECK_FALSE(torch::equal(model->forward(ids).output, model->forward(ids).output));
  model->eval();
  const auto whole = model->forward(ids);
  CHECK(torch::equal(model->forward(ids).output, whole.output));
  const auto first = model->forward(ids.slice(0, 0, 4));
  const auto second = model->forward(ids.slice(0, 4), first.state);
  // Same float32 ops in a different grouping of time steps: 1e-6.
  CHECK(torch::allclose(torch::cat({first.output, second.output}), whole.output, 1e-6, 1e-6));
  CHECK(torch::allclose(second.state.back().first, whole.state.back().first, 1e-6, 1e-6));
}

TEST_CASE("AWD-LSTM: a single head needs the last layer to have emsize units") {
  CHECK_THROWS_WITH(tiny_model("softmax", 10), Catch::Contains("nhidlast must equal emsize 8"));
  CHECK_NOTHROW(tiny_model("mos:K=2", 10));
  auto model = tiny_model("softmax");
  CHECK_THROWS_WITH(model->forward(torch::zeros({3, 2})), Catch::Contains("int64 (T, B)"));
}

TEST_CASE("AR and TAR equal their closed forms") {
  const auto h = torch::randn({5, 2, 3}, torch::kDouble);
  double ar = 0, tar = 0;
  auto a = h.accessor<double, 3>();
  for (int t = 0; t < 5; ++t)
    for (int b = 0; b < 2; ++b)
      for (int k = 0; k < 3; ++k) {
        ar += a[t][b][k] * a[t][b][k] / 30;
        if (t > 0) tar += std::pow(a[t][b][k] - a[t - 1][b][k], 2) / 24;
      }
  CHECK(activation_regularisation(h, 2).item<double>() == Approx(2 * ar).epsilon(1e-12));
  CHECK(temporal_activation_regularisation(h, 1).item<double>() == Approx(tar).epsilon(1e-12));
  CHECK(temporal_activation_regularisation(h.slice(0, 0, 1), 1).item<double>() == 0);
}
