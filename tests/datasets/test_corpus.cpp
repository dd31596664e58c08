// Corpus loading on the real PTB / WikiText-2 files (found as the trainers find them: datasets/,
// ../shared/datasets; skipped without them), vocabulary order, OOV errors, batchify.

#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "common/errors.h"
#include "datasets/batchify.h"
#include "datasets/corpus.h"
#include "datasets/data_location.h"
#include "tests/fixtures/corpus_or_skip.h"
#include "tests/fixtures/temp_dir.h"

namespace fs = std::filesystem;
using namespace sb::data;

namespace {

std::string first_token(const std::string& path) {
  std::ifstream in(path);
  std::string w;
  in >> w;
  return w;
}
}  // namespace

TEST_CASE("corpus: PTB has the published token counts and a 10000-word vocabulary") {
  SB_CORPUS_OR_SKIP(ptb, "ptb");
  const fs::path dir(ptb);
  const auto c = load_corpus(dir.string());
  // docs/protocol.md, "Data": with <eos> at every line end.
  CHECK(c.train.size() == 929589);
  CHECK(c.valid.size() == 73760);
  CHECK(c.test.size() == 82430);
  CHECK(c.vocab.size() == 10000);
  // First-seen order: the first training token is id 0, and <eos> follows the first line's words.
  CHECK(c.vocab.word(0) == first_token((dir / "ptb.train.txt").string()));
  CHECK(c.train[0] == 0);
  CHECK(c.vocab.find("<unk>") >= 0);
  CHECK(c.vocab.find(kEos) >= 0);
}

TEST_CASE("corpus: WikiText-2 valid and test splits load with their token counts") {
  SB_CORPUS_OR_SKIP(wt2, "wikitext-2");
  const fs::path dir(wt2);
  Vocabulary vocab;  // the training split may be absent: each split builds its own here
  CHECK(tokenize_file(split_file(dir.string(), "valid"), vocab, true).size() == 217646);
  Vocabulary vocab2;
  CHECK(tokenize_file(split_file(dir.string(), "test"), vocab2, true).size() == 245569);
  CHECK_THROWS_WITH(load_corpus(dir.string()),
                    Catch::Contains("no train split (looked for ptb.train.txt, train.txt"));
}

TEST_CASE("corpus: a valid/test word outside the training vocabulary names word, file and line") {
  const sb::test::TempDir dir("corpus");
  std::ofstream(dir / "train.txt") << "the cat sat\nthe dog\n";
  std::ofstream(dir / "valid.txt") << "the cat\nthe bird sat\n";
  std::ofstream(dir / "test.txt") << "the\n";
  CHECK_THROWS_WITH(load_corpus(dir.string()),
                    Catch::Contains("valid.txt:2: word 'bird' is not in the training vocabulary"));
  try {
    load_corpus(dir.string());
    FAIL("an out-of-vocabulary word is refused");
  } catch (const sb::InputError& e) {
    CHECK(e.file() == (dir / "valid.txt").string());
    CHECK(e.field() == "line 2");
  }
  std::ofstream(dir / "valid.txt") << "dog sat the\n";
  const auto c = load_corpus(dir.string());
  // ids in first-seen order: the 0, cat 1, sat 2, <eos> 3, dog 4
  CHECK(c.train == std::vector<int64_t>{0, 1, 2, 3, 0, 4, 3});
  CHECK(c.valid == std::vector<int64_t>{4, 2, 0, 3});
  CHECK(c.test == std::vector<int64_t>{0, 3});
}

