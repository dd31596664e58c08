// Rank analysis: Theorem 2 on synthetic files, gram vs exact on prescribed spectra, numpy as an
// independent reference, bad input, the binary's exit codes and outputs, and that it needs no
// LibTorch (synthetic files come from the separate synthetic_logprobs binary).

#include <lapacke.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "analysis/analyse.h"
#include "analysis/numerical_rank.h"
#include "tests/fixtures/prescribed_matrix.h"
#include "tests/fixtures/run_command.h"
#include "tests/fixtures/temp_dir.h"
#include "trainers/synthetic_logprobs.h"

namespace fs = std::filesystem;
using namespace sb::analysis;

namespace {

using namespace sb::test;  // tests/fixtures/

// The h5py-written fixtures (valid and broken files); returns the script's stdout (numpy's
// reference values for valid.h5).
std::string make_fixture_files(const fs::path& dir) {
  return run_fixture_script("make_logprob_files.py", dir.string());
}

/// A test case's scratch directory with make_fixture_files' files in it, removed after it.
struct WithFixtureFiles {
  WithFixtureFiles() { make_fixture_files(dir); }
  const TempDir dir{"rank_analysis"};
};

int64_t synthetic_rank(const fs::path& dir, const std::string& head, bool bias,
                       const std::string& method) {
  sb::SyntheticOptions o;
  o.spec = sb::HeadSpec::parse(head);
  o.tokens = 6000;
  o.vocab = 2000;
  o.d = 64;
  o.bias = bias;
  const auto path = (dir / (o.spec.name() + (bias ? "" : "_nobias") + ".h5")).string();
  if (!fs::exists(path)) sb::write_synthetic_logprobs(path, o);
  AnalyseOptions a;
  a.method = method;
  const auto r = analyse_file(path, a);
  INFO(head << " bias " << bias << " " << method << ": rank " << r.report.rank << ", tol "
            << r.report.tol << ", sigma_max " << r.report.sigma_max);
  CHECK(r.method == method);
  CHECK(r.report.resolvable);
  return r.report.rank;
}

}  // namespace

TEST_CASE(
    "rank analysis: synthetic softmax has rank d + 2 with a bias and d + 1 without (Theorem 2)") {
  const TempDir dir("theorem2");
  for (const char* method : {"gram", "exact", "sketch"}) {
    CHECK(synthetic_rank(dir, "softmax", true, method) == 64 + 2);
    CHECK(synthetic_rank(dir, "softmax", false, method) == 64 + 1);
  }
}

TEST_CASE("rank analysis: sigsoftmax, sigmoid, ReLU, MoS and Taylor exceed d + 2") {
  const TempDir dir("exceed");
  for (const char* head : {"sigsoftmax", "sigmoid", "relu", "mos:K=3", "taylor"})
    CHECK(synthetic_rank(dir, head, true, "gram") > 64 + 2);
}

TEST_CASE(
    "rank analysis: the adaptive softmax's rank is d + 1 + (tail clusters) + bias exactly, "
    "and adaptive sigsoftmax exceeds it") {
  const TempDir dir("adaptive");
  // M = 2000 in a head of 200 and tails [200, 800), [800, 2000): n = 2 tail clusters, d = 64.
  for (const char* method : {"gram", "exact"}) {
    CHECK(synthetic_rank(dir, "adaptive:cutoffs=200,800", true, method) == 64 + 1 + 2 + 1);
    CHECK(synthetic_rank(dir, "adaptive:cutoffs=200,800", false, method) == 64 + 1 + 2);
  }
  // The bound comes from the file's head_spec attribute (one more per tail cluster).
  AnalyseOptions a;
  const auto r = analyse_file((dir / "adaptive.h5").string(), a);
  CHECK(r.header.head == "adaptive");
  CHECK(r.header.head_spec == "adaptive:cutoffs=200,800");
  CHECK(r.report.bound == 68);
  CHECK(r.report.within_bound);
  CHECK(r.report.theorem2_bounded);
  CHECK(synthetic_rank(dir, "adaptive_sigsoftmax:cutoffs=200,800", true, "gram") > 68);
}

