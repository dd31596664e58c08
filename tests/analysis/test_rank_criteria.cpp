// The criteria every result carries besides the NR rank (the sweep, the largest gap), the rows'
// kind (--input: logits or log-probabilities, declared or detected) and --estimate-d, through the
// rank_analysis binary on matrices written by numpy (tests/fixtures/make_rank_criteria_files.py,
// run with /usr/bin/python3), against numpy's values.

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/fixtures/run_command.h"
#include "tests/fixtures/temp_dir.h"

namespace fs = std::filesystem;
using namespace sb::test;  // tests/fixtures/

namespace {

// numpy's values per matrix: "rank", "rank_numpy", "sweep" (five), "gap" (ratio, index).
using Reference = std::map<std::string, std::map<std::string, std::vector<double>>>;

Reference make_files(const fs::path& dir) {
  const auto out = run_fixture_script("make_rank_criteria_files.py", dir.string());
  Reference ref;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string matrix, key;
    fields >> matrix >> key;
    for (double x; fields >> x;) ref[matrix][key].push_back(x);
  }
  for (const char* m : {"logprobs", "logits", "wide"}) REQUIRE(ref[m]["sweep"].size() == 5);
  return ref;
}

/// A test case's scratch directory with make_files' matrices and numpy's values, removed after it.
struct WithCriteriaFiles {
  const TempDir dir{"rank_criteria"};
  Reference ref = make_files(dir);
};

nlohmann::json analyse(const std::string& args, int* status) {
  const auto out = run(std::string(SB_RANK_ANALYSIS) + " --quiet --json " + args, status);
  REQUIRE(*status == 0);
  return nlohmann::json::parse(out);
}

}  // namespace

TEST_CASE_METHOD(
    WithCriteriaFiles,
    "rank criteria: the sweep and the largest gap match numpy on every method, and rank.h5 holds "
    "them") {
  const std::string facts = " --head softmax --d 12 --bias 1 ";
  for (const char* name : {"logprobs", "logits", "wide"}) {
    const auto file = (dir / (std::string(name) + ".npy")).string();
    auto& r = ref[name];
    int status = 0;
    // The exact float64 SVD of the stored values is numpy's computation: the sweep exactly (no
    // singular value lies within 1e-10 relative of a threshold here), the gap's ratio to 1e-6
    // relative (its smaller singular value is >= 1e-9 sigma_max, resolved to ~1e-16 / 1e-9).
    const auto j =
        analyse("--method exact --precision float64 --eps float32" + facts + file, &status);
    INFO(name);
    CHECK(j["rank"] == r["rank"][0]);
    CHECK(j["rank_numpy"] == r["rank_numpy"][0]);
    for (size_t k = 0; k < 5; ++k) CHECK(j["rank_sweep"][k] == r["sweep"][k]);
    CHECK(j["rank_sweep"][2] == j["rank"]);
    CHECK(j["largest_gap_index"] == r["gap"][1]);
    CHECK(j["largest_gap"].get<double>() == Approx(r["gap"][0]).epsilon(1e-6));
    // The Gram paths (row Gram: T < M here) agree on the rank, the gap's index and the sweep
    // from tol down to tol / 10 where the Gram resolves it (sqrt(eps64) sigma_max = 1.5e-8
    // sigma_max; wide's tail reaches 6e-8, so its tol / 100 entry is not compared).
    const auto g = analyse("--method gram --spectrum --eps float32" + facts + file, &status);
    CHECK(g["gram"] == "rows");
    CHECK(g["rank"] == r["rank"][0]);
    CHECK(g["largest_gap_index"] == r["gap"][1]);
    for (size_t k = 1; k < 5; ++k) CHECK(g["rank_sweep"][k] == r["sweep"][k]);
    CHECK(analyse("--method gram --gram columns --spectrum --eps float32" + facts + file,
                  &status)["rank"] == r["rank"][0]);
    // The sketch: the rank certified, the gap's index, and the sweep wherever it resolves the
    // threshold (entries below its residual bound are null, never wrong).
    const auto sk = analyse("--method sketch --eps float32" + facts + file, &status);
    CHECK(sk["method"] == "sketch");
    CHECK(sk["rank"] == r["rank"][0]);
    CHECK(sk["certified"] == true);
    CHECK(sk["largest_gap_index"] == r["gap"][1]);
    CHECK(sk["sketch_k"].get<int64_t>() >= sk["rank"].get<int64_t>());
    // Each pass but the sparse starts bounds the residual once, wrong w.p. <= 1e-12.
    const double bounded = sk["sketch_passes"].get<double>() - sk["sketch_starts"].get<double>();
    CHECK(sk["failure_probability"].get<double>() == Approx(bounded * 1e-12));
    CHECK(sk["residual_bound"].get<double>() < sk["tol"].get<double>());
    for (size_t k = 0; k < 5; ++k)
      if (!sk["rank_sweep"][k].is_null()) CHECK(sk["rank_sweep"][k] == r["sweep"][k]);
    CHECK(!sk["rank_sweep"][2].is_null());
  }
  // rank.h5: /rank_sweep and the gap's attributes, read back with h5py.
  int status = 0;
  const auto out = (dir / "wide.rank.h5").string();
  run(std::string(SB_RANK_ANALYSIS) + " --quiet --method exact --precision float64 --eps float32" +
          facts + "--out " + out + " " + (dir / "wide.npy").string(),
      &status);
  REQUIRE(status == 0);
  CHECK(h5py_print(out,
                   "list(f['rank_sweep'][:]), f.attrs['largest_gap_index'], "
                   "f.attrs['gram'], f.attrs['input'], f.attrs['input_from']") ==
        "[150, 104, 30, 30, 30] 30  logits detected\n");
}