TEST_CASE(
    "corpus: sort_by_frequency renumbers by descending training count, ties in first-seen "
    "order, and rewrites every split") {
  const sb::test::TempDir dir("corpus_sorted");
  std::ofstream(dir / "train.txt") << "a b b c c c\nd c\n";
  std::ofstream(dir / "valid.txt") << "d a\n";
  std::ofstream(dir / "test.txt") << "b\n";
  auto c = load_corpus(dir.string());
  sort_by_frequency(c);
  // counts: c 4, b 2, <eos> 2 (b first seen), a 1, d 1 (a first seen)
  CHECK(c.vocab.words() == std::vector<std::string>{"c", "b", "<eos>", "a", "d"});
  CHECK(c.vocab.find("d") == 4);
  // train "a b b c c c <eos> d c <eos>" in the new ids
  CHECK(c.train == std::vector<int64_t>{3, 1, 1, 0, 0, 0, 2, 4, 0, 2});
  CHECK(c.valid == std::vector<int64_t>{4, 3, 2});
  CHECK(c.test == std::vector<int64_t>{1, 2});
}

TEST_CASE(
    "corpus proxy: valid's first nine tenths train, its last tenth validates, test adds its "
    "words, and a training split is not read") {
  const sb::test::TempDir dir("corpus_proxy");
  // 10 lines of "a b c d" + <eos>: 50 tokens, the last tenth (5) is the last line
  std::ofstream valid(dir / "valid.txt");
  for (int i = 0; i < 9; ++i) valid << "a b c d\n";
  valid << "d c b a\n";
  valid.close();
  std::ofstream(dir / "test.txt") << "a z\n";
  std::ofstream(dir / "train.txt") << "never read\n";  // would add "never" and "read" first
  const auto c = load_proxy_corpus(dir.string());
  // ids in first-seen order over valid, then test: a 0, b 1, c 2, d 3, <eos> 4, z 5
  CHECK(c.vocab.words() == std::vector<std::string>{"a", "b", "c", "d", "<eos>", "z"});
  CHECK(c.train.size() == 45);
  CHECK(c.valid == std::vector<int64_t>{3, 2, 1, 0, 4});
  CHECK(c.test == std::vector<int64_t>{0, 5, 4});
  // too short to cut: 2 lines of one word = 4 tokens, a tenth rounds to 0
  std::ofstream(dir / "valid.txt") << "a\nb\n";
  CHECK_THROWS_WITH(load_proxy_corpus(dir.string()),
                    Catch::Contains("valid.txt: 4 tokens; the proxy trains on the first nine "
                                    "tenths"));
  CHECK_THROWS_AS(load_proxy_corpus(dir.string()), sb::InputError);
}

TEST_CASE("corpus proxy: pad_vocabulary appends never-seen words up to the size and no further") {
  Corpus c;
  for (const char* w : {"a", "b", "<eos>"}) c.vocab.add(w);
  c.train = {0, 1, 2};
  pad_vocabulary(c, 0, "vocab_size");  // 0: the corpus' own
  CHECK(c.vocab.size() == 3);
  pad_vocabulary(c, 6, "vocab_size");
  CHECK(c.vocab.words() ==
        std::vector<std::string>{"a", "b", "<eos>", "<unseen_0>", "<unseen_1>", "<unseen_2>"});
  CHECK(c.train == std::vector<int64_t>{0, 1, 2});  // the splits keep their ids
  CHECK_THROWS_WITH(pad_vocabulary(c, 4, "vocab_size"),
                    "vocab_size = 4 is below the corpus' 6 words; expected 0 (the corpus' own) "
                    "or >= 6");
  CHECK_THROWS_AS(pad_vocabulary(c, 4, "vocab_size"), sb::OptionError);
}

TEST_CASE(
    "corpus proxy: WikiText-2 without its training split gives 195881 / 21765 / 245569 "
    "tokens, and 33278 words padded") {
  SB_CORPUS_OR_SKIP(wt2, "wikitext-2");
  auto c = load_proxy_corpus(wt2);
  // docs/protocol.md, "The WikiText-2 proxy": 217646 valid tokens, round(21764.6) held out
  CHECK(c.train.size() == 195881);
  CHECK(c.valid.size() == 21765);
  CHECK(c.test.size() == 245569);
  CHECK(c.vocab.size() == 18328);
  pad_vocabulary(c, 33278, "vocab_size");
  CHECK(c.vocab.size() == 33278);
  CHECK(c.vocab.word(33277) == "<unseen_14949>");
}