TEST_CASE("rank analysis: gram and exact agree on prescribed spectra down to 1e-7 sigma_max") {
  const int64_t t = 3000, m = 400;
  std::mt19937_64 gen(5);
  const auto u = sb::test::orthonormal(t, m, gen),
             v = sb::test::orthonormal(m, m, gen);  // column-major
  std::vector<double> s(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) s[size_t(i)] = std::pow(10.0, -7.0 * double(i) / double(m - 1));
  // A = U diag(s) V^T, stored row-major T x M in float32 (entry rounding ~5e-9 sigma_max in norm).
  std::vector<float> a(static_cast<size_t>(t * m));
  for (int64_t r = 0; r < t; ++r)
    for (int64_t c = 0; c < m; ++c) {
      double acc = 0;
      for (int64_t k = 0; k < m; ++k)
        acc += u[size_t(k * t + r)] * s[size_t(k)] * v[size_t(k * m + c)];
      a[size_t(r * m + c)] = static_cast<float>(acc);
    }
  const RowReader read = [&](int64_t begin, int64_t count, float* out) {
    std::copy(a.begin() + begin * m, a.begin() + (begin + count) * m, out);
  };
  FiniteScan scan_e, scan_g;
  const auto exact = singular_values_exact(read, t, m, /*float64=*/true, &scan_e);
  const auto gram = singular_values_gram(read, t, m, /*block_rows=*/512, &scan_g);
  REQUIRE(exact.size() == size_t(m));
  REQUIRE(gram.size() == size_t(m));
  // The exact path recovers the prescribed spectrum (float32 storage perturbs sigma by ~5e-9).
  CHECK(std::abs(exact[0] - 1.0) < 1e-6);
  // Gram's error in sigma_i is ~ n eps64 sigma_max^2 / sigma_i (eigenvalue round-off): relative
  // 1e-7 for sigma >= 1e-3 sigma_max, 2e-2 for sigma >= 1e-6 sigma_max.
  for (int64_t i = 0; i < m; ++i) {
    const double rel = std::abs(gram[size_t(i)] - exact[size_t(i)]) / exact[size_t(i)];
    if (exact[size_t(i)] >= 1e-3 * exact[0]) {
      INFO("i = " << i);
      CHECK(rel < 1e-7);
    } else if (exact[size_t(i)] >= 1e-6 * exact[0]) {
      INFO("i = " << i << " sigma " << exact[size_t(i)]);
      CHECK(rel < 2e-2);
    }
  }
  // The two-stage eigensolver (taken automatically from M = 6000) gives the same spectrum.
  FiniteScan scan_2;
  const auto gram2 =
      singular_values_gram(read, t, m, 512, &scan_2, nullptr, EigenSolver::dsyevd_2stage);
  REQUIRE(gram2.size() == size_t(m));
  for (int64_t i = 0; i < m;
       ++i)  // both from the same G: eigenvalue round-off only, 1e-12 sigma_max
    CHECK(std::abs(gram2[size_t(i)] * gram2[size_t(i)] - gram[size_t(i)] * gram[size_t(i)]) <
          1e-12);
  const auto re = numerical_rank(exact, t, m, kFloat32Eps, 10, false, kFloat64Eps);
  const auto rg = numerical_rank(gram, t, m, kFloat32Eps, 10, false, std::sqrt(kFloat64Eps));
  CHECK(re.rank == rg.rank);
  CHECK(re.rank_numpy == rg.rank_numpy);
  CHECK(rg.resolvable);
  // The float64 threshold (~1e-14 sigma_max) is below what gram resolves, and it says so.
  CHECK_FALSE(
      numerical_rank(gram, t, m, kFloat64Eps, 10, false, std::sqrt(kFloat64Eps)).resolvable);
}

TEST_CASE("rank analysis: singular values and both ranks match numpy on a small matrix") {
  const TempDir dir("numpy");
  std::istringstream lines(make_fixture_files(dir));
  std::string key, line;
  std::vector<double> sigma;
  int64_t rank_nr = -1, rank_np = -1;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    fields >> key;
    if (key == "sigma")
      for (double x; fields >> x;) sigma.push_back(x);
    if (key == "rank_nr") fields >> rank_nr;
    if (key == "rank_numpy") fields >> rank_np;
  }
  REQUIRE(sigma.size() == 25);
  AnalyseOptions o;
  o.method = "exact";
  o.precision = "float64";
  const auto r = analyse_file((dir / "valid.h5").string(), o);
  REQUIRE(r.singular_values.size() == 25);
  // Both are LAPACK float64 SVDs of the same float32 matrix: agreement to ~1e-12 of sigma_max.
  for (size_t i = 0; i < sigma.size(); ++i)
    CHECK(std::abs(r.singular_values[i] - sigma[i]) < 1e-12 * sigma[0]);
  CHECK(r.report.rank == rank_nr);
  CHECK(r.report.rank_numpy == rank_np);
  CHECK(r.report.rank == 5);  // d + 2 with d = 3: the file is log-softmax of rank-3 logits + bias
}

