// The BLAS threading pitfall (issue 1/4): one training step of a 2-layer 200-unit LSTM LM
// (batch 20, BPTT 35, M = 10000), timed in this process. bench/blas_threads.sh runs it once on
// the OpenMP OpenBLAS our binaries load (rpath) and once with Debian's default pthread build
// preloaded, and prints the ratio.

#include <cstdio>
#include <string>

#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include "bench/loaded_library.h"

namespace {

void lstm_step(benchmark::State& state) {
  torch::manual_seed(0);
  const int64_t vocab = 10000, hidden = 200, batch = 20, bptt = 35;
  torch::nn::Embedding emb(vocab, hidden);
  torch::nn::LSTM lstm(torch::nn::LSTMOptions(hidden, hidden).num_layers(2));
  torch::nn::Linear dec(hidden, vocab);
  dec->weight = emb->weight;  // tied
  auto params = emb->parameters();
  for (auto& p : lstm->parameters()) params.push_back(p);
  params.push_back(dec->bias);
  torch::optim::SGD opt(params, torch::optim::SGDOptions(1.0));
  const auto x = torch::randint(vocab, {bptt, batch}, torch::kLong);
  const auto y = torch::randint(vocab, {bptt * batch}, torch::kLong);
  for (auto _ : state) {
    opt.zero_grad();
    auto out = std::get<0>(lstm(emb(x)));  // (T, B, H)
    auto loss = torch::nll_loss(torch::log_softmax(dec(out.view({-1, hidden})), -1), y);
    loss.backward();
    opt.step();
  }
  state.SetItemsProcessed(state.iterations() * bptt * batch);  // tokens
  state.SetLabel(sb::bench::loaded_library("libopenblas"));
}

}  // namespace

BENCHMARK(lstm_step)->Unit(benchmark::kMillisecond)->MinTime(3.0)->UseRealTime();

int main(int argc, char** argv) {
  torch::set_num_threads(2);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
