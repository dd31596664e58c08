// The word-LM training loop on a slice of the real PTB: it learns (beats the unigram model),
// an interrupted and resumed run equals an uninterrupted one bit for bit, the test-set dump
// matches the HDF5 contract and its ppl attribute, and a non-finite loss stops the run.

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "common/head_spec.h"
#include "contract/logprob_file.h"
#include "datasets/corpus.h"
#include "datasets/data_location.h"
#include "tests/fixtures/corpus_or_skip.h"
#include "tests/fixtures/run_outputs.h"
#include "tests/fixtures/run_status.h"
#include "tests/fixtures/temp_dir.h"
#include "tests/fixtures/tiny_config.h"
#include "trainers/lm/trainer.h"

using namespace sb;
using namespace sb::lm;
namespace fs = std::filesystem;
using namespace sb::test;  // tests/fixtures/

namespace {

WordLmConfig tiny_config(const fs::path& out) {
  return load_tiny_config(key_table(), "wordlm", out);
}

}  // namespace

TEST_CASE(
    "trainer: random BPTT lengths follow AWD-LSTM's rule, rounded to the nearest length where AWD "
    "truncates") {
  torch::manual_seed(1);
  int64_t short_count = 0, n_long = 0, min_len = 1000;
  double long_sum = 0;
  const int draws = 20000;
  for (int i = 0; i < draws; ++i) {
    const auto len = draw_seq_len(70);
    min_len = std::min(min_len, len);
    if (len < 53) {
      ++short_count;  // from N(35, 5): 53 is 3.6 sigma above 35 and 3.4 below 70
    } else {
      long_sum += static_cast<double>(len);
      ++n_long;
    }
  }
  // 5% short: binomial std over 20000 draws is 0.15%; 0.6% is 4 sigma.
  CHECK(std::abs(static_cast<double>(short_count) / draws - 0.05) < 0.006);
  // Mean of N(70, 5) rounded to nearest is 70 (AWD-LSTM's int() truncation would give 69.5); std of
  // the mean over 19000 draws is 0.036; 0.15 is 4 sigma.
  CHECK(std::abs(long_sum / static_cast<double>(n_long) - 70) < 0.15);
  CHECK(min_len >= 5);
}

TEST_CASE("trainer: a tiny model on 100k PTB tokens beats the unigram model by 25%", "[long]") {
  const TempDir dir("trainer_learns");
  auto config = tiny_config(dir);
  config.epochs = 3;  // 3 x 142 = 426 steps
  config.finetune_epochs = 0;
  config.dump_test = false;
  SB_OR_SKIP(corpus, ptb_slice(100000, 8000, 100));
  // Independent reference: the add-one unigram model of the same training tokens (the first
  // validation token is not predicted).
  const double unigram_ppl =
      std::exp(add_one_unigram_nll(corpus.train, corpus.vocab.size(), corpus.valid, /*first=*/1));
  WordLmTrainer trainer(config, corpus, dir.string());
  REQUIRE(trainer.run() == kFinished);
  const double ppl = std::exp(trainer.result().best_valid_loss);
  check_beats_word_unigram(ppl, unigram_ppl);
}

TEST_CASE("trainer: interrupted mid-epoch and resumed equals uninterrupted, bit for bit") {
  const TempDir base("trainer_resume");
  SB_OR_SKIP(corpus, ptb_slice(12000, 3000, 400));
  // 17 batches an epoch, 2 epochs and 1 of finetuning: stops inside epoch 1, inside epoch 2 (ASGD
  // may be on) and inside finetuning.
  CHECK(resumed_equals_straight<WordLmTrainer>(base, 11, corpus, tiny_config) >= 3);
}

