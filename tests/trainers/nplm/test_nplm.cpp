// The feed-forward LM (train_nplm): context windows at sentence boundaries, the unigram output
// bias of every head, the config, and on a slice of PTB: it learns (beats the unigram model it
// starts from), an interrupted and resumed run equals an uninterrupted one bit for bit, the dump
// follows the HDF5 contract, a non-finite loss stops the run, the binary's bad-input exits.

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "common/head_spec.h"
#include "contract/logprob_file.h"
#include "datasets/corpus.h"
#include "tests/fixtures/corpus_or_skip.h"
#include "tests/fixtures/run_command.h"
#include "tests/fixtures/run_outputs.h"
#include "tests/fixtures/temp_dir.h"
#include "tests/fixtures/tiny_config.h"
#include "tests/fixtures/trainer_help.h"
#include "trainers/heads/output_head.h"
#include "trainers/heads/unigram_bias.h"
#include "trainers/nplm/config.h"
#include "trainers/nplm/contexts.h"
#include "trainers/nplm/trainer.h"
#include "trainers/runkit/interrupt.h"

using namespace sb;
using namespace sb::nplm;
using sb::heads::unigram;
using sb::heads::unigram_bias;
namespace fs = std::filesystem;
using namespace sb::test;  // tests/fixtures/

namespace {

NplmConfig tiny_config(const fs::path& out) { return load_tiny_config(key_table(), "nplm", out); }

std::vector<int64_t> row(const torch::Tensor& t, int64_t i) {
  const auto r = t[i].contiguous();
  return {r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + r.numel()};
}

}  // namespace

TEST_CASE(
    "nplm contexts: each token is predicted from the n tokens before it, across sentence "
    "boundaries, with <eos> padding before the first") {
  // Two sentences "a b <eos>" and "c d e <eos>" with ids a=1 b=2 c=3 d=4 e=5, <eos>=0.
  const std::vector<int64_t> ids = {1, 2, 0, 3, 4, 5, 0};
  const auto c = make_contexts(ids, /*n=*/3, /*pad=*/0);
  REQUIRE(c.inputs.sizes() == torch::IntArrayRef({7, 3}));
  CHECK(std::vector<int64_t>(c.targets.data_ptr<int64_t>(), c.targets.data_ptr<int64_t>() + 7) ==
        ids);
  CHECK(row(c.inputs, 0) == std::vector<int64_t>{0, 0, 0});  // the split's first token
  CHECK(row(c.inputs, 1) == std::vector<int64_t>{0, 0, 1});
  CHECK(row(c.inputs, 3) == std::vector<int64_t>{1, 2, 0});  // "c": crosses the first <eos>
  CHECK(row(c.inputs, 4) == std::vector<int64_t>{2, 0, 3});
  CHECK(row(c.inputs, 6) == std::vector<int64_t>{3, 4, 5});  // the last <eos> is a target
  // Every window against the definition: inputs[t][k] = ids[t - n + k], or pad before 0.
  for (int64_t t = 0; t < 7; ++t)
    for (int64_t k = 0; k < 3; ++k) {
      const int64_t src = t - 3 + k;
      CHECK(c.inputs[t][k].item<int64_t>() == (src < 0 ? 0 : ids[static_cast<size_t>(src)]));
    }
  CHECK_THROWS_WITH(make_contexts({}, 3, 0), Catch::Contains("0 tokens"));
  CHECK_THROWS_WITH(make_contexts(ids, 0, 0), Catch::Contains("context 0"));
}

