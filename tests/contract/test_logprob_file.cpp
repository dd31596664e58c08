// The HDF5 log-output contract: round trip, ppl, atomic writes, and files written by h5py.

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <utility>

#include <catch2/catch.hpp>

#include "common/errors.h"
#include "contract/logprob_file.h"
#include "tests/fixtures/run_command.h"
#include "tests/fixtures/temp_dir.h"

namespace fs = std::filesystem;
using sb::contract::LogProbHeader;
using sb::contract::LogProbReader;
using sb::contract::LogProbWriter;
using namespace sb::test;  // tests/fixtures/

namespace {

LogProbHeader header(int64_t t, int64_t m) {
  LogProbHeader h;
  h.head = "sigsoftmax";
  h.d = 4;
  h.bias = true;
  h.M = m;
  h.T = t;
  h.dataset = "toy";
  h.split = "test";
  h.seed = 7;
  h.config = "lr = 30";
  return h;
}

}  // namespace

TEST_CASE("log-output file: rows, targets and attributes round-trip, and ppl is exp(-mean NLL)") {
  const TempDir dir("roundtrip");
  const int64_t t = 1000, m = 300;  // several chunks (1 MiB / (4 * 300) = 873 rows each)
  std::mt19937 gen(1);
  std::normal_distribution<float> normal;
  std::vector<float> rows(static_cast<size_t>(t * m));
  for (auto& v : rows) v = -std::abs(normal(gen)) * 5;
  std::vector<int64_t> targets(static_cast<size_t>(t));
  for (int64_t i = 0; i < t; ++i) targets[static_cast<size_t>(i)] = (i * 37) % m;

  const auto path = (dir / "lp.h5").string();
  LogProbWriter writer(path, header(t, m));
  for (int64_t r = 0; r < t; r += 7) {  // odd block sizes across chunk boundaries
    const int64_t n = std::min<int64_t>(7, t - r);
    writer.write_rows(rows.data() + r * m, targets.data() + r, n);
  }
  CHECK_FALSE(fs::exists(path));  // nothing at the final path before finish()
  const double ppl = writer.finish();
  REQUIRE(fs::exists(path));
  CHECK_FALSE(fs::exists(sb::contract::h5::temporary_path(path)));

  double nll = 0;
  for (int64_t i = 0; i < t; ++i) nll -= double(rows[size_t(i * m + targets[size_t(i)])]);
  CHECK(ppl == Approx(std::exp(nll / t)).epsilon(1e-12));

  LogProbReader reader(path);
  const auto& h = reader.header();
  CHECK(h.head == "sigsoftmax");
  CHECK(h.d == 4);
  CHECK(h.bias);
  CHECK(h.M == m);
  CHECK(h.T == t);
  CHECK(h.dataset == "toy");
  CHECK(h.seed == 7);
  CHECK(h.config == "lr = 30");
  CHECK(h.ppl == ppl);
  std::vector<float> back(rows.size());
  reader.read_rows(0, 500, back.data());
  reader.read_rows(500, t - 500, back.data() + 500 * m);
  CHECK(back == rows);
  CHECK(reader.read_targets() == targets);
  CHECK_FALSE(reader.has_vocab());  // header() had no vocab: no /vocab written
  CHECK_THROWS_WITH(reader.read_rows(990, 20, back.data()), Catch::Contains("outside [0, 1000)"));
  CHECK_THROWS_AS(reader.read_rows(990, 20, back.data()), sb::OptionError);
}

TEST_CASE("log-output file: an unfinished writer leaves no file behind") {
  const TempDir dir("unfinished");
  const auto path = (dir / "lp.h5").string();
  {
    LogProbWriter writer(path, header(10, 5));
    std::vector<float> row(5, -1.6f);
    int64_t target = 2;
    writer.write_rows(row.data(), &target, 1);
    CHECK_THROWS_WITH(writer.finish(), Catch::Contains("after 1 rows, expected T = 10"));
  }
  CHECK(fs::is_empty(dir));
  {
    LogProbWriter writer(path, header(1, 5));
    std::vector<float> row(10, -1.6f);
    int64_t bad_target = 5;
    CHECK_THROWS_WITH(writer.write_rows(row.data(), &bad_target, 1),
                      Catch::Contains("outside [0, 5)"));
    CHECK_THROWS_AS(writer.write_rows(row.data(), &bad_target, 1), sb::OptionError);
    int64_t targets[2] = {0, 1};
    CHECK_THROWS_WITH(writer.write_rows(row.data(), targets, 2), Catch::Contains("more rows"));
  }
  CHECK(fs::is_empty(dir));
  CHECK_THROWS_WITH(LogProbWriter(path,
                                  [] {
                                    auto h = header(3, 3);
                                    h.head = "soft";
                                    return h;
                                  }()),
                    Catch::Contains("valid heads"));
}

