// The character-level LM (train_charlm): PTB spelled as characters round-trips to the words, the
// spelling's edge cases and bad data, and on a slice of PTB characters: it learns (beats the
// unigram character model), an interrupted and resumed run equals an uninterrupted one bit for
// bit, and its dump is a contract file whose rank_analysis verdict is bound_not_binding (M < d).

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "analysis/analyse.h"
#include "contract/logprob_file.h"
#include "datasets/corpus.h"
#include "tests/fixtures/corpus_or_skip.h"
#include "tests/fixtures/run_command.h"
#include "tests/fixtures/run_outputs.h"
#include "tests/fixtures/temp_dir.h"
#include "tests/fixtures/tiny_config.h"
#include "tests/fixtures/trainer_help.h"
#include "trainers/charlm/char_corpus.h"
#include "trainers/charlm/trainer.h"
#include "trainers/runkit/interrupt.h"

using namespace sb;
using namespace sb::charlm;
namespace fs = std::filesystem;
using namespace sb::test;  // tests/fixtures/

namespace {

CharConfig tiny_config(const fs::path& out) { return load_tiny_config(key_table(), "charlm", out); }

std::optional<CharCorpus> ptb_chars(int64_t train, int64_t valid, int64_t test) {
  const auto dir = sb::test::corpus_or_skip("ptb");
  if (!dir) return std::nullopt;
  return sb::test::first_ids(char_corpus(data::load_corpus(*dir)), train, valid, test);
}

std::vector<std::string> words_of(const data::Vocabulary& v, const std::vector<int64_t>& ids) {
  std::vector<std::string> out;
  for (const auto id : ids) out.push_back(v.word(id));
  return out;
}

}  // namespace

TEST_CASE("char corpus: PTB spelled as characters round-trips to the words of every split") {
  const auto dir_found = sb::test::corpus_or_skip("ptb");
  if (!dir_found) return;
  const auto words = data::load_corpus(*dir_found);
  const auto chars = char_corpus(words);
  CHECK(unspell(chars.train, chars.vocab) == words_of(words.vocab, words.train));
  CHECK(unspell(chars.valid, chars.vocab) == words_of(words.vocab, words.valid));
  CHECK(unspell(chars.test, chars.vocab) == words_of(words.vocab, words.test));
  // Independent count from the files: per line, its characters + one symbol per word (a
  // boundary after each word but the last, <eos> after the last), or 1 for an empty line.
  for (const auto& [split, ids] : std::vector<std::pair<std::string, const std::vector<int64_t>*>>{
           {"train", &chars.train}, {"valid", &chars.valid}, {"test", &chars.test}}) {
    std::ifstream in(data::split_file(*dir_found, split));
    int64_t expected = 0;
    std::map<char, int> seen;
    for (std::string line; std::getline(in, line);) {
      std::istringstream ws(line);
      int64_t n = 0;
      for (std::string w; ws >> w; ++n) {
        expected += static_cast<int64_t>(w.size());
        for (const char c : w) seen[c] = 1;
      }
      expected += std::max<int64_t>(n, 1);
    }
    INFO(split);
    CHECK(static_cast<int64_t>(ids->size()) == expected);
    if (split == "train") CHECK(chars.vocab.size() == static_cast<int64_t>(seen.size()) + 2);
  }
  CHECK(chars.vocab.size() < 64);  // M ~ 50: far below d + 2 of any useful LSTM
}

TEST_CASE("char corpus: spelling edge cases, and characters unseen in training are named") {
  data::Vocabulary words;
  const auto a = words.add("ab"), unk = words.add("<unk>"), eos = words.add(data::kEos);
  const auto x = words.add("x"), q = words.add("a_b");
  data::Vocabulary chars;
  // "ab <unk>" / an empty line / "x a_b": <sp> between words, <eos> at line ends.
  const std::vector<int64_t> stream = {a, unk, eos, eos, x, q, eos};
  const auto s = spell(stream, words, chars, /*grow=*/true, "train");
  std::vector<std::string> text;
  for (const auto id : s) text.push_back(chars.word(id));
  CHECK(text == std::vector<std::string>{"a", "b", "<sp>", "<", "u", "n", "k", ">", "<eos>",
                                         "<eos>", "x", "<sp>", "a", "_", "b", "<eos>"});
  CHECK(unspell(s, chars) == words_of(words, stream));
  // unspell refuses streams that spell no word sequence.
  const auto sp = chars.find(kWordBoundary), ch_a = chars.find("a"), ch_eos = chars.find("<eos>");
  CHECK_THROWS_WITH(unspell({sp, ch_a, ch_eos}, chars), Catch::Contains("empty word"));
  CHECK_THROWS_WITH(unspell({ch_a, sp, ch_eos}, chars), Catch::Contains("empty word"));
  CHECK_THROWS_WITH(unspell({ch_a}, chars), Catch::Contains("ends inside a word"));
  // A valid/test character that training never had is bad data, named with its word.
  const auto z = words.add("zz");
  CHECK_THROWS_WITH(spell({z, eos}, words, chars, /*grow=*/false, "valid"),
                    Catch::Contains("valid: character 'z' (byte 0x7a) of word 'zz' is not in the "
                                    "training characters"));
}