TEST_CASE(
    "nplm unigram bias: with zero output weights every head outputs the unigram distribution") {
  // p: a skewed distribution over M = 50 (a Zipf law, as word frequencies), float64.
  const int64_t M = 50;
  const auto p = 1.0 / torch::arange(1, M + 1, torch::kDouble);
  const auto unigram_p = p / p.sum();
  for (const char* name : {"softmax", "softmax_abs", "spherical", "spherical:eps=0.5", "taylor",
                           "sigsoftmax", "sigmoid", "relu"}) {
    INFO(name);
    const auto spec = HeadSpec::parse(name);
    const auto b = unigram_bias(spec, unigram_p);  // (M)
    const auto log_f = heads::log_output(spec, b.unsqueeze(0))[0];
    // float64 closed forms (Newton for sigsoftmax; relu exact while p / p_max > eps): equal to
    // 1e-10 in log space, far above float64 rounding of M = 50 terms, far below any real error.
    CHECK((log_f - unigram_p.log()).abs().max().item<double>() < 1e-10);
  }
  CHECK_THROWS_WITH(unigram_bias(HeadSpec::parse("mos:K=2"), unigram_p),
                    Catch::Contains("mixture, adaptive or sparse"));
  // The add-one unigram of a stream: (count + 1) / (N + M).
  const auto u = unigram({0, 0, 1}, 3);
  CHECK(u[0].item<double>() == Approx(3.0 / 6).epsilon(1e-15));
  CHECK(u[2].item<double>() == Approx(1.0 / 6).epsilon(1e-15));
  CHECK_THROWS_WITH(unigram({0, 3}, 3), Catch::Contains("id 3 outside [0, 3)"));
}

TEST_CASE("nplm model: the untrained model outputs the unigram distribution for any context") {
  const int64_t M = 40;
  const auto p = torch::softmax(torch::randn({M}, torch::kDouble), 0);
  for (const char* name : {"softmax", "spherical", "taylor", "softmax_abs"}) {
    INFO(name);
    torch::manual_seed(3);
    Nplm model(NplmOptions(M, HeadSpec::parse(name)).context(3).emsize(8).layers(2).hidden(16), p);
    const auto ctx = torch::randint(0, M, {5, 3}, torch::kLong);
    torch::NoGradGuard no_grad;
    const auto log_p = model->log_probs(ctx).to(torch::kDouble);  // (5, M), float32 computed
    // float32 bias and head: 1e-5 in log space.
    CHECK((log_p - p.log().unsqueeze(0)).abs().max().item<double>() < 1e-5);
    CHECK(model->d() == 16);
  }
}

TEST_CASE("nplm config: file, overrides and errors name the file, line and key") {
  const TempDir dir("nplm_config");
  const auto file = (dir / "c.toml").string();
  std::ofstream(file) << "head = \"taylor\"\nhidden = 64\nlr = 0.5\n";
  runkit::ConfigArgs args;
  args.config_path = file;
  args.overrides = {{"hidden", "128"}};
  const auto c = key_table().resolve(args);
  CHECK(c.head == "taylor");
  CHECK(c.hidden == 128);  // the command line beats the file
  CHECK(c.lr == 0.5);
  CHECK(c.context == 6);  // the paper's default
  // Round trip: the written TOML reads back to the same config.
  const auto text = key_table().to_toml(c);
  CHECK(key_table().to_toml(key_table().load_text(text, "x", NplmConfig{})) == text);
  std::ofstream(file) << "head = \"softmax\"\nhiden = 3\n";
  CHECK_THROWS_WITH(key_table().load_file(file, NplmConfig{}),
                    Catch::StartsWith(file + ":2:1: unknown key 'hiden'"));
  std::ofstream(file) << "lr = \"fast\"\n";
  CHECK_THROWS_WITH(key_table().load_file(file, NplmConfig{}),
                    Catch::Contains(":1:1: key 'lr': expected a number, got \"fast\""));
  NplmConfig bad;
  CHECK_THROWS_WITH(key_table().apply(bad, "layers", "two"),
                    Catch::Contains("--layers: expected an integer, got 'two'"));
  bad.lr = -1;
  CHECK_THROWS_WITH(validate(bad), Catch::Contains("lr must be > 0, got -1.0"));
  bad = NplmConfig{};
  bad.head = "mos:K=2";
  CHECK_THROWS_WITH(validate(bad), Catch::Contains("single head"));
}