TEST_CASE_METHOD(WithFixtureFiles,
                 "rank analysis: NaN/Inf entries are refused with counts and the first position") {
  for (const char* method : {"exact", "gram"}) {
    AnalyseOptions o;
    o.method = method;
    CHECK_THROWS_WITH(
        analyse_file((dir / "nan_inf.h5").string(), o),
        Catch::Contains("2 NaN, 1 +inf, 0 -inf entries; the first at row 7, column 3"));
    CHECK_THROWS_WITH(analyse_file((dir / "sparse_neg_inf.h5").string(), o),
                      Catch::Contains("2 -inf") && Catch::Contains("head 'sparse'") &&
                          Catch::Contains("rank of the log-output matrix is undefined"));
  }
}

TEST_CASE_METHOD(
    WithFixtureFiles,
    "rank_analysis binary: bad input exits non-zero with one message and no output file") {
  int status = 0;
  const std::string bin = SB_RANK_ANALYSIS;
  for (const char* name :
       {"missing_log_probs.h5", "wrong_dtype.h5", "wrong_rank.h5", "missing_attribute.h5",
        "inconsistent_shape.h5", "nan_inf.h5", "sparse_neg_inf.h5", "truncated.h5"}) {
    INFO(name);
    const auto result = dir / (std::string(name) + ".rank.h5");
    const auto err =
        run(bin + " --out " + result.string() + " " + (dir / name).string() + " 2>&1", &status);
    CHECK(status == 2);
    CHECK(err.find(std::string("rank_analysis: ") + (dir / name).string()) != std::string::npos);
    CHECK_FALSE(fs::exists(result));
  }
  // A missing path is bad input like the others (CLI11's ExistingFile check used to exit 105).
  const auto absent = (dir / "absent.h5").string();
  CHECK(run(bin + " --quiet " + absent + " 2>&1", &status) ==
        "rank_analysis: " + absent + ": no such file\n");
  CHECK(status == 2);
  const auto eps_err = run(bin + " --eps 1e-7x " + (dir / "valid.h5").string() + " 2>&1", &status);
  CHECK(status == 2);
  CHECK(eps_err.find("--eps 1e-7x: expected float32, float64 or a number in (0, 1)") !=
        std::string::npos);

  // --check: a Theorem-2-bounded head above its bound is a bug, exit 3; valid files exit 0.
  run(bin + " --check " + (dir / "violates_theorem2.h5").string() + " 2>/dev/null", &status);
  CHECK(status == 3);
  run(bin + " " + (dir / "violates_theorem2.h5").string() + " 2>/dev/null", &status);
  CHECK(status == 0);

  // --json and --out on a valid file.
  const auto result = dir / "valid.rank.h5";
  const auto json =
      run(bin + " --check --json --out " + result.string() + " " + (dir / "valid.h5").string(),
          &status);
  CHECK(status == 0);
  const auto j = nlohmann::json::parse(json);
  CHECK(j["rank"] == 5);
  CHECK(j["bound"] == 5);
  CHECK(j["verdict"] == "within_bound");
  CHECK(j["head"] == "softmax");
  CHECK(j["M"] == 25);
  CHECK(j["T"] == 60);
  CHECK(j["eps"].get<double>() == kFloat32Eps);
  REQUIRE(fs::exists(result));
  CHECK(h5py_print(result.string(),
                   "f.attrs['rank'], f.attrs['verdict'], f['singular_values'].shape[0]") ==
        "5 within_bound 25\n");
}

namespace {

// Runs the binary (stderr only) and checks the refusal: exit status 2, exactly one line that
// starts with "rank_analysis: " and contains `needle`. Returns the line.
std::string refused(const std::string& args, const std::string& needle) {
  int status = 0;
  const auto err = run(std::string(SB_RANK_ANALYSIS) + " " + args + " 2>&1 >/dev/null", &status);
  INFO(args << "\n -> " << err);
  CHECK(status == 2);
  CHECK(err.rfind("rank_analysis: ", 0) == 0);
  CHECK(std::count(err.begin(), err.end(), '\n') == 1);
  CHECK(err.find(needle) != std::string::npos);
  return err;
}

}  // namespace