TEST_CASE("train_charlm: a tiny LSTM on 100k PTB characters beats the unigram character model") {
  const TempDir dir("charlm_learns");
  SB_OR_SKIP(corpus, ptb_chars(100000, 10000, 2000));
  const double unigram_bpc =
      add_one_unigram_nll(corpus.train, corpus.vocab.size(), corpus.valid) / std::log(2.0);
  auto config = tiny_config(dir);
  CharTrainer trainer(config, corpus, dir.string());
  REQUIRE(trainer.run() == runkit::kFinished);
  const double bpc = trainer.result().valid_loss / std::log(2.0);
  INFO("unigram bpc " << unigram_bpc << ", model bpc " << bpc);
  CHECK(unigram_bpc > 4);  // sanity of the reference (English characters: ~4.3 bits)
  CHECK(bpc < 0.8 * unigram_bpc);
  // The dump: every test symbol has a row over M symbols; the bound d + 2 = 66 > M, so the
  // analysis calls it not binding, whatever the rank.
  const contract::LogProbReader reader((dir / "logprobs.h5").string());
  CHECK(reader.rows() == 2000);
  CHECK(reader.cols() == corpus.vocab.size());
  CHECK(reader.read_targets() == corpus.test);
  CHECK(reader.header().d == 64);
  analysis::AnalyseOptions o;
  o.method = "exact";
  const auto r = analysis::analyse_file((dir / "logprobs.h5").string(), o);
  CHECK(r.report.verdict() == "bound_not_binding");
  CHECK(r.report.rank <= corpus.vocab.size());
  const auto final = read_json(dir / "final.json");
  CHECK(final["charlm"]["test_bpc"].get<double>() ==
        Approx(std::log2(reader.header().ppl)).epsilon(1e-12));
}

TEST_CASE("train_charlm --latent: d is the projection's width and softmax's rank obeys d + 2") {
  // The mechanism profile's control: a linear map nhid -> latent before the decoder makes
  // d = latent, so with latent = 4 softmax's log-output rank is at most d + 2 = 6 < M (Theorem 2:
  // the logits D (P h) + b lie in an affine space of dimension 4, and the normaliser adds one),
  // while sigsoftmax's is not capped. The count is exact (--method exact, float64 SVD).
  const TempDir base("charlm_latent");
  SB_OR_SKIP(corpus, ptb_chars(20000, 2000, 500));
  REQUIRE(corpus.vocab.size() > 6);
  for (const std::string head : {"softmax", "sigsoftmax"}) {
    const auto dir = base / head;
    auto config = tiny_config(dir);
    config.latent = 4;
    config.head = head;
    CharTrainer trainer(config, corpus, dir.string());
    REQUIRE(trainer.run() == runkit::kFinished);
    REQUIRE(trainer.model->d() == 4);
    REQUIRE(trainer.model->decoder->weight.size(1) == 4);
    const contract::LogProbReader reader((dir / "logprobs.h5").string());
    CHECK(reader.header().d == 4);
    analysis::AnalyseOptions o;
    o.method = "exact";
    const auto r = analysis::analyse_file((dir / "logprobs.h5").string(), o);
    INFO(head << ": rank " << r.report.rank << ", M " << corpus.vocab.size());
    if (head == "softmax") {
      CHECK(r.report.rank <= 6);
      CHECK(r.report.verdict() == "within_bound");
    } else {
      CHECK(r.report.rank > 6);
    }
  }
  // latent = 0 registers no projection: the model of a seed is the one it was before the key.
  auto plain = tiny_config(base / "plain");
  CharTrainer trainer(plain, corpus, (base / "plain").string());
  CHECK(trainer.model->projection.is_empty());
  CHECK(trainer.model->d() == plain.nhid);
}

TEST_CASE("train_charlm: interrupted mid-epoch and resumed equals uninterrupted, bit for bit") {
  const TempDir base("charlm_resume");
  SB_OR_SKIP(corpus, ptb_chars(20000, 2000, 500));
  // 20 batches an epoch (1000 rows / 50), 2 epochs: stops at 7, 14 | 1, 8, 15 | 2, ...
  CHECK(resumed_equals_straight<CharTrainer>(base, 7, corpus, tiny_config) >= 4);
}

TEST_CASE("train_charlm binary: --help lists the keys, bad input exits 2 with one line") {
  const std::string bin = SB_TRAIN_CHARLM;
  sb::test::check_help_offers_every_key(bin, key_table());
  int status = -1;
  const auto err = sb::test::run(bin + " --nhid 0 2>&1", &status);
  CHECK(status == 2);
  CHECK(err == "error: nhid must be >= 1, got 0\n");
  const auto head = sb::test::run(bin + " --head mos:K=3 2>&1", &status);
  CHECK(status == 2);
  CHECK(head.find("single head") != std::string::npos);
}