TEST_CASE("trainer: the dump follows the HDF5 contract and its ppl is the printed one") {
  const TempDir dir("trainer_dump");
  SB_OR_SKIP(corpus, ptb_slice(8000, 2000, 300));
  auto config = tiny_config(dir);
  const std::size_t parses = sb::HeadSpec::parse_count();
  config.head = "sigsoftmax";  // parsed here (common/head_setting.h), and nowhere after
  config.epochs = 1;
  config.finetune_epochs = 0;
  validate(config);
  WordLmTrainer trainer(config, corpus, dir.string());
  REQUIRE(trainer.run() == kFinished);
  // Config, validation, model, training, the dump's header and final.json: one parse of the head.
  CHECK(sb::HeadSpec::parse_count() - parses == 1);
  const contract::LogProbReader reader(trainer.result().dump_path);  // validates the schema
  const auto& h = reader.header();
  CHECK(h.head == "sigsoftmax");
  CHECK(h.d == 32);
  CHECK(h.bias);
  CHECK(h.M == 10000);
  CHECK(h.T == 300);  // <eos> in front: every test token has a row
  CHECK(h.dataset == "ptb");
  CHECK(h.split == "test");
  CHECK(h.seed == 7);
  CHECK(h.config.find("head = \"sigsoftmax\"") != std::string::npos);
  // The targets are the test tokens, in order.
  CHECK(reader.read_targets() == corpus.test);
  // ppl recomputed in float64 from the stored float32 rows: the attribute and the number the
  // trainer printed (result().test_ppl) are the same double, up to summation order (1e-12).
  const auto recomputed = recompute_dump(reader, corpus.test);
  CHECK(h.ppl == Approx(recomputed.ppl).epsilon(1e-12));
  CHECK(trainer.result().test_ppl == h.ppl);
  // Each row is a distribution: float32 log-probabilities over 10000 words sum to 1 within 1e-4.
  CHECK(recomputed.worst_norm < 1e-4);
}

TEST_CASE("trainer: a non-finite loss stops the run and keeps the last good checkpoint") {
  const TempDir dir("trainer_nan");
  auto config = tiny_config(dir);
  config.lr = 1e30;
  config.clip = 0;
  SB_OR_SKIP(corpus, ptb_slice(12000, 2000, 100));
  WordLmTrainer trainer(config, corpus, dir.string());
  CHECK(trainer.run() == kNonFinite);
  CHECK_FALSE(fs::exists(dir / "logprobs.h5"));
  CHECK_FALSE(fs::exists(dir / "checkpoint.pt"));  // no epoch finished: nothing good to keep
  std::ifstream metrics(dir / "metrics.jsonl");
  std::string line, last;
  while (std::getline(metrics, line)) last = line;
  CHECK(nlohmann::json::parse(last)["event"] == "non_finite");
}

TEST_CASE("trainer: resuming with a different config is refused, naming the key") {
  const TempDir dir("trainer_mismatch");
  SB_OR_SKIP(corpus, ptb_slice(8000, 2000, 100));
  {
    WordLmTrainer trainer(tiny_config(dir), corpus, dir.string());
    trainer.stop_after_batches = 3;
    REQUIRE(trainer.run() == kInterrupted);
  }
  auto config = tiny_config(dir);
  config.lr = 20;
  WordLmTrainer trainer(config, corpus, dir.string());
  CHECK_THROWS_WITH(trainer.resume(), Catch::Contains("lr = 30.0 -> lr = 20.0"));
  config = tiny_config(dir);
  config.epochs = 5;  // more epochs continue the same trajectory: allowed
  WordLmTrainer longer(config, corpus, dir.string());
  CHECK_NOTHROW(longer.resume());
}