TEST_CASE_METHOD(
    WithFixtureFiles,
    "rank_analysis binary: a contract file with zero rows or columns, or an attribute that is "
    "not one integer, exits 2 naming the file and the attribute, and writes nothing") {
  const auto result = (dir / "r.rank.h5").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"zero_rows.h5", "zero_rows.h5: attribute 'T': expected at least 1 row, got 0"},
      {"zero_cols.h5", "zero_cols.h5: attribute 'M': expected at least 1 column, got 0"},
      {"array_attribute.h5",
       "array_attribute.h5: attribute 'd': expected a scalar, got shape (2,)"},
      {"float_attribute.h5", "attribute 'd': expected an integer, got a float"},
      {"bool_attribute.h5", "attribute 'bias': expected an integer, got an enum"}};
  for (const auto& [file, needle] : cases)
    for (const char* method : {"exact", "gram", "auto"}) {
      refused("--quiet --method " + std::string(method) + " --out " + result + " " +
                  (dir / file).string(),
              needle);
      CHECK_FALSE(fs::exists(result));
    }
  // A 1-element array is what h5py writes for f.attrs["d"] = [3]: read as the value.
  int status = 0;
  const auto json = run(std::string(SB_RANK_ANALYSIS) + " --quiet --json " +
                            (dir / "one_element_attribute.h5").string(),
                        &status);
  CHECK(status == 0);
  CHECK(nlohmann::json::parse(json)["d"] == 3);
}

TEST_CASE_METHOD(
    WithFixtureFiles,
    "rank_analysis binary: impossible option values and options that do not go together exit 2 "
    "with one line naming the options and what is expected") {
  const auto valid = (dir / "valid.h5").string();
  const auto result = (dir / "valid.rank.h5").string();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--budget-gb -1", "--budget-gb -1: expected a finite number of GiB > 0"},
      {"--budget-gb 0", "--budget-gb 0: expected a finite number of GiB > 0"},
      {"--budget-gb inf", "--budget-gb inf: expected a finite number of GiB > 0"},
      {"--budget-gb nan", "--budget-gb nan: expected a finite number of GiB > 0"},
      {"--threads 0", "--threads 0: expected threads >= 1"},
      {"--block-rows 0", "--block-rows 0: expected block rows >= 1"},
      {"--eps 1", "--eps 1: expected float32, float64 or a number in (0, 1)"},
      {"--eps -1e-7", "--eps -1e-7: expected float32, float64 or a number in (0, 1)"},
      {"--d 0", "--d 0: expected d >= 1"},
      {"--bias 2", "--bias 2: expected bias 0 or 1"},
      {"--method exact --rank-only",
       "--rank-only with --method exact: --rank-only goes with --method gram or auto"},
      {"--method gram --precision float32",
       "--precision float32 with --method gram: --precision goes with --method exact or auto"},
      {"--method exact --no-overlap",
       "--no-overlap with --method exact: --no-overlap goes with --method gram or auto"},
      {"--method exact --block-rows 64",
       "--block-rows with --method exact: --block-rows goes with --method gram or auto"},
  };
  for (const auto& [options, needle] : cases) {
    refused("--quiet " + options + " --out " + result + " " + valid, needle);
    CHECK_FALSE(fs::exists(result));
  }
  refused("--quiet --rank-only --out " + result + " " + valid,
          "--rank-only computes no singular values, which --out / --out-dir write");
  refused("--list-heads " + valid, "--list-heads takes no input files, got 1");
  // --out: one input, a new file in an existing directory, never the input itself.
  refused("--quiet --out " + result + " " + valid + " " + valid,
          "--out takes one input file, got 2");
  refused("--quiet --out " + dir.string() + " " + valid,
          "--out " + dir.string() + ": expected a file path, got a directory");
  refused("--quiet --out " + (dir / "no_dir" / "r.h5").string() + " " + valid,
          ": expected an existing directory, got '" + (dir / "no_dir").string() + "'");
  refused("--quiet --out " + valid + " " + valid,
          "--out " + valid + ": expected a path other than the input file's");
  CHECK_FALSE(fs::exists(result));
  // --rank-only with --method auto takes gram (the inertia count), not an exact SVD.
  int status = 0;
  const auto j = nlohmann::json::parse(
      run(std::string(SB_RANK_ANALYSIS) + " --quiet --json --rank-only " + valid, &status));
  CHECK(status == 0);
  CHECK(j["method"] == "gram");
  CHECK(j["spectrum"] == false);
}