TEST_CASE("train_nplm: a tiny model on 100k PTB tokens beats the unigram model it starts from") {
  const TempDir dir("nplm_learns");
  SB_OR_SKIP(corpus, ptb_slice(100000, 8000, 2000));
  // Independent reference: the add-one unigram model of the training tokens on valid.
  const double unigram_ppl =
      std::exp(add_one_unigram_nll(corpus.train, corpus.vocab.size(), corpus.valid));
  auto config = tiny_config(dir);
  config.epochs = 2;
  config.lr = 1.0;  // measured: lr 0.1 reaches 0.87 of the unigram ppl, 0.5: 0.73, 1.0: 0.69
  NplmTrainer trainer(config, corpus, dir.string());
  // Before any step the model is that unigram model (float32: 1e-4 relative on the ppl).
  const auto eos = corpus.vocab.find(data::kEos);
  CHECK(std::exp(mean_nll(trainer.model, make_contexts(corpus.valid, 6, eos))) ==
        Approx(unigram_ppl).epsilon(1e-4));
  REQUIRE(trainer.run() == runkit::kFinished);
  const double ppl = std::exp(trainer.result().valid_loss);
  check_beats_word_unigram(ppl, unigram_ppl);
}

TEST_CASE("nplm classes: the C most frequent words, ties by id, and only their rows relabelled") {
  // ids 0..4 with counts 1, 3, 3, 0, 2: by count, ties by the smaller id: 1, 2, 4, 0.
  const std::vector<int64_t> train{0, 1, 1, 1, 2, 2, 2, 4, 4};
  const auto c = top_classes(train, 5, 3);
  CHECK(c.words == std::vector<int64_t>{1, 2, 4});
  CHECK(c.class_of == std::vector<int64_t>{-1, 0, 1, -1, 2});
  CHECK_THROWS_WITH(top_classes(train, 5, 5), Catch::Contains("expected 1 .. 4"));
  // Contexts of [3, 4, 0, 2] (n = 2, pad 3): targets 3, 4, 0, 2 -> rows 1 and 3 kept as 2, 1.
  const auto ctx = make_contexts({3, 4, 0, 2}, 2, 3);
  const auto kept = restrict_to_classes(ctx, c);
  REQUIRE(kept.targets.size(0) == 2);
  CHECK(row(kept.targets.view({-1, 1}), 0) == std::vector<int64_t>{2});
  CHECK(row(kept.targets.view({-1, 1}), 1) == std::vector<int64_t>{1});
  CHECK(row(kept.inputs, 0) == row(ctx.inputs, 1));
  CHECK(row(kept.inputs, 1) == row(ctx.inputs, 3));
}

TEST_CASE("train_nplm --classes: a C-class task trains sparse top-k and reports its error") {
  const TempDir base("nplm_classes");
  SB_OR_SKIP(corpus, ptb_slice(60000, 5000, 3000));
  auto config = tiny_config(base / "x");
  config.head = "sparse:k=5";
  config.classes = 0;
  CHECK_THROWS_WITH(validate(config), Catch::Contains("sparse needs classes > 0"));
  for (const std::string head : {"softmax", "sparse:k=5"}) {
    auto c = tiny_config(base / head);
    c.head = head;
    c.classes = 20;
    c.lr = 1.0;
    validate(c);
    NplmTrainer trainer(c, corpus, (base / head).string());
    REQUIRE(trainer.run() == runkit::kFinished);
    const auto final = read_json(base / head / "final.json")["nplm"];
    const double error = final["test_error_pct"].get<double>();
    // Independent reference: always answering the most frequent class (class 0) is wrong on
    // every test row whose label is not 0.
    const auto eos = corpus.vocab.find(data::kEos);
    const auto test = restrict_to_classes(make_contexts(corpus.test, c.context, eos),
                                          top_classes(corpus.train, corpus.vocab.size(), 20));
    const double majority =
        100.0 * test.targets.ne(0).sum().item<double>() / static_cast<double>(test.targets.size(0));
    INFO(head << ": error " << error << "%, majority class " << majority << "%");
    CHECK(final["classes"].get<int64_t>() == 20);
    CHECK(final["test_rows"].get<int64_t>() == test.targets.size(0));
    CHECK(error < majority);
    CHECK(final["test_ppl"].is_null() == (head != "softmax"));
    const contract::LogProbReader reader((base / head / "logprobs.h5").string());
    CHECK(reader.cols() == 20);
  }
}