TEST_CASE(
    "log-output file: the writer's /vocab reads back word for word, a wrong count is refused") {
  const TempDir dir("vocab");
  const auto path = (dir / "lp.h5").string();
  auto h = header(/*t=*/2, /*m=*/3);
  h.vocab = {"the", "<eos>", "caf\xc3\xa9"};  // UTF-8 survives
  {
    LogProbWriter writer(path, h);
    const std::vector<float> rows(6, -1.0986123f);
    const std::vector<int64_t> targets{0, 2};
    writer.write_rows(rows.data(), targets.data(), 2);
    writer.finish();
  }
  LogProbReader reader(path);
  CHECK(reader.has_vocab());
  CHECK(reader.read_vocab() == h.vocab);
  CHECK(reader.header().vocab.empty());  // read on request only
  h.vocab.pop_back();
  CHECK_THROWS_WITH(LogProbWriter((dir / "short.h5").string(), h),
                    Catch::Contains("vocab has 2 words, expected M = 3"));
  CHECK_THROWS_AS(LogProbWriter((dir / "short.h5").string(), h), sb::OptionError);
  CHECK_FALSE(fs::exists(dir / "short.h5"));
}

TEST_CASE("log-output file: h5py-written files are read, and each contract violation is named") {
  const TempDir dir("h5py");
  sb::test::run_fixture_script("make_logprob_files.py", dir.string());
  auto open = [&](const char* name) { return LogProbReader((dir / name).string()); };

  const auto valid = open("valid.h5");
  CHECK(valid.rows() == 60);
  CHECK(valid.cols() == 25);
  CHECK(valid.header().head == "softmax");

  // Format 1's shape attributes were vocab_size and num_tokens; a later format is refused (below).
  const auto old = open("version1.h5");
  CHECK((old.rows() == 60 && old.cols() == 25 && old.header().d == 3));
  // Each broken file (tests/fixtures/make_logprob_files.py) and the words its refusal must hold.
  const std::pair<const char*, const char*> refusals[] = {
      {"missing_log_probs.h5", "dataset 'log_probs' is missing"},
      {"missing_targets.h5", "dataset 'targets' is missing"},
      {"wrong_dtype.h5", "'/log_probs' dtype: expected float32 or float64, got float16"},
      {"wrong_rank.h5", "rank: expected 2 (T, M), got (60, 25, 1)"},
      {"missing_attribute.h5", "attribute 'd' is missing"},
      {"inconsistent_shape.h5", "shape: expected (60, 26) from attributes T, M, got (60, 25)"},
      {"version3.h5", "attribute 'format_version': expected 1 or 2, got 3"},
      {"unknown_head.h5", "unknown head 'softmaxx'"},
      {"target_out_of_range.h5", "dataset '/targets' row 13: expected a value in [0, 25), got 25"},
      {"short_vocab.h5", "dataset '/vocab' shape: expected (25,) from M, got (24,)"},
      {"truncated.h5", "truncated or corrupt"},
      {"no_such_file.h5", "no_such_file.h5: no such file"},
  };
  for (const auto& [name, words] : refusals) {
    INFO(name);
    CHECK_THROWS_WITH(open(name), Catch::Contains(words));
  }
  // /vocab from h5py (fixed by the writer of another tool): read back word for word.
  CHECK_FALSE(valid.has_vocab());
  const auto with_vocab = open("valid_vocab.h5");
  REQUIRE(with_vocab.has_vocab());
  const auto words = with_vocab.read_vocab();
  REQUIRE(words.size() == 25);
  CHECK((words.front() == "w0" && words.back() == "w24"));
  // The kinds: not HDF5 / missing / another format_version is a FormatError; a contract file
  // whose content is wrong an InputError that is not one, naming the file and the field.
  for (const char* name : {"truncated.h5", "no_such_file.h5", "version3.h5"})
    CHECK_THROWS_AS(open(name), sb::FormatError);
  for (const char* name : {"missing_attribute.h5", "wrong_rank.h5", "unknown_head.h5",
                           "target_out_of_range.h5", "short_vocab.h5"}) {
    INFO(name);
    try {
      open(name);
      FAIL("refused");
    } catch (const sb::FormatError&) {
      FAIL("a content error is not a format error");
    } catch (const sb::InputError& e) {
      CHECK(e.file() == (dir / name).string());
      CHECK_FALSE(e.field().empty());
    }
  }
}