TEST_CASE_METHOD(
    WithFixtureFiles,
    "rank_analysis binary: every input is validated before any is analysed, so a bad file "
    "anywhere in the list exits 2 and --out-dir writes nothing") {
  const auto out_dir = dir / "results";
  const auto valid = (dir / "valid.h5").string();
  // A header error (found on opening) and a NaN (found while streaming) after a good file.
  refused("--quiet --out-dir " + out_dir.string() + " " + valid + " " +
              (dir / "missing_attribute.h5").string(),
          "missing_attribute.h5: attribute 'd' is missing");
  CHECK_FALSE(fs::exists(out_dir));
  refused(
      "--quiet --out-dir " + out_dir.string() + " " + valid + " " + (dir / "nan_inf.h5").string(),
      "nan_inf.h5: /log_probs holds 2 NaN");
  CHECK_FALSE(fs::exists(out_dir));
  // Two inputs named alike would write the same result.
  fs::create_directories(dir / "again");
  fs::copy_file(valid, dir / "again" / "valid.h5");
  refused("--quiet --out-dir " + out_dir.string() + " " + valid + " " +
              (dir / "again" / "valid.h5").string(),
          "would both write " + (out_dir / "valid.rank.h5").string());
  CHECK_FALSE(fs::exists(out_dir));
  // --out-dir naming a file.
  refused("--quiet --out-dir " + valid + " " + valid,
          "--out-dir " + valid + ": expected a directory, got another kind of file");
  // Good inputs: every result is written.
  int status = 0;
  run(std::string(SB_RANK_ANALYSIS) + " --quiet --out-dir " + out_dir.string() + " " + valid + " " +
          (dir / "version1.h5").string() + " 2>&1",
      &status);
  CHECK(status == 0);
  CHECK(fs::exists(out_dir / "valid.rank.h5"));
  CHECK(fs::exists(out_dir / "version1.rank.h5"));
}

TEST_CASE_METHOD(
    WithFixtureFiles,
    "rank_analysis binary: a file declaring 2^40 rows it never wrote is refused before anything "
    "is allocated, in one line naming the file, exit 2") {
  // T = 2^40 declared and never written: checking /targets would need 8 TiB. The reader checks
  // that a dataset's elements are stored in the file before it reads them, so even under a 4 GiB
  // address-space limit the refusal names the storage, not an allocation failure.
  const auto file = (dir / "huge_unwritten.h5").string();
  int status = 0;
  const auto err = run("ulimit -v 4000000; " + std::string(SB_RANK_ANALYSIS) + " --quiet --out " +
                           (dir / "r.h5").string() + " " + file + " 2>&1 >/dev/null",
                       &status);
  CHECK(status == 2);
  CHECK(err == "rank_analysis: " + file +
                   ": dataset '/log_probs' storage: expected its elements written, got no storage "
                   "allocated (a dataset created but never written)\n");
  CHECK_FALSE(fs::exists(dir / "r.h5"));
}

TEST_CASE_METHOD(WithFixtureFiles,
                 "rank analysis: progress lines count the rows read and then announce the solver") {
  // valid.h5: T = 60, M = 25
  for (const char* method : {"gram", "exact"}) {
    INFO(method);
    std::vector<std::string> lines;
    AnalyseOptions o;
    o.method = method;
    o.block_rows = 16;       // gram: 4 blocks of 16, 16, 16, 12 rows
    o.progress_seconds = 0;  // every block
    o.on_progress = [&](const std::string& line) { lines.push_back(line); };
    const auto r = analyse_file((dir / "valid.h5").string(), o);
    REQUIRE(r.report.rank == 5);
    REQUIRE(lines.size() >= 2);
    // The streaming pass: row counts rise to T, every line but the last with an ETA.
    int64_t previous = 0;
    for (size_t i = 0; i + 1 < lines.size(); ++i) {
      INFO(lines[i]);
      CHECK(lines[i].rfind(std::string(method) + ": ", 0) == 0);
      const auto rows = std::stoll(lines[i].substr(lines[i].find(": ") + 2));
      CHECK(rows > previous);
      previous = rows;
      CHECK((lines[i].find("ETA") != std::string::npos) == (i + 2 < lines.size()));
    }
    CHECK(lines[lines.size() - 2].find("60 / 60 rows (100.0%)") != std::string::npos);
    CHECK(lines.back().find("(one LAPACK call)") != std::string::npos);
    if (std::string(method) == "gram") CHECK(lines.size() == 4 + 1);

    // Throttled: a long period leaves only the last block's line and the solver's.
    lines.clear();
    o.progress_seconds = 1e9;
    analyse_file((dir / "valid.h5").string(), o);
    REQUIRE(lines.size() == 2);
    CHECK(lines[0].find("60 / 60 rows") != std::string::npos);
  }
  // The binary: progress on stderr by default, none with --quiet; stdout stays the JSON document.
  int status = 0;
  const std::string bin = SB_RANK_ANALYSIS;
  const auto file = (dir / "valid.h5").string();
  const auto err = run(bin + " --json " + file + " 2>&1 >/dev/null", &status);
  CHECK(status == 0);
  CHECK(err.find("rank_analysis: " + file + ": ") != std::string::npos);
  CHECK(run(bin + " --json --quiet " + file + " 2>&1 >/dev/null", &status).empty());
  CHECK(status == 0);
}