namespace {

/// metrics.jsonl's records of one event, in order.
std::vector<nlohmann::json> events(const fs::path& run_dir, const std::string& event) {
  std::ifstream in(run_dir / "metrics.jsonl");
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    const auto it = j.find("event");
    if (it != j.end() && *it == event) out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

TEST_CASE(
    "trainer: epoch dumps hold the first N test rows after every epoch, equal to the final dump "
    "of the same weights, and leave the run unchanged") {
  const TempDir base("trainer_epoch_dumps");
  SB_OR_SKIP(corpus, ptb_slice(12000, 3000, 400));
  const int64_t rows = 100;  // not a multiple of bptt 35: the last segment is shorter
  auto config = tiny_config(base / "dumps");
  config.epoch_dump_rows = rows;
  WordLmTrainer trainer(config, corpus, config.out);
  REQUIRE(trainer.run() == kFinished);
  const fs::path epochs = base / "dumps" / "epochs";
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(epochs)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  // 2 main epochs and 1 finetuning epoch (tiny_config), one file each and nothing else.
  CHECK(names == std::vector<std::string>{"finetune_1.h5", "main_1.h5", "main_2.h5"});
  const std::vector<int64_t> first(corpus.test.begin(), corpus.test.begin() + rows);
  const auto dumps = events(base / "dumps", "epoch_dump");
  REQUIRE(dumps.size() == 3);
  std::map<std::string, std::vector<float>> data;
  for (const auto& d : dumps) {
    const std::string file = d["path"];
    INFO(file);
    const contract::LogProbReader reader(file);  // validates the contract
    CHECK(reader.rows() == rows);
    CHECK(reader.read_targets() == first);
    CHECK(reader.header().ppl == d["ppl"].get<double>());
    data[fs::path(file).filename()] = all_rows(reader);
  }
  // Different weights after every epoch: the dumps differ (by far more than rounding).
  float differ = 0;
  for (size_t i = 0; i < data["main_1.h5"].size(); ++i)
    differ = std::max(differ, std::abs(data["main_1.h5"][i] - data["main_2.h5"][i]));
  CHECK(differ > 1e-2f);
  // The final model is the last finetuning epoch's averaged weights (best_finetune.pt), which the
  // finetune_1 dump used: its rows are the first rows of logprobs.h5. Same ops on the same
  // weights, except the last segment (30 tokens here, 35 in the full dump), whose float32 GEMMs
  // may block differently: 1e-4 on log-probabilities of magnitude ~10 is ~1e-5 relative.
  const auto final = read_json(base / "dumps" / "final.json");
  REQUIRE(final["best_model"].get<std::string>().find("best_finetune.pt") != std::string::npos);
  const contract::LogProbReader full((base / "dumps" / "logprobs.h5").string());
  std::vector<float> head(static_cast<size_t>(rows * full.cols()));
  full.read_rows(0, rows, head.data());
  float worst = 0;
  for (size_t i = 0; i < head.size(); ++i)
    worst = std::max(worst, std::abs(head[i] - data["finetune_1.h5"][i]));
  CHECK(worst < 1e-4f);
  // The probes evaluate without drawing random numbers: the same run without them is identical.
  auto plain = tiny_config(base / "plain");
  WordLmTrainer without(plain, corpus, plain.out);
  REQUIRE(without.run() == kFinished);
  const auto other = read_json(base / "plain" / "final.json");
  CHECK(final["valid_loss"].get<double>() == other["valid_loss"].get<double>());
  CHECK(final["dump_ppl"].get<double>() == other["dump_ppl"].get<double>());
  CHECK_FALSE(fs::exists(base / "plain" / "epochs"));
}

TEST_CASE(
    "trainer: a mixture run logs its prior entropies and expert disagreement after every epoch",
    "[long]") {
  const TempDir dir("trainer_mixture_stats");
  SB_OR_SKIP(corpus, ptb_slice(12000, 3000, 100));
  auto config = tiny_config(dir);
  config.head = "mos:K=3";
  config.lr = 20;
  config.dump_test = false;
  config.mixture_stats = 500;
  WordLmTrainer trainer(config, corpus, dir.string());
  REQUIRE(trainer.run() == kFinished);
  const auto stats = events(dir, "mixture");
  REQUIRE(stats.size() == 3);  // main 1, main 2, finetune 1
  const double log_k = std::log(3.0);
  for (const auto& s : stats) {
    INFO(s.dump());
    CHECK(s["contexts"] == 500);
    CHECK(s["experts"] == 3);
    CHECK(s["max_prior_entropy"].get<double>() == Approx(log_k).epsilon(1e-12));
    const double h = s["prior_entropy"], hm = s["mean_prior_entropy"], js = s["disagreement"];
    // Ranges of the definitions (mixture_stats.h), with 1e-9 for float64 rounding.
    CHECK(h >= 0);
    CHECK(h <= hm + 1e-9);  // concavity: the mean prior's entropy is at least the mean entropy
    CHECK(hm <= log_k + 1e-9);
    CHECK(js >= -1e-9);
    CHECK(js <= h + 1e-9);
  }
  CHECK(stats[0]["phase"] == "main");
  CHECK(stats[2]["phase"] == "finetune");
  CHECK(stats[2]["averaged"] == true);
  // A single head logs none.
  const TempDir single_dir("trainer_mixture_stats_single");
  auto single = tiny_config(single_dir);
  single.dump_test = false;
  single.epochs = 1;
  single.finetune_epochs = 0;
  single.mixture_stats = 500;
  WordLmTrainer softmax(single, corpus, single_dir.string());
  REQUIRE(softmax.run() == kFinished);
  CHECK(events(single_dir, "mixture").empty());
}

TEST_CASE(
    "trainer: lr_decay divides the main phase's lr once per epoch after lr_decay_after, and "
    "finetuning keeps lr") {
  const TempDir dir("trainer_lr_decay");
  SB_OR_SKIP(corpus, ptb_slice(6000, 1500, 300));
  auto config = tiny_config(dir / "run");
  config.epochs = 3;
  config.lr_decay = 2;
  config.lr_decay_after = 1;
  WordLmTrainer trainer(config, corpus, config.out);
  REQUIRE(trainer.run() == kFinished);
  std::vector<double> main_lr, finetune_lr;
  for (const auto& e : events(dir / "run", "valid"))
    (e["phase"] == "main" ? main_lr : finetune_lr).push_back(e["lr"].get<double>());
  // K18-S E's schedule at small scale: full lr, then halved every epoch.
  CHECK(main_lr == std::vector<double>{config.lr, config.lr / 2, config.lr / 4});
  for (double lr : finetune_lr) CHECK(lr == config.lr);
}

TEST_CASE(
    "trainer: bias_init uniform starts the decoder bias at -log M and unigram at the bias whose "
    "head output is the training unigram, and mixtures are refused") {
  const TempDir dir("trainer_bias_init");
  SB_OR_SKIP(corpus, ptb_slice(6000, 1500, 300));
  const double m = static_cast<double>(corpus.vocab.size());
  auto config = tiny_config(dir / "uniform");
  config.head = "sigmoid";
  config.bias_init = "uniform";
  WordLmTrainer uniform(config, corpus, config.out);
  const auto b = uniform.model->decoder_bias.detach().to(torch::kFloat64);
  // float32 storage of -log M: 1e-6 absolute.
  CHECK((b + std::log(m)).abs().max().item<double>() < 1e-6);
  config.bias_init = "unigram";
  config.out = (dir / "unigram").string();
  WordLmTrainer unigram(config, corpus, config.out);
  // sigmoid(b) / sum sigmoid(b) against the add-one unigram, counted here independently.
  std::vector<double> counts(static_cast<size_t>(m), 1.0);
  for (const auto id : corpus.train) counts[static_cast<size_t>(id)] += 1;
  const auto p =
      torch::tensor(counts, torch::kFloat64) / (static_cast<double>(corpus.train.size()) + m);
  const auto s = torch::sigmoid(unigram.model->decoder_bias.detach().to(torch::kFloat64));
  // The bias is stored in float32: relative error ~1e-7 per entry, 1e-5 after normalising.
  CHECK(((s / s.sum()) / p - 1).abs().max().item<double>() < 1e-5);
  config.head = "mos:K=2";
  config.nhidlast = 0;
  CHECK_THROWS_WITH(validate(config),
                    Catch::Contains("bias_init = \"unigram\" needs a single head"));
  config.head = "softmax";
  config.bias_init = "random";
  CHECK_THROWS_WITH(validate(config),
                    Catch::Contains("bias_init must be zero, unigram or uniform"));
}

TEST_CASE(
    "trainer: an adaptive head trains over the frequency-sorted vocabulary and its dump names "
    "the head's whole spelling") {
  const TempDir dir("trainer_adaptive");
  // Sorted by the whole training split's counts, then cut, as train_wordlm does for an adaptive
  // head (sorted by the slice, the words the slice lacks would fill a tail cluster that never
  // sees a training token).
  SB_OR_SKIP(corpus, ptb_slice(30000, 1500, 300, /*by_frequency=*/true));
  auto config = tiny_config(dir / "run");
  config.head = "adaptive:cutoffs=2000,5000";
  WordLmTrainer trainer(config, corpus, config.out);
  REQUIRE(trainer.run() == kFinished);
  const contract::LogProbReader reader((dir / "run" / "logprobs.h5").string());
  CHECK(reader.header().head == "adaptive");
  CHECK(reader.header().head_spec == "adaptive:cutoffs=2000,5000");
  // Every row normalises (the dump assembles every word of every cluster): float32 rows of
  // 10000 entries, 1e-4.
  const auto rows = all_rows(reader);
  const int64_t M = reader.cols();
  for (int64_t r = 0; r < reader.rows(); ++r) {
    double top = -INFINITY, sum = 0;
    for (int64_t j = 0; j < M; ++j)
      top = std::max(top, double(rows[static_cast<size_t>(r * M + j)]));
    for (int64_t j = 0; j < M; ++j)
      sum += std::exp(double(rows[static_cast<size_t>(r * M + j)]) - top);
    REQUIRE(std::abs(top + std::log(sum)) < 1e-4);
  }
  // It learned: the dump's perplexity beats the add-one unigram model's on the same test rows
  // (the first test token, after <eos>, is predicted too).
  const double unigram_ppl =
      std::exp(add_one_unigram_nll(corpus.train, M, corpus.test, /*first=*/0));
  const auto final = read_json(dir / "run" / "final.json");
  CHECK(final["dump_ppl"].get<double>() < unigram_ppl);
}