TEST_CASE_METHOD(
    WithCriteriaFiles,
    "rank criteria: a softmax model's logits have rank d + bias and its log-probabilities one "
    "more, each detected from the rows' logsumexp or read from the attribute") {
  int status = 0;
  for (const auto& [suffix, bias] : {std::pair<std::string, int>{"", 1}, {"_nobias", 0}}) {
    const std::string facts = " --head softmax --d 12 --bias " + std::to_string(bias) + " ";
    for (const char* method : {"exact", "gram", "sketch"}) {
      INFO(method << suffix);
      const auto z = analyse(
          std::string("--method ") + method + facts + (dir / ("logits" + suffix + ".npy")).string(),
          &status);
      const auto l = analyse(std::string("--method ") + method + facts +
                                 (dir / ("logprobs" + suffix + ".npy")).string(),
                             &status);
      CHECK(z["input"] == "logits");
      CHECK(z["input_from"] == "detected");
      CHECK(l["input"] == "logprobs");
      CHECK(l["input_from"] == "detected");
      CHECK(z["rank"] == 12 + bias);
      CHECK(l["rank"] == 12 + 1 + bias);
      CHECK(z["bound"] == 12 + bias);
      CHECK(l["bound"] == 12 + 1 + bias);
      CHECK(z["verdict"] == "within_bound");
      CHECK(l["verdict"] == "within_bound");
    }
  }
  const std::string facts = " --head softmax --d 12 --bias 1 ";
  // Declared by the attribute, and by --input (which may repeat the attribute).
  const auto attr = analyse(facts + (dir / "logits_attr.h5").string(), &status);
  CHECK(attr["input"] == "logits");
  CHECK(attr["input_from"] == "attribute 'input'");
  CHECK(attr["rank"] == 13);
  const auto given = analyse("--input logits" + facts + (dir / "logits_attr.h5").string(), &status);
  CHECK(given["input_from"] == "--input");
  // The table says what was assumed, in one line, and which criterion to trust.
  const auto table =
      run(std::string(SB_RANK_ANALYSIS) + " --quiet" + facts + (dir / "logprobs.npy").string(),
          &status);
  CHECK(status == 0);
  CHECK(table.find("input: " + (dir / "logprobs.npy").string() +
                   ": every row's logsumexp is within 1e-3 of 0") != std::string::npos);
  CHECK(table.find("criteria: rank_NR") != std::string::npos);
}