TEST_CASE("rank_analysis binary: loads no LibTorch, while synthetic_logprobs does (ldd)") {
  // ldd lists every shared library the dynamic loader maps at start-up, dependencies of
  // dependencies included. The same check on synthetic_logprobs, which links LibTorch, shows
  // that it detects the libraries when they are there.
  auto torch_libs = [](const std::string& binary) {
    int status = 0;
    const auto out = run("ldd " + binary + " 2>&1", &status);
    REQUIRE(status == 0);
    REQUIRE(out.find("libc.so") != std::string::npos);  // ldd really listed the libraries
    std::vector<std::string> found;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);)
      if (line.find("libtorch") != std::string::npos || line.find("libc10") != std::string::npos)
        found.push_back(line);
    return found;
  };
  const auto analysis = torch_libs(SB_RANK_ANALYSIS);
  INFO("rank_analysis loads: " << (analysis.empty() ? "" : analysis.front()));
  CHECK(analysis.empty());
  CHECK_FALSE(torch_libs(SB_SYNTHETIC_LOGPROBS).empty());
}

TEST_CASE_METHOD(WithFixtureFiles,
                 "rank_analysis binary: --device cuda needs rank_analysis_torch beside it, else "
                 "exit 2") {
  // The LAPACK binary hands --device cuda to rank_analysis_torch in its own directory or torch/
  // below it (analysis/torch/, built only against a CUDA LibTorch or with SB_ANALYSIS_TORCH).
  const fs::path bin = SB_RANK_ANALYSIS;
  const bool has_torch = fs::exists(bin.parent_path() / "rank_analysis_torch") ||
                         fs::exists(bin.parent_path() / "torch" / "rank_analysis_torch");
  int status = 0;
  if (!has_torch) {  // with it, tests/analysis/test_rank_analysis_torch.py checks the device path
    const auto out = run(
        bin.string() + " --device cuda --quiet " + (dir / "valid.h5").string() + " 2>&1", &status);
    CHECK(status == 2);
    CHECK(std::count(out.begin(), out.end(), '\n') == 1);
    CHECK(out.find("this build has no rank_analysis_torch") != std::string::npos);
  }
  // cpu (the default) is LAPACK here, and anything else is a malformed command line.
  run(bin.string() + " --device cpu --quiet " + (dir / "valid.h5").string() + " 2>&1", &status);
  CHECK(status == 0);
  run(bin.string() + " --device tpu --quiet " + (dir / "valid.h5").string() + " 2>&1", &status);
  CHECK(status == 2);
}

TEST_CASE("synthetic_logprobs binary: a softmax file has rank d + 2 under rank_analysis --check") {
  const TempDir dir("synthetic_bin");
  const auto file = (dir / "softmax.h5").string();
  int status = 0;
  const auto wrote =
      run(std::string(SB_SYNTHETIC_LOGPROBS) +
              " --head softmax --T 900 --M 300 --d 16 --seed 3 --threads 1 --out " + file,
          &status);
  REQUIRE(status == 0);
  CHECK(wrote.rfind("wrote " + file + " (T = 900, M = 300, d = 16, bias 1, head softmax", 0) == 0);
  const auto j = nlohmann::json::parse(
      run(std::string(SB_RANK_ANALYSIS) + " --quiet --json --check " + file, &status));
  CHECK(status == 0);
  CHECK(j["rank"] == 16 + 2);
  CHECK(j["bound"] == 16 + 2);
  CHECK(j["T"] == 900);
  CHECK(j["dataset"] == "synthetic");
  // --logits: the same seed's logits H W^T + b, declared by the attribute: rank d + bias, and
  // the log-probabilities are their log_softmax (float32 rounding of values of order 10: 1e-4).
  const auto logits = (dir / "logits.h5").string();
  CHECK(run(std::string(SB_SYNTHETIC_LOGPROBS) +
                " --head softmax --T 900 --M 300 --d 16 --seed 3 --threads 1 --logits --out " +
                logits,
            &status)
            .find("head softmax, logits)") != std::string::npos);
  REQUIRE(status == 0);
  const auto z = nlohmann::json::parse(
      run(std::string(SB_RANK_ANALYSIS) + " --quiet --json " + logits, &status));
  CHECK(z["rank"] == 16 + 1);
  CHECK(z["bound"] == 16 + 1);
  CHECK(z["input"] == "logits");
  CHECK(z["input_from"] == "attribute 'input'");
  CHECK(run("/usr/bin/python3 -c \"import h5py, numpy as np, scipy.special as sp; "
            "z = h5py.File('" +
                logits +
                "')['log_probs'][...].astype(float); "
                "lp = h5py.File('" +
                file +
                "')['log_probs'][...]; "
                "print(np.abs(lp - (z - sp.logsumexp(z, axis=1, keepdims=True))).max() < 1e-4)\"",
            &status) == "True\n");
  // Bad options exit 2 with one line, and leave no file.
  const auto bad = (dir / "bad.h5").string();
  const auto err =
      run(std::string(SB_SYNTHETIC_LOGPROBS) + " --head softmaxx --out " + bad + " 2>&1", &status);
  CHECK(status == 2);
  CHECK(err.rfind("synthetic_logprobs: ", 0) == 0);
  CHECK(err.find("unknown head 'softmaxx'") != std::string::npos);
  CHECK_FALSE(fs::exists(bad));
}

