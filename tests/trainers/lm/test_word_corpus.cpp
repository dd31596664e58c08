// load_word_corpus: the corpus a word-LM run trains on, as train_wordlm and dyneval both number
// it; here the WikiText-2 proxy's settings (train_split, vocab_size) on a made-up corpus that,
// like WT2 on a machine without its training split, has only valid and test.

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "common/errors.h"
#include "tests/fixtures/temp_dir.h"
#include "trainers/lm/word_corpus.h"

namespace fs = std::filesystem;
using sb::lm::WordLmConfig;

namespace {

// valid: 9 lines "a b c d", then "d c b a e e e e e"; test: "a z"; no train split.
void write_proxy_corpus(const fs::path& dir) {
  std::ofstream valid(dir / "valid.txt");
  for (int i = 0; i < 9; ++i) valid << "a b c d\n";
  valid << "d c b a e e e e e\n";
  valid.close();
  std::ofstream(dir / "test.txt") << "a z\n";
}

WordLmConfig proxy_config(const fs::path& dir) {
  WordLmConfig c;
  c.data = dir.string();
  c.train_split = "valid";
  return c;
}

}  // namespace

TEST_CASE("word corpus: without a training split, the default names the split and the proxy") {
  const sb::test::TempDir dir("word_corpus_missing");
  write_proxy_corpus(dir);
  WordLmConfig c = proxy_config(dir);
  c.train_split = "train";
  CHECK_THROWS_WITH(sb::lm::load_word_corpus(c),
                    Catch::Contains("no train split (looked for ptb.train.txt") &&
                        Catch::Contains("train_split = \"valid\" trains on the proxy") &&
                        Catch::Contains("PROFILE=wt2-proxy"));
  CHECK_THROWS_AS(sb::lm::load_word_corpus(c), sb::FormatError);
}

TEST_CASE(
    "word corpus: train_split = valid trains on valid's head, validates on its tail, "
    "and vocab_size pads the test dump's M") {
  const sb::test::TempDir dir("word_corpus_proxy");
  write_proxy_corpus(dir);
  WordLmConfig c = proxy_config(dir);
  auto w = sb::lm::load_word_corpus(c);
  // 9 x 5 + 10 = 55 valid tokens: round(5.5) = 6 held out ("e e e e e <eos>"), 49 train
  CHECK(w.corpus.train.size() == 49);
  CHECK(w.corpus.valid.size() == 6);
  CHECK(w.corpus.test.size() == 3);
  CHECK(w.corpus.vocab.size() == 7);  // a b c d <eos> e z
  c.vocab_size = 12;
  w = sb::lm::load_word_corpus(c);
  CHECK(w.corpus.vocab.size() == 12);
  CHECK(w.corpus.vocab.word(11) == "<unseen_4>");
  c.train_tokens = 10;  // truncation applies to the proxy's training part
  CHECK(sb::lm::load_word_corpus(c).corpus.train.size() == 10);
}

TEST_CASE("word corpus: an adaptive head sorts the padded vocabulary with the placeholders last") {
  const sb::test::TempDir dir("word_corpus_adaptive");
  write_proxy_corpus(dir);
  WordLmConfig c = proxy_config(dir);
  c.vocab_size = 9;
  c.head = "adaptive:cutoffs=4,6";
  const auto w = sb::lm::load_word_corpus(c);
  // training counts over the first 49 tokens: a b c d 10 each (ties in first-seen order),
  // <eos> 9; e (every one held out), z (test only) and the placeholders 0, in id order
  CHECK(w.corpus.vocab.words() == std::vector<std::string>{"a", "b", "c", "d", "<eos>", "e", "z",
                                                           "<unseen_0>", "<unseen_1>"});
}
