// The C++ half of the reference-parity test (tests/test_reference_parity.py): builds the speed
// benchmark's AWD-LSTM (bench/wordlm_bench_model.h) from a fixed seed, writes its initial
// parameters and a synthetic token stream to an HDF5 file, trains it for a few steps with the
// trainer's step (trainers/lm/train_step.h) and the benchmark's settings, and adds the per-step
// losses to the file. The Python half loads the same parameters into bench/wordlm_reference.py,
// runs the same steps and compares.
//   wordlm_parity --head softmax|sigsoftmax|mos|moss --out FILE.h5 [--experts 2] [--steps 10]
//                 [--vocab 10000] [--dropout 0] [--dtype float32|float64] [--seed 1]
//                 [--threads 1]
// FILE.h5 (written to FILE.h5.tmp.<pid>, then renamed):
//   attributes  head, experts, vocab_size, steps, batch_size, bptt, dropout, dtype, seed, lr,
//               wdecay, clip, alpha, beta: the settings this side used; bench_dropout,
//               bench_experts: the benchmark's defaults (bench/wordlm_bench_model.h)
//   ids                  int64 (steps * bptt + 1, batch_size): the batchified token stream; step s
//                        reads rows [s bptt, (s + 1) bptt] (input rows and the shifted targets)
//   parameters/<name>    float32, the initial value of every parameter by its C++ name
//                        (embedding, decoder_bias, rnn<l>.weight_ih, rnn<l>.weight_hh_raw,
//                        rnn<l>.bias_ih, rnn<l>.bias_hh, head.mixture.latent.weight, ...)
//   bernoulli_probe      float32 (64): torch::empty(64).bernoulli_(0.8) right after
//                        manual_seed(seed); equal on both sides: the same Bernoulli stream,
//                        so the same dropout masks when both draw them in the same order
//   cpp/raw_loss         float64 (steps): the head's mean NLL at each step, before its update
//   cpp/loss             float64 (steps): raw_loss + AR + TAR (the differentiated objective)
//   cpp/grad_norm        float64 (steps): the global gradient norm before clipping
// Training starts from manual_seed(seed) (the dropout masks' stream), in train mode, the LSTM
// state carried across steps as in the benchmark; --dtype float64 trains in float64 from the
// float32 initial values (exactly representable), so that only float64 rounding separates the
// two sides.

#include <torch/torch.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "contract/hdf5_handles.h"
#include "datasets/batchify.h"
#include "bench/wordlm_bench_model.h"
#include "trainers/runkit/process_setup.h"
#include "trainers/lm/train_step.h"