TEST_CASE(
    "rank_analysis binary: --rank-only and --spectrum give the same certified rank, --rank-only "
    "refuses --out") {
  const TempDir dir("rank_only");
  const std::string bin = SB_RANK_ANALYSIS;
  int status = 0;
  for (const char* head : {"softmax", "sigmoid"}) {
    INFO(head);
    sb::SyntheticOptions o;
    o.spec = sb::HeadSpec::parse(head);
    o.tokens = 6000;
    o.vocab = 2000;
    o.d = 64;
    const auto file = (dir / (std::string(head) + ".h5")).string();
    sb::write_synthetic_logprobs(file, o);
    const auto only =
        nlohmann::json::parse(run(bin + " --quiet --json --rank-only " + file, &status));
    CHECK(status == 0);
    const auto full =
        nlohmann::json::parse(run(bin + " --quiet --json --spectrum " + file, &status));
    CHECK(status == 0);
    // Without --out, the default asks for the rank, not every singular value: the inertia count
    // (--rank-only), or the sketch where auto's cost model prefers it (a bounded head: softmax's
    // sketch at k = 76 costs 1.1e10 FLOP against the Gram path's 5.6e10, analyse.h).
    const auto plain = nlohmann::json::parse(run(bin + " --quiet --json " + file, &status));
    if (std::string(head) == "softmax") {
      CHECK(plain["method"] == "sketch");
      CHECK(plain["certified"] == true);
    } else {
      CHECK(plain["method"] == "gram");
      CHECK(plain["spectrum"] == false);
    }
    CHECK(plain["rank"] == only["rank"]);

    CHECK(only["spectrum"] == false);
    CHECK(full["spectrum"] == true);
    CHECK(only["rank"] == full["rank"]);
    CHECK(only["certified"] == true);
    CHECK(full["certified"] == true);
    CHECK(only["uncertain"] == 0);
    CHECK(only["rank_min"] == only["rank"]);
    CHECK(only["rank_max"] == only["rank"]);
    CHECK(only["rank_numpy"].is_null());  // not computed without the spectrum
    CHECK(only["spectral_gap"].is_null());
    CHECK(full["rank_numpy"].is_number());
    CHECK(only["solver"].get<std::string>().rfind("power_iteration+", 0) == 0);
    // sigma_max by power iteration vs dsyevd's largest eigenvalue: both within ~1e-13 relative
    // of lambda_1 of the same G (the iteration stops at a 1e-12 bracket).
    const double s1 = only["sigma_max"], s2 = full["sigma_max"];
    CHECK(std::abs(s1 - s2) < 1e-11 * s2);
    CHECK(only["sigma_max_rel_error"].get<double>() < 1e-11);
    // The certificate's window brackets tol.
    CHECK(only["tol_lo"].get<double>() < only["tol"].get<double>());
    CHECK(only["tol_hi"].get<double>() > only["tol"].get<double>());
    if (std::string(head) == "softmax") CHECK(only["rank"] == 64 + 2);
    if (std::string(head) == "sigmoid") CHECK(only["rank"].get<int64_t>() > 64 + 2);
  }

  // --rank-only has no singular values to write: --out and --out-dir are refused, nothing written.
  const auto file = (dir / "softmax.h5").string(), result = (dir / "r.h5").string();
  const auto err = run(bin + " --rank-only --out " + result + " " + file + " 2>&1", &status);
  CHECK(status == 2);
  CHECK(err.find("--rank-only computes no singular values") != std::string::npos);
  CHECK_FALSE(fs::exists(result));
  run(bin + " --rank-only --out-dir " + (dir / "out").string() + " " + file + " 2>&1", &status);
  CHECK(status == 2);
  CHECK_FALSE(fs::exists(dir / "out"));
  // --out implies the spectrum: the result file has the singular values and the certificate.
  run(bin + " --quiet --out " + result + " " + file, &status);
  CHECK(status == 0);
  CHECK(h5py_print(result,
                   "f.attrs['spectrum'], f.attrs['certified'], f.attrs['uncertain'], "
                   "f['singular_values'].shape[0]") == "1 1 0 2000\n");
}