TEST_CASE_METHOD(
    WithCriteriaFiles,
    "rank criteria: logits declared as log-probabilities, a contradiction and an --input outside "
    "the list exit 2 with one line and write nothing") {
  const std::string bin = SB_RANK_ANALYSIS;
  const std::string facts = " --head softmax --d 12 --bias 1 ";
  const auto out = dir / "r.h5";
  const auto logits = (dir / "logits.npy").string(), bad = (dir / "declared_bad.h5").string(),
             attr = (dir / "logits_attr.h5").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--input logprobs" + facts + logits,
       "rank_analysis: " + logits +
           ": declared log-probabilities (--input), but row 0 has "
           "logsumexp "},
      {facts + bad, "rank_analysis: " + bad +
                        ": declared log-probabilities (attribute 'input'), but row 0 has "
                        "logsumexp "},
      {"--method gram --spectrum" + facts + bad, "declared log-probabilities (attribute 'input')"},
      {"--input logprobs" + facts + attr,
       "rank_analysis: " + attr +
           ": --input logprobs contradicts the file's attribute 'input' = "
           "logits\n"},
      {"--input probs" + facts + logits,
       "rank_analysis: --input probs: expected logprobs, logits or auto\n"},
      {"--estimate-d --input nonsense " + logits, "--input nonsense: expected"},
  };
  for (const auto& [args, message] : cases) {
    INFO(args);
    int status = 0;
    const auto err =
        run(bin + " --quiet --out " + out.string() + " " + args + " 2>&1 >/dev/null", &status);
    CHECK(status == 2);
    CHECK(err.find(message) != std::string::npos);
    CHECK(std::count(err.begin(), err.end(), '\n') == 1);
    CHECK_FALSE(fs::exists(out));
  }
}

TEST_CASE_METHOD(
    WithCriteriaFiles,
    "rank criteria: --estimate-d gives d = 20 from noisy logits and log-probabilities, taking off "
    "the normaliser and the bias, as a line or JSON") {
  const std::string bin = std::string(SB_RANK_ANALYSIS) + " --quiet --estimate-d ";
  int status = 0;
  for (const char* method : {"exact", "gram", "sketch"}) {
    INFO(method);
    const std::string m = std::string("--method ") + method + " ";
    // Log-probabilities with a bias: the gap at d + 2 = 22.
    auto line = run(bin + m + "--bias 1 " + (dir / "est_logprobs.npy").string(), &status);
    CHECK(status == 0);
    CHECK(line.rfind("d = 20 (largest gap sigma_22 / sigma_23 = ", 0) == 0);
    CHECK(line.find("at i = 22; minus 1 for the log-softmax normaliser (detected "
                    "log-probabilities) and 1 for the decoder bias (--bias))\n") !=
          std::string::npos);
    // Logits with a bias: the gap at d + 1 = 21, no normaliser.
    auto j = nlohmann::json::parse(
        run(bin + m + "--json --bias 1 " + (dir / "est_logits.npy").string(), &status));
    CHECK(status == 0);
    CHECK(j["d"] == 20);
    CHECK(j["gap_index"] == 21);
    CHECK(j["input"] == "logits");
    CHECK(j["minus_normaliser"] == 0);
    CHECK(j["minus_bias"] == 1);
    // Noise 1e-6 max|Z| against singular values of order sqrt(T M / d) max|Z|: a gap of > 1e4.
    // The sketch reports a certified lower bound, lower_21 / upper_22, whose upper end carries
    // the residual bound (about 10x the tail's norm): > 1e3.
    CHECK(j["gap"].get<double>() > (std::string(method) == "sketch" ? 1e3 : 1e4));
    // No bias: the gap at d + 1 = 21, nothing taken off for a bias.
    j = nlohmann::json::parse(
        run(bin + m + "--json " + (dir / "est_logprobs_nobias.npy").string(), &status));
    CHECK(j["d"] == 20);
    CHECK(j["gap_index"] == 21);
    CHECK(j["minus_bias"] == 0);
    CHECK(j["bias_from"] == nullptr);
  }
}