TEST_CASE("train_nplm: interrupted mid-epoch and resumed equals uninterrupted, bit for bit") {
  const TempDir base("nplm_resume");
  SB_OR_SKIP(corpus, ptb_slice(5000, 1000, 300));
  // 50 batches an epoch, 2 epochs: stop at 23, 46 (epoch 1) and 69, 92 (epoch 2).
  CHECK(resumed_equals_straight<NplmTrainer>(base, 23, corpus, tiny_config) >= 3);
  const auto out = base / "interrupted";
  // A changed config is refused, naming the key.
  auto changed = tiny_config(out);
  changed.lr = 0.2;
  NplmTrainer other(changed, corpus, out.string());
  CHECK_THROWS_WITH(other.resume(), Catch::Contains("lr = 0.1 -> lr = 0.2"));
}

TEST_CASE("train_nplm: the dump follows the HDF5 contract and its ppl is the test ppl") {
  const TempDir dir("nplm_dump");
  SB_OR_SKIP(corpus, ptb_slice(5000, 1000, 300));
  auto config = tiny_config(dir);
  const std::size_t parses = HeadSpec::parse_count();
  config.head = "taylor";  // parsed here (common/head_setting.h), and nowhere after
  config.epochs = 1;
  nplm::validate(config);
  NplmTrainer trainer(config, corpus, dir.string());
  REQUIRE(trainer.run() == runkit::kFinished);
  // Config, validation, model, training, the dump's header and final.json: one parse of the head.
  CHECK(HeadSpec::parse_count() - parses == 1);
  const contract::LogProbReader reader((dir / "logprobs.h5").string());  // validates the schema
  const auto& h = reader.header();
  CHECK(h.head == "taylor");
  CHECK(h.d == 32);
  CHECK(h.bias);
  CHECK(h.M == 10000);
  CHECK(h.T == 300);  // every test token has a row
  CHECK(h.dataset == "ptb");
  CHECK(reader.read_targets() == corpus.test);
  const auto recomputed = recompute_dump(reader, corpus.test);
  // The attribute is the float64 recomputation from the stored rows (1e-12: summation order);
  // the trainer's test ppl is computed in float32 batches, so 1e-5 relative.
  CHECK(h.ppl == Approx(recomputed.ppl).epsilon(1e-12));
  CHECK(std::exp(trainer.result().test_loss) == Approx(h.ppl).epsilon(1e-5));
  CHECK(recomputed.worst_norm < 1e-4);  // float32 rows over 10000 words sum to 1 within 1e-4
  const auto final = read_json(dir / "final.json");
  CHECK(final["dump_ppl"].get<double>() == h.ppl);
}

TEST_CASE("train_nplm: a non-finite loss stops the run with status 4 and writes no dump") {
  const TempDir dir("nplm_nan");
  SB_OR_SKIP(corpus, ptb_slice(5000, 1000, 100));
  NplmTrainer trainer(tiny_config(dir), corpus, dir.string());
  {
    torch::NoGradGuard no_grad;
    trainer.model->hidden_layers[0]->weight[0][0] = std::nan("");
  }
  CHECK(trainer.run() == runkit::kNonFinite);
  CHECK_FALSE(fs::exists(dir / "logprobs.h5"));
  CHECK_FALSE(fs::exists(dir / "checkpoint.pt"));  // no epoch finished: nothing good to keep
}

TEST_CASE("train_nplm binary: --help lists the keys, bad input exits 2 with one line") {
  const std::string bin = SB_TRAIN_NPLM;
  sb::test::check_help_offers_every_key(bin, key_table());
  int status = -1;
  const TempDir dir("nplm_binary");
  const auto file = (dir / "bad.toml").string();
  std::ofstream(file) << "hiddn = 3\n";
  const auto err = sb::test::run(bin + " --config " + file + " 2>&1", &status);
  CHECK(status == 2);
  CHECK(err == "error: " + file +
                   ":1:1: unknown key 'hiddn' (valid keys: " + key_table().key_list() + ")\n");
  sb::test::run(bin + " --head sparse:k=5 --out " + (dir / "run").string() + " 2>&1", &status);
  CHECK(status == 2);
  CHECK_FALSE(fs::exists(dir / "run"));
  const auto missing =
      sb::test::run(bin + " --data " + (dir / "nowhere").string() + " 2>&1", &status);
  CHECK(status == 2);
  CHECK(missing.find("corpus 'ptb' not found") != std::string::npos);
}
