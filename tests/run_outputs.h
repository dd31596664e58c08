#pragma once
// What the trainer tests (test_trainer, test_nplm, test_charlm) share: a slice of PTB to train on,
// final.json and every row of a logprobs.h5 dump read back, and the interrupted-and-resumed run
// compared with an uninterrupted one.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <vector>

#include "contract/logprob_file.h"
#include "datasets/corpus.h"
#include "tests/corpus_or_skip.h"
#include "trainers/runkit/interrupt.h"

namespace sb::test {

/// Keeps the first train / valid / test ids of each split of a corpus (anything with .train,
/// .valid and .test id vectors: data::Corpus, charlm::CharCorpus).
template <class Splits>
Splits first_ids(Splits c, int64_t train, int64_t valid, int64_t test) {
  c.train.resize(static_cast<size_t>(train));
  c.valid.resize(static_cast<size_t>(valid));
  c.test.resize(static_cast<size_t>(test));
  return c;
}

/// The first tokens of PTB's splits, or nullopt (the test is skipped) without the corpus.
inline std::optional<data::Corpus> ptb_slice(int64_t train, int64_t valid, int64_t test) {
  const auto dir = corpus_or_skip("ptb");
  if (!dir) return std::nullopt;
  return first_ids(data::load_corpus(*dir), train, valid, test);
}

inline nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path.string() + ": cannot open");
  return nlohmann::json::parse(in);
}

/// The whole (T, M) matrix of a dump, row-major.
inline std::vector<float> all_rows(const contract::LogProbReader& reader) {
  std::vector<float> rows(static_cast<size_t>(reader.rows() * reader.cols()));
  reader.read_rows(0, reader.rows(), rows.data());
  return rows;
}

/// Runs a trainer in `out` that stops as Ctrl-C would every `stop_every` batches, then resumes it
/// until it finishes; returns how many resumes it took. run(out, stop_after, resume) builds the
/// trainer, resumes it when asked, sets stop_after_batches and returns run()'s status.
template <class RunFn>
int interrupt_and_resume(const std::filesystem::path& out, int64_t stop_every, RunFn run) {
  int status = run(out, stop_every, /*resume=*/false);
  CHECK(status == runkit::kInterrupted);
  CHECK_FALSE(std::filesystem::exists(out / "logprobs.h5"));  // no dump before the end
  int resumes = 0;
  while (status == runkit::kInterrupted) {
    status = run(out, stop_every, /*resume=*/true);
    ++resumes;
  }
  CHECK(status == runkit::kFinished);
  return resumes;
}

/// Two finished runs gave the same result bit for bit: final.json's valid loss, dump ppl, step
/// count and the trainer's whole section, and every value of the dump.
inline void check_identical_runs(const std::filesystem::path& a, const std::filesystem::path& b) {
  const auto fa = read_json(a / "final.json");
  const auto fb = read_json(b / "final.json");
  CHECK(fa["valid_loss"].get<double>() == fb["valid_loss"].get<double>());
  CHECK(fa["dump_ppl"].get<double>() == fb["dump_ppl"].get<double>());
  CHECK(fa["steps"].get<int64_t>() == fb["steps"].get<int64_t>());
  const std::string trainer = fa["trainer"];
  CHECK(fa[trainer] == fb[trainer]);
  const contract::LogProbReader ra((a / "logprobs.h5").string());
  const contract::LogProbReader rb((b / "logprobs.h5").string());
  CHECK(all_rows(ra) == all_rows(rb));
}

}  // namespace sb::test