TEST_CASE("batchify: B contiguous streams as columns, tail dropped, get_batch shifts by one") {
  std::vector<int64_t> ids(11);
  for (int64_t i = 0; i < 11; ++i) ids[size_t(i)] = i;
  const auto b = batchify(ids, 3);  // 11 / 3 = 3 rows, token 9 and 10 dropped
  REQUIRE(b.sizes() == torch::IntArrayRef({3, 3}));
  CHECK(torch::equal(b, torch::tensor({{0, 3, 6}, {1, 4, 7}, {2, 5, 8}}, torch::kLong)));
  const auto [x, y] = get_batch(b, 0, 5);  // clipped to the 2 rows that have a next row
  CHECK(torch::equal(x, b.slice(0, 0, 2)));
  CHECK(torch::equal(y, b.slice(0, 1, 3)));
  CHECK_THROWS_WITH(get_batch(b, 2, 1), Catch::Contains("row 2"));
  CHECK_THROWS_WITH(batchify(ids, 12), Catch::Contains("batch size 12 for 11 tokens"));
  CHECK_THROWS_AS(get_batch(b, 2, 1), sb::OptionError);
  CHECK_THROWS_AS(batchify(ids, 12), sb::OptionError);
  CHECK_THROWS_WITH(batchify_split(ids, 10, 2, "valid", "eval_batch_size"),
                    "valid split: 11 tokens give 1 row at eval_batch_size = 10; at least 2 rows "
                    "are needed (use more of the split or a smaller eval_batch_size)");
  CHECK_THROWS_AS(batchify_split(ids, 10, 2, "valid", "eval_batch_size"), sb::OptionError);
}

TEST_CASE("data location: a missing corpus says where it looked and how to get it") {
  CHECK_THROWS_WITH(sb::data::find_corpus_dir("ptb", "/nonexistent/ptb"),
                    Catch::Contains("looked in /nonexistent/ptb") && Catch::Contains("make data"));
  CHECK_THROWS_AS(sb::data::find_corpus_dir("ptb", "/nonexistent/ptb"), sb::FormatError);
  CHECK_THROWS_WITH(sb::data::find_corpus_dir("text8"),
                    Catch::Contains("corpus 'text8' not found") &&
                        Catch::Contains("datasets/text8") &&
                        Catch::Contains("shared/datasets/text8"));
  // fetch.sh --check looks without downloading: an unknown corpus and a bad directory fail.
  CHECK(std::system(SB_SOURCE_DIR "/datasets/fetch.sh --check nope > /dev/null 2>&1") != 0);
}

TEST_CASE("data location: the corpora are found in datasets/ or ../shared/datasets") {
  SB_CORPUS_OR_SKIP(ptb, "ptb");
  CHECK(fs::exists(fs::path(ptb) / "ptb.test.txt"));
  CHECK(sb::data::find_corpus_dir("ptb", ptb) == ptb);
  SB_CORPUS_OR_SKIP(wt2, "wikitext-2");
  CHECK(fs::exists(fs::path(wt2) / "test.txt"));
}

TEST_CASE("make data: fetch.sh verifies the md5s of the corpora it finds") {
  // Both corpora present, or skipped (fetch.sh would download a missing one).
  if (!sb::test::corpus_or_skip("ptb") || !sb::test::corpus_or_skip("wikitext-2")) return;
  for (const char* name : {"ptb", "wikitext-2"}) {
    const std::string cmd = std::string(SB_SOURCE_DIR "/datasets/fetch.sh ") + name + " 2>&1";
    FILE* pipe = popen(cmd.c_str(), "r");
    REQUIRE(pipe);
    char buf[512] = {};
    std::string out;
    while (fgets(buf, sizeof buf, pipe)) out += buf;
    CHECK(pclose(pipe) == 0);
    CHECK(out.find("(md5 verified)") != std::string::npos);
  }
  CHECK(std::system(SB_SOURCE_DIR "/datasets/fetch.sh nope > /dev/null 2>&1") != 0);
}