TEST_CASE(
    "log-output file: zero rows or columns are refused, and every attribute must hold one value "
    "of its type (a 1-element array is read as that value)") {
  const TempDir dir("h5py_attributes");
  const std::string cmd = "/usr/bin/python3 " SB_SOURCE_DIR
                          "/tests/fixtures/make_logprob_files.py " +
                          dir.string() + " > /dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  auto open = [&](const char* name) { return LogProbReader((dir / name).string()); };
  auto path = [&](const char* name) { return (dir / name).string(); };
  CHECK_THROWS_WITH(
      open("zero_rows.h5"),
      Catch::Equals(path("zero_rows.h5") + ": attribute 'T': expected at least 1 row, got 0"));
  CHECK_THROWS_WITH(
      open("zero_cols.h5"),
      Catch::Equals(path("zero_cols.h5") + ": attribute 'M': expected at least 1 column, got 0"));
  CHECK_THROWS_WITH(open("array_attribute.h5"),
                    Catch::Equals(path("array_attribute.h5") +
                                  ": attribute 'd': expected a scalar, got shape (2,)"));
  CHECK(open("one_element_attribute.h5").header().d == 3);
  CHECK_THROWS_WITH(open("float_attribute.h5"),
                    Catch::Equals(path("float_attribute.h5") +
                                  ": attribute 'd': expected an integer, got a float"));
  CHECK_THROWS_WITH(open("bool_attribute.h5"),
                    Catch::Equals(path("bool_attribute.h5") +
                                  ": attribute 'bias': expected an integer, got an enum (h5py "
                                  "writes numpy bools as one)"));
}

TEST_CASE(
    "log-output file: float64 /log_probs is read as stored, and a file without format_version is "
    "plain only when allowed") {
  const TempDir dir("plain");
  sb::test::run_fixture_script("make_matrix_files.py", dir.string());
  // contract_f64.h5 and plain_f32.h5 hold the same matrix, float64 and rounded to float32 by
  // numpy; HDF5's conversion on read rounds the same way (to nearest), so the floats are equal.
  const LogProbReader f64((dir / "contract_f64.h5").string());
  const LogProbReader f32((dir / "plain_f32.h5").string(), sb::contract::Contract::allow_plain);
  CHECK(f64.float64());
  CHECK_FALSE(f64.plain());
  CHECK(f64.header().compute_dtype == "float64");
  CHECK_FALSE(f32.float64());
  CHECK(f32.plain());
  CHECK(f32.rows() == 60);
  CHECK(f32.cols() == 25);
  CHECK(f32.header().compute_dtype == "float32");
  std::vector<double> d64(60 * 25), widened(60 * 25);
  std::vector<float> from64(60 * 25), stored32(60 * 25);
  f64.read_rows(0, 60, d64.data());
  f64.read_rows(0, 60, from64.data());
  f32.read_rows(0, 60, stored32.data());
  f32.read_rows(0, 60, widened.data());
  CHECK(from64 == stored32);
  for (size_t i = 0; i < d64.size(); ++i) {
    CHECK(static_cast<float>(d64[i]) == stored32[i]);
    CHECK(widened[i] == static_cast<double>(stored32[i]));
  }
  // float64 data differs from its float32 rounding: the double read is not a widened float.
  CHECK(std::count_if(d64.begin(), d64.end(), [](double v) {
          return v != static_cast<double>(static_cast<float>(v));
        }) > 1000);
  // The full contract refuses a plain file; a plain one has no /targets.
  CHECK_THROWS_WITH(LogProbReader((dir / "plain_f32.h5").string()),
                    Catch::Contains("plain_f32.h5: dataset 'targets' is missing"));
  CHECK_THROWS_WITH(f32.read_targets(), Catch::Contains("a plain file (no format_version)"));
}