namespace {

namespace h5 = sb::contract::h5;
using namespace sb::bench;

struct Options {
  std::string head, out, dtype = "float32";
  int64_t experts = kExperts, steps = 10, vocab = 10000, seed = 1, threads = 1;
  double dropout = 0;
};

/// (rows, B) int64 token ids drawn i.i.d. from a Zipf law p(i) ~ 1 / (i + 1) over the vocabulary
/// (a word-frequency-like stream, so the first steps have something to learn: the unigram).
torch::Tensor synthetic_stream(int64_t rows, int64_t batch, int64_t vocab) {
  const auto p = 1.0 / torch::arange(1, vocab + 1, torch::kDouble);  // (M)
  return torch::multinomial(p, rows * batch, /*replacement=*/true).view({rows, batch});
}

void write_attributes(hid_t file, const Options& o) {
  h5::write_attribute(file, "head", o.head);
  h5::write_attribute(file, "experts", o.experts);
  h5::write_attribute(file, "vocab_size", o.vocab);
  h5::write_attribute(file, "steps", o.steps);
  h5::write_attribute(file, "batch_size", kBatch);
  h5::write_attribute(file, "bptt", kBptt);
  h5::write_attribute(file, "dropout", o.dropout);
  h5::write_attribute(file, "dtype", o.dtype);
  h5::write_attribute(file, "seed", o.seed);
  h5::write_attribute(file, "lr", kLr);
  h5::write_attribute(file, "wdecay", kWdecay);
  h5::write_attribute(file, "clip", kClip);
  h5::write_attribute(file, "alpha", kAlpha);
  h5::write_attribute(file, "beta", kBeta);
  h5::write_attribute(file, "bench_dropout", kDropout);  // the benchmark's defaults
  h5::write_attribute(file, "bench_experts", kExperts);
}

void write_tensor(hid_t file, const std::string& name, const torch::Tensor& t) {
  const std::vector<hsize_t> dims(t.sizes().begin(), t.sizes().end());
  if (t.scalar_type() == torch::kLong) {
    const auto c = t.contiguous();
    h5::write_array(file, name, dims, c.data_ptr<int64_t>());
  } else {
    const auto c = t.detach().to(torch::kFloat).contiguous();
    h5::write_array(file, name, dims, c.data_ptr<float>());
  }
}

int run(const Options& o) {
  sb::runkit::keep_freed_memory();  // as train_wordlm and bench_wordlm
  sb::runkit::set_threads(o.threads);
  torch::manual_seed(o.seed);
  auto model = make_bench_model(o.head, o.experts, o.vocab, o.dropout);
  const auto data = synthetic_stream(o.steps * kBptt + 1, kBatch, o.vocab);  // (rows, B)

  const auto tmp = h5::temporary_path(o.out);
  try {
    auto file = h5::create_file(tmp);
    write_attributes(file.get(), o);
    write_tensor(file.get(), "ids", data);
    {
      auto group = h5::create_group(file.get(), "parameters");
      for (const auto& p : model->named_parameters()) write_tensor(group.get(), p.key(), p.value());
    }
    torch::manual_seed(o.seed);
    write_tensor(file.get(), "bernoulli_probe", torch::empty({64}).bernoulli_(0.8));

    if (o.dtype == "float64") model->to(torch::kDouble);  // from the float32 values written
    torch::manual_seed(o.seed);  // the dropout masks' stream, as the Python side seeds it
    model->train();
    const auto params = model->parameters();
    auto state = model->zero_state(kBatch);
    std::vector<double> raw_loss, loss, grad_norm;
    for (int64_t s = 0; s < o.steps; ++s) {
      auto [x, y] = sb::data::get_batch(data, s * kBptt, kBptt);  // (T, B)
      model->zero_grad();
      auto step = sb::lm::segment_loss(model, x, y, state, kAlpha, kBeta);
      raw_loss.push_back(step.raw_loss.item<double>());
      loss.push_back(step.loss.item<double>());
      step.loss.backward();
      grad_norm.push_back(sb::lm::clipped_sgd_step(params, kClip, kLr, kWdecay));
      state = std::move(step.state);
      std::printf("cpp step %lld: loss %.8f\n", static_cast<long long>(s), raw_loss.back());
    }
    auto group = h5::create_group(file.get(), "cpp");
    h5::write_vector(group.get(), "raw_loss", raw_loss);
    h5::write_vector(group.get(), "loss", loss);
    h5::write_vector(group.get(), "grad_norm", grad_norm);
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  h5::commit_file(tmp, o.out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "C++ half of the reference-parity test: initial weights, tokens and per-step losses of the "
      "benchmark's LM, for tests/test_reference_parity.py"};
  Options o;
  app.add_option("--head", o.head, "output head")
      ->required()
      ->check(CLI::IsMember({"softmax", "sigsoftmax", "mos", "moss"}));
  app.add_option("--out", o.out, "HDF5 file to write")->required();
  app.add_option("--experts", o.experts, "K of mos/moss")->check(CLI::PositiveNumber);
  app.add_option("--steps", o.steps, "training steps")->check(CLI::PositiveNumber);
  app.add_option("--vocab", o.vocab, "vocabulary size M")->check(CLI::Range(2, 1 << 24));
  app.add_option("--dropout", o.dropout, "every locked dropout's p")->check(CLI::Range(0.0, 0.99));
  app.add_option("--dtype", o.dtype, "parameters' dtype during training (written as float32)")
      ->check(CLI::IsMember({"float32", "float64"}));
  app.add_option("--seed", o.seed, "seed of the weights, tokens and dropout masks");
  app.add_option("--threads", o.threads, "torch threads")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wordlm_parity: %s\n", e.what());
    return 1;
  }
}