TEST_CASE(
    "rank analysis: a bound at or above min(M, T) is reported as not binding, never as a "
    "violation") {
  // A character-level LM has M ~ 50 symbols and d >= M: Theorem 2's d + 2 cannot bind. The rank
  // may reach M; the verdict says the bound is not binding, and --check must not fail.
  std::vector<double> sigma(20);
  for (size_t i = 0; i < sigma.size(); ++i) sigma[i] = 10.0 / static_cast<double>(i + 1);
  const auto r = numerical_rank(sigma, /*rows=*/300, /*cols=*/20, kFloat32Eps, /*bound=*/42,
                                /*theorem2_bounded=*/true, /*resolution_rel=*/1e-8);
  CHECK(r.rank == 20);
  CHECK(r.within_bound);
  CHECK_FALSE(r.bound_binding);
  CHECK(r.verdict() == "bound_not_binding");
  CHECK(std::isnan(r.spectral_gap));
  // The edge: a bound equal to min(M, T) constrains nothing either; one below it does.
  CHECK(numerical_rank(sigma, 300, 20, kFloat32Eps, 20, true, 1e-8).verdict() ==
        "bound_not_binding");
  CHECK(numerical_rank(sigma, 300, 20, kFloat32Eps, 19, true, 1e-8).verdict() == "exceeds_bound");
  CHECK(numerical_rank(sigma, 15, 20, kFloat32Eps, 16, true, 1e-8).verdict() ==
        "bound_not_binding");  // T = 15 < M: min(M, T) = 15

  // The binary on a softmax file with d = 40 > M = 20: full rank, exit 0 under --check, for the
  // exact path, the gram path with singular values, and the gram rank-only (inertia) path.
  const TempDir dir("not_binding");
  sb::SyntheticOptions o;
  o.spec = sb::HeadSpec::parse("softmax");
  o.tokens = 300;
  o.vocab = 20;
  o.d = 40;
  o.bias = true;
  const auto file = (dir / "softmax_d40_m20.h5").string();
  sb::write_synthetic_logprobs(file, o);
  const std::string bin = SB_RANK_ANALYSIS;
  for (const char* args :
       {"--method exact", "--method gram --spectrum", "--method gram --rank-only"}) {
    INFO(args);
    int status = -1;
    const auto json =
        run(bin + " --quiet --check --json " + args + " " + file + " 2>/dev/null", &status);
    CHECK(status == 0);
    const auto j = nlohmann::json::parse(json);
    CHECK(j["rank"] == 20);
    CHECK(j["bound"] == 42);
    CHECK(j["verdict"] == "bound_not_binding");
    CHECK(j["bound_binding"] == false);
  }
  int status = -1;
  const auto table = run(bin + " --quiet --check " + file, &status);
  CHECK(status == 0);
  CHECK(table.find("bound_not_binding") != std::string::npos);
  CHECK(table.find("note: " + file + ": the bound 42 is not below min(M, T) = 20") !=
        std::string::npos);
}

TEST_CASE(
    "rank analysis: a cliff into round-off is the largest gap whether the value after it lands "
    "just above or just below the method's resolution") {
  // sigma_1..sigma_5 decay by 30x at the first step (a mean direction above the rest), then
  // slowly; sigma_6 falls 6000x, to about the resolution (1e-6 of sigma_max, absolute 1e-5).
  // Before the fix, sigma_6 just below the resolution ended the scan before the cliff, and the
  // largest gap moved to index 1 (30x).
  for (const double after : {1.02e-5, 0.98e-5}) {
    INFO("sigma_6 = " << after);
    const std::vector<double> sigma = {10.0, 10.0 / 30, 0.3, 0.25, 0.2, after, after / 2, 0.0};
    const auto r = numerical_rank(sigma, /*rows=*/100, /*cols=*/8, kFloat32Eps, /*bound=*/5,
                                  /*theorem2_bounded=*/true, /*resolution_rel=*/1e-6);
    CHECK(r.largest_gap_index == 5);
    // Resolved: the ratio itself; unresolved: its lower bound sigma_5 / (sigma_6 + resolution).
    const double want = after > r.resolution ? 0.2 / after : 0.2 / (after + r.resolution);
    CHECK(r.largest_gap == Approx(want).epsilon(1e-12));
    CHECK(r.largest_gap > 9000);
  }
}
