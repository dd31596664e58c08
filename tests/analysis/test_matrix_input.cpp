// Matrix inputs besides the trainers' HDF5 files: .npy arrays (float32/float64, C and Fortran
// order, NPY versions 1-3), HDF5 files with only /log_probs, float64 /log_probs; the facts
// (head, d, bias) a plain file needs from the command line; and every bad input's one-line error.
// Reference values come from numpy (tests/fixtures/make_matrix_files.py, run with
// /usr/bin/python3).

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "analysis/analyse.h"
#include "analysis/matrix_source.h"
#include "analysis/npy_file.h"
#include "analysis/numerical_rank.h"
#include "tests/fixtures/run_command.h"
#include "tests/fixtures/temp_dir.h"

namespace fs = std::filesystem;
using namespace sb::analysis;
using namespace sb::test;  // tests/fixtures/

namespace {

// numpy's reference values, parsed from the fixture script's 'key value...' lines.
struct Reference {
  std::map<std::string, std::vector<double>> sigma;  // "f32", "f64"
  std::map<std::string, int64_t> rank;               // "f32", "f64", "f64_eps32"
  std::vector<std::array<double, 3>> grid;           // row, col, value
};

Reference make_files(const fs::path& dir) {
  const auto out = run_fixture_script("make_matrix_files.py", dir.string());
  Reference ref;
  std::istringstream lines(out);
  std::string line, key;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    fields >> key;
    if (key.rfind("sigma_", 0) == 0)
      for (double x; fields >> x;) ref.sigma[key.substr(6)].push_back(x);
    else if (key.rfind("rank_", 0) == 0)
      fields >> ref.rank[key.substr(5)];
    else if (key == "grid") {
      std::array<double, 3> g{};
      fields >> g[0] >> g[1] >> g[2];
      ref.grid.push_back(g);
    }
  }
  REQUIRE(ref.sigma["f32"].size() == 25);
  REQUIRE(ref.sigma["f64"].size() == 25);
  REQUIRE(ref.grid.size() == 6);
  return ref;
}

/// A test case's scratch directory with make_files' matrices and their reference values, removed
/// after it, and the binary that reads them.
struct WithMatrixFiles {
  const TempDir dir{"matrix_input"};
  Reference ref = make_files(dir);
  const std::string bin = SB_RANK_ANALYSIS;
};

AnalyseOptions softmax_facts(const std::string& method = "exact") {
  AnalyseOptions o;
  o.method = method;
  o.facts.head = "softmax";
  o.facts.d = 3;
  o.facts.bias = 1;
  return o;
}

template <class T>
std::vector<T> read_all(const MatrixSource& m, int64_t block) {
  std::vector<T> out(static_cast<size_t>(m.rows() * m.cols()));
  for (int64_t r = 0; r < m.rows(); r += block)
    m.read_rows(r, std::min(block, m.rows() - r), out.data() + r * m.cols());
  return out;
}

}  // namespace

TEST_CASE_METHOD(
    WithMatrixFiles,
    "matrix input: .npy in C and Fortran order streams the rows numpy wrote, in any blocks") {
  const auto c = open_matrix((dir / "grid_c.npy").string());
  const auto f = open_matrix((dir / "grid_f.npy").string());
  const auto f32 = open_matrix((dir / "grid_f32f.npy").string());
  REQUIRE(c->rows() == 150);
  REQUIRE(c->cols() == 130);
  REQUIRE(f->rows() == 150);
  REQUIRE(f->cols() == 130);
  CHECK(c->float64());
  CHECK_FALSE(f32->float64());
  CHECK(c->header() == nullptr);
  const auto want = read_all<double>(*c, 150);
  // numpy's own values (repr round-trips a double exactly), across the 64 x 64 tile boundaries.
  for (const auto& [r, col, value] : ref.grid) {
    INFO("row " << r << " col " << col);
    CHECK(want[size_t(r * 130 + col)] == value);
  }
  // Every block size gives the same rows bit for bit: 1, odd, the tile size, past it, all.
  for (const int64_t block : {1, 7, 64, 65, 150}) {
    INFO("block " << block);
    CHECK(read_all<double>(*f, block) == want);
    // float32 out of float64 data: the same rounding as a cast; float32 data widened exactly.
    std::vector<float> rounded(want.size());
    for (size_t i = 0; i < want.size(); ++i) rounded[i] = static_cast<float>(want[i]);
    CHECK(read_all<float>(*f, block) == rounded);
    CHECK(read_all<float>(*c, block) == rounded);
    CHECK(read_all<float>(*f32, block) == rounded);
    const auto widened = read_all<double>(*f32, block);
    CHECK(std::equal(widened.begin(), widened.end(), rounded.begin(),
                     [](double a, float b) { return a == static_cast<double>(b); }));
  }
  CHECK_THROWS_WITH(c->read_rows(140, 20, std::vector<double>(20 * 130).data()),
                    Catch::Contains("rows [140, 160) outside [0, 150)"));
}

TEST_CASE("matrix input: streaming a .npy keeps its pages out of resident memory, C and F order") {
  const TempDir dir("npy_rss");
  // 16384 x 1024 float32 = 64 MiB, read in blocks of 1024 rows (4 MiB).
  for (const char* order : {"C", "F"}) {
    INFO(order << " order");
    const auto path = (dir / (std::string(order) + ".npy")).string();
    int status = 0;
    run("/usr/bin/python3 -c \"import numpy as np; np.save('" + path +
            "', np.asarray(np.random.default_rng(0).standard_normal((16384, 1024), "
            "dtype=np.float32), order='" +
            order + "'))\"",
        &status);
    REQUIRE(status == 0);
    // Resident file-backed memory of this process, kB (/proc/self/status, RssFile).
    auto rss_file_kb = [] {
      std::ifstream in("/proc/self/status");
      for (std::string line; std::getline(in, line);)
        if (line.rfind("RssFile:", 0) == 0) return std::stoll(line.substr(8));
      return -1LL;
    };
    const auto before = rss_file_kb();
    REQUIRE(before >= 0);
    const auto m = open_matrix(path);
    std::vector<float> block(1024 * 1024);
    double sum = 0;  // uses the data, so the reads cannot be skipped
    for (int64_t r = 0; r < m->rows(); r += 1024) {
      m->read_rows(r, 1024, block.data());
      sum += static_cast<double>(block[5]);
    }
    CHECK(std::isfinite(sum));
    // Without the release every page read stays mapped: +65536 kB. With it, about one block
    // (4096 kB) plus fault-around neighbours; 16384 kB (a quarter of the file) is the bound.
    CHECK(rss_file_kb() - before < 16384);
  }
}

TEST_CASE_METHOD(
    WithMatrixFiles,
    "matrix input: float32/float64 .npy (C, Fortran, NPY 1-3) and HDF5 files give numpy's "
    "singular values and ranks") {
  struct Case {
    const char* file;
    const char* dtype;
  };
  for (const auto& [file, dtype] :
       {Case{"c_f32.npy", "f32"}, Case{"f_f32.npy", "f32"}, Case{"v2_f32.npy", "f32"},
        Case{"plain_f32.h5", "f32"}, Case{"c_f64.npy", "f64"}, Case{"f_f64.npy", "f64"},
        Case{"v3_f64.npy", "f64"}, Case{"plain_f64.h5", "f64"}, Case{"contract_f64.h5", "f64"}}) {
    INFO(file);
    const auto path = (dir / file).string();
    const bool f64 = std::string(dtype) == "f64";
    const auto& sigma = ref.sigma[dtype];
    // Exact path, float64 SVD: both sides are LAPACK dgesdd on the same float64 values (float32
    // data widened exactly), so they agree to round-off, ~25 eps64 sigma_max; 1e-12 is ample.
    auto o = softmax_facts("exact");
    o.precision = "float64";
    const auto r = analyse_file(path, o);
    REQUIRE(r.singular_values.size() == 25);
    for (size_t i = 0; i < 25; ++i)
      CHECK(std::abs(r.singular_values[i] - sigma[i]) < 1e-12 * sigma[0]);
    // eps follows the data's dtype (no compute_dtype attribute on plain files; the contract
    // file says float64 too). Under it the rank is numpy's and Theorem 2's d + 2 = 5: float64
    // data rounded to float32 anywhere on the way would leave ~1e-8 sigma_max of noise and make
    // it full rank (25) under float64's tolerance of ~1e-15 sigma_max.
    CHECK(r.report.eps == (f64 ? kFloat64Eps : kFloat32Eps));
    CHECK(r.report.rank == ref.rank[dtype]);
    CHECK(r.report.rank == 5);
    CHECK(r.report.bound == 5);
    CHECK(r.report.verdict() == "within_bound");
    CHECK(r.header.head == "softmax");
    CHECK(r.header.T == 60);
    CHECK(r.header.M == 25);
    CHECK(r.header.compute_dtype == (f64 ? "float64" : "float32"));
    // Gram path under float32's eps (which it resolves): the same rank, and the leading five
    // singular values to relative eps64 sigma_max^2 / sigma_5^2 ~ 1e-12 (eigenvalue round-off).
    auto g = softmax_facts("gram");
    g.eps = "float32";
    const auto rg = analyse_file(path, g);
    CHECK(rg.report.rank == (f64 ? ref.rank["f64_eps32"] : ref.rank["f32"]));
    CHECK(rg.report.resolvable);
    for (size_t i = 0; i < 5; ++i)
      CHECK(std::abs(rg.singular_values[i] - sigma[i]) < 1e-10 * sigma[i]);
  }
}

TEST_CASE_METHOD(
    WithMatrixFiles,
    "matrix input: a plain file needs --head, --d and --bias, each missing one is named, and "
    "given facts must agree with a file's attributes") {
  const auto npy = (dir / "c_f32.npy").string();
  const auto plain = (dir / "plain_f64.h5").string();
  const auto contract = (dir / "contract_f64.h5").string();
  AnalyseOptions none;
  CHECK_THROWS_WITH(
      analyse_file(npy, none),
      Catch::StartsWith(
          npy +
          ": missing head, d, bias (a .npy file carries no "
          "attributes): pass --head NAME (e.g. softmax, or adaptive:cutoffs=2000,6000), --d N") &&
          Catch::Contains("--bias 0|1"));
  auto o = softmax_facts();
  o.facts.d.reset();
  CHECK_THROWS_WITH(
      analyse_file(plain, o),
      Catch::Equals(plain + ": missing d (an HDF5 file without format_version carries no "
                            "attributes): pass --d N (the size of the vector the decoder "
                            "multiplies)"));
  o = softmax_facts();
  o.facts.bias.reset();
  CHECK_THROWS_WITH(analyse_file(npy, o), Catch::Contains(": missing bias ("));
  // A contract file: its attributes rule; the options may repeat them, not change them.
  CHECK(analyse_file(contract, none).header.d == 3);
  CHECK(analyse_file(contract, softmax_facts()).report.bound == 5);
  o = softmax_facts();
  o.facts.d = 7;
  CHECK_THROWS_WITH(analyse_file(contract, o),
                    Catch::Contains(contract + ": attribute 'd' is 3, but --d gives 7"));
  o = softmax_facts();
  o.facts.head = "sigsoftmax";
  CHECK_THROWS_WITH(analyse_file(contract, o),
                    Catch::Contains("attribute 'head' is softmax, but --head gives sigsoftmax"));
  o = softmax_facts();
  o.facts.bias = 0;
  CHECK_THROWS_WITH(analyse_file(contract, o), Catch::Contains("attribute 'bias' is 1"));
  // The facts themselves: the head name is checked against the registry.
  o = softmax_facts();
  o.facts.head = "softmaxx";
  CHECK_THROWS_WITH(analyse_file(npy, o),
                    Catch::StartsWith("--head: ") && Catch::Contains("unknown head 'softmaxx'"));
  o = softmax_facts();
  o.facts.bias = 2;
  CHECK_THROWS_WITH(analyse_file(npy, o), Catch::Equals("--bias 2: expected bias 0 or 1"));
  // The verdict follows the given facts: the bound is d + 1 + bias.
  o = softmax_facts();
  o.facts.d = 2;
  const auto r = analyse_file(npy, o);
  CHECK(r.report.bound == 4);
  CHECK(r.report.verdict() == "exceeds_bound");
  CHECK(std::isnan(r.header.ppl));
}

TEST_CASE("matrix input: .npy headers of every version parse, and each malformed one is named") {
  // Preamble: magic, version, little-endian header length (2 bytes in 1.0, 4 in 2.0 and 3.0).
  auto file = [](int major, const std::string& dict, int64_t data_bytes = 0) {
    std::string s = std::string("\x93NUMPY") + char(major) + char(0);
    const auto n = dict.size();
    s += char(n & 0xff);
    s += char((n >> 8) & 0xff);
    if (major > 1) s += std::string(2, '\0');
    return s + dict + std::string(size_t(data_bytes), '\0');
  };
  // Keys in any order, double quotes, Python 2's long suffix, no trailing comma.
  const std::string v1 = "{\"shape\": (3L, 4L), 'fortran_order': True, 'descr': '<f8'}   \n";
  auto h = parse_npy_header("a.npy", file(1, v1));
  CHECK(h.major == 1);
  CHECK(h.descr == "<f8");
  CHECK(h.fortran_order);
  CHECK(h.shape == std::vector<int64_t>{3, 4});
  CHECK(h.data_offset == int64_t(10 + v1.size()));
  const std::string v3 = "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }";
  h = parse_npy_header("a.npy", file(3, v3));
  CHECK(h.major == 3);
  CHECK_FALSE(h.fortran_order);
  CHECK(h.shape == std::vector<int64_t>{5});
  CHECK(h.data_offset == int64_t(12 + v3.size()));
  h = parse_npy_header("a.npy", file(2,
                                     "{'descr': [('x', '<f4'), ('y', '<i8')], "
                                     "'fortran_order': False, 'shape': ()}"));
  CHECK(h.descr == "[('x', '<f4'), ('y', '<i8')]");
  CHECK(h.shape.empty());

  CHECK_THROWS_WITH(parse_npy_header("a.npy", ""),
                    Catch::Equals("a.npy: header: expected at least 10 bytes (magic, version, "
                                  "header length), got 0 bytes (truncated?)"));
  CHECK_THROWS_WITH(parse_npy_header("a.npy", "\x89HDF\r\n\x1a\n0000"),
                    Catch::Equals("a.npy: magic: expected \"\\x93NUMPY\" (a .npy file), got "
                                  "\"\\x89HDF\\x0d\\x0a\""));
  CHECK_THROWS_WITH(parse_npy_header("a.npy", file(4, "{}")),
                    Catch::Contains("version: expected 1.0, 2.0 or 3.0, got 4.0"));
  CHECK_THROWS_WITH(parse_npy_header("a.npy", file(1, "{'descr': '<f4', 'shape': (2, 2)}")),
                    Catch::Contains("header: expected a key 'fortran_order', got none"));
  CHECK_THROWS_WITH(
      parse_npy_header("a.npy", file(1,
                                     "{'descr': '<f4', 'fortran_order': False, 'shape': "
                                     "(2, 2), 'extra': 1}")),
      Catch::Contains("header: expected the keys 'descr', 'fortran_order', 'shape', got key "
                      "'extra'"));
  CHECK_THROWS_WITH(parse_npy_header("a.npy", file(1,
                                                   "{'descr': '<f4', 'fortran_order': Maybe, "
                                                   "'shape': (2, 2)}")),
                    Catch::Contains("header: expected a dict {'descr': ..."));
  CHECK_THROWS_WITH(parse_npy_header("a.npy", file(1,
                                                   "{'descr': '<f4', 'fortran_order': False, "
                                                   "'shape': (2, -2)}")),
                    Catch::Contains("header: expected a dict"));
  // A header length beyond the end of the file.
  const auto cut = file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2)}");
  CHECK_THROWS_WITH(parse_npy_header("a.npy", cut.substr(0, 40)),
                    Catch::Equals("a.npy: header: expected " + std::to_string(cut.size()) +
                                  " bytes (header length field), got 40 bytes in the file "
                                  "(truncated?)"));
}

TEST_CASE_METHOD(
    WithMatrixFiles,
    "rank_analysis binary: bad .npy and plain inputs exit 2 with one line naming the file and the "
    "field, and write nothing") {
  const std::string facts = " --head softmax --d 3 --bias 1";
  std::string good_bytes(fs::file_size(dir / "c_f32.npy"), '\0');
  std::ifstream(dir / "c_f32.npy", std::ios::binary)
      .read(good_bytes.data(), static_cast<std::streamsize>(good_bytes.size()));
  const int64_t data_offset = parse_npy_header("c_f32.npy", good_bytes).data_offset;
  struct Bad {
    std::string file, options, field;
  };
  const std::vector<Bad> cases = {
      {"archive.npz", facts,
       "format: expected an HDF5 or .npy file, got a zip archive (np.savez or torch.save?)"},
      {"bad_magic.npy", facts,
       "magic: expected \"\\x93NUMPY\" (a .npy file), got \"PK\\x03\\x04 t\""},
      {"truncated.npy", facts,
       "size: expected " + std::to_string(data_offset + 60 * 25 * 4) + " bytes (" +
           std::to_string(data_offset) + " of header + 60 x 25 x 4 of data), got " +
           std::to_string(fs::file_size(dir / "truncated.npy")) + " (truncated?)"},
      {"object.npy", facts,
       "dtype (header 'descr'): expected '<f4' (float32) or '<f8' (float64); convert with "
       "a.astype(np.float32), got '|O' (Python objects, written with allow_pickle)"},
      {"int.npy", facts, "got '<i8' (int64)"},
      {"big_endian.npy", facts, "got '>f4' (big-endian float32)"},
      {"one_d.npy", facts,
       "header 'shape': expected 2 dimensions (T, M), rows = tokens, got (25,)"},
      {"three_d.npy", facts, "got (60, 25, 1)"},
      {"nan.npy", facts,
       "the array holds 1 NaN, 0 +inf, 0 -inf entries; the first at row 7, column 3"},
      {"nan_plain.h5", facts, "/log_probs holds 1 NaN"},
      {"absent.npy", facts, "no such file"},
      {"absent.h5", "", "no such file"},
      {"c_f64.npy", "", "missing head, d, bias (a .npy file carries no attributes)"},
      {"plain_f32.h5", " --head softmax --bias 1",
       "missing d (an HDF5 file without format_version"},
      {"contract_f64.h5", " --d 4", "attribute 'd' is 3, but --d gives 4"},
      {"zero_rows.npy", facts, "header 'shape': expected T >= 1 and M >= 1, got (0, 25)"},
      {"zero_cols.npy", facts, "header 'shape': expected T >= 1 and M >= 1, got (60, 0)"},
      {"zero_rows_plain.h5", facts,
       "dataset '/log_probs' shape: expected T >= 1 and M >= 1, got (0, 25)"},
  };
  for (const auto& [file, options, field] : cases) {
    INFO(file << options);
    const auto path = (dir / file).string();
    const auto result = dir / (file + ".rank.h5");
    int status = 0;
    for (const char* method : {"exact", "gram"}) {
      const auto err = run(bin + " --quiet --method " + method + options + " --out " +
                               result.string() + " " + path + " 2>&1",
                           &status);
      CHECK(status == 2);
      CHECK(err.rfind("rank_analysis: " + path + ": ", 0) == 0);
      CHECK(err.find(field) != std::string::npos);
      CHECK(std::count(err.begin(), err.end(), '\n') == 1);
      CHECK_FALSE(fs::exists(result));
    }
  }
  // Bad option values name the option.
  int status = 0;
  const auto err =
      run(bin + " --quiet --head softmaxx --d 3 --bias 1 " + (dir / "c_f32.npy").string() + " 2>&1",
          &status);
  CHECK(status == 2);
  CHECK(err.rfind("rank_analysis: --head: unknown head 'softmaxx'", 0) == 0);
  CHECK(std::count(err.begin(), err.end(), '\n') == 1);
  // A given fact is checked as given: --d 0 and --bias 2 are impossible, not missing.
  for (const auto& [options, message] :
       {std::pair{" --head softmax --d 0 --bias 1", "rank_analysis: --d 0: expected d >= 1\n"},
        std::pair{" --head softmax --d 3 --bias 2",
                  "rank_analysis: --bias 2: expected bias 0 or 1\n"}}) {
    INFO(options);
    const auto result = dir / "facts.rank.h5";
    CHECK(run(bin + " --quiet" + options + " --out " + result.string() + " " +
                  (dir / "c_f32.npy").string() + " 2>&1",
              &status) == message);
    CHECK(status == 2);
    CHECK_FALSE(fs::exists(result));
  }
  // Malformed command lines (CLI11's own checks) exit 2 too, not CLI11's codes (105, 106, ...).
  for (const char* options : {"--d abc", "--method svd", "--no-such-option"}) {
    INFO(options);
    run(bin + " --quiet " + options + " " + (dir / "c_f32.npy").string() + " 2>&1", &status);
    CHECK(status == 2);
  }
}

TEST_CASE_METHOD(
    WithMatrixFiles,
    "rank_analysis binary: a method whose memory does not fit is refused before it allocates, "
    "naming what it needs, the limit and what the other method needs") {
  const std::string facts = " --head softmax --d 3 --bias 1";
  const auto wide = (dir / "wide.npy").string();  // 1 x 1000000: G needs 8 M^2 = 7451 GiB
  const auto result = dir / "wide.rank.h5";
  const std::string gram_needs =
      "rank_analysis: " + wide +
      ": --method gram: the Gram matrix of M = 1000000 needs 7453 GiB (8 M^2 bytes plus "
      "workspace), more than the ";
  for (const auto& [options, limit] :
       {std::pair{std::string(" --method gram --gram columns"),
                  std::string("available (MemAvailable)")},
        std::pair{std::string(" --method gram --gram columns --budget-gb 2"),
                  std::string("2 GiB of --budget-gb")},
        std::pair{std::string(" --method gram --gram columns --spectrum"), std::string(" GiB ")}}) {
    INFO(options);
    int status = 0;
    const auto err = run(bin + " --quiet" + facts + options + " --out " + result.string() + " " +
                             wide + " 2>&1 >/dev/null",
                         &status);
    CHECK(status == 2);
    CHECK(err.rfind(gram_needs, 0) == 0);
    CHECK(err.find(limit) != std::string::npos);
    CHECK(err.find("; --method exact needs 7.63 MiB\n") != std::string::npos);
    CHECK(std::count(err.begin(), err.end(), '\n') == 1);
    CHECK_FALSE(fs::exists(result));
  }
  // Under an address-space limit (ulimit -v) the limit is that, whatever the machine has.
  int status = 0;
  const auto err = run("ulimit -v 3000000; " + bin + " --quiet" + facts +
                           " --method gram --gram columns " + wide + " 2>&1 >/dev/null",
                       &status);
  CHECK(status == 2);
  CHECK(err.find("left under the address-space limit (ulimit -v)") != std::string::npos);
  // auto takes the method that fits: the row Gram A A^T of the one row (1 x 1), and without
  // --gram the gram method takes that smaller Gram matrix as well.
  for (const std::string method : {"", " --method gram"}) {
    const auto j =
        nlohmann::json::parse(run(bin + " --quiet --json" + facts + method + " " + wide, &status));
    CHECK(status == 0);
    CHECK(j["method"] == "gram");
    CHECK(j["gram"] == "rows");
    CHECK(j["rank"] == 1);
  }
  // None fits: auto names all three.
  CHECK(run(bin + " --quiet --budget-gb 0.001" + facts + " " + wide + " 2>&1 >/dev/null", &status)
            .find(wide + ": no method fits in memory: the row Gram matrix A A^T of T = 1 "
                         "needs 15.3 MiB (8 T^2 bytes plus a column panel and workspace), the "
                         "T x M = 1 x 1000000 "
                         "matrix in float32 needs 7.63 MiB (with ?gesdd's workspace) and the "
                         "sketch at k = 1 needs ") != std::string::npos);
  CHECK(status == 2);
}

TEST_CASE_METHOD(
    WithMatrixFiles,
    "rank_analysis binary: one matrix as .npy (C, F), plain HDF5 and float64 gives one report, "
    "--threads reaches OpenBLAS, and --help shows an example of each input") {
  int status = 0;
  const std::string facts_cli = " --head softmax --d 3 --bias 1";
  std::vector<nlohmann::json> reports;
  for (const char* file : {"c_f32.npy", "f_f32.npy", "plain_f32.h5"}) {
    INFO(file);
    const auto out =
        run(bin + " --quiet --json --check --head softmax --d 3 --bias 1 " + (dir / file).string(),
            &status);
    CHECK(status == 0);
    reports.push_back(nlohmann::json::parse(out));
  }
  for (const auto& j : reports) {
    CHECK(j["rank"] == 5);
    CHECK(j["bound"] == 5);
    CHECK(j["M"] == 25);
    CHECK(j["T"] == 60);
    CHECK(j["eps"].get<double>() == kFloat32Eps);
    CHECK(j["ppl"].is_null());  // a plain matrix has no targets
    // The same float32 values through the same gram path: equal up to BLAS summation order.
    CHECK(j["sigma_max"].get<double>() ==
          Approx(reports[0]["sigma_max"].get<double>()).epsilon(1e-14));
  }
  const nlohmann::json j64 = nlohmann::json::parse(
      run(bin + " --quiet --json --head softmax --d 3 --bias 1 " + (dir / "f_f64.npy").string(),
          &status));
  CHECK(status == 0);
  CHECK(j64["eps"].get<double>() == kFloat64Eps);
  CHECK(j64["compute_dtype"] == "float64");
  CHECK(j64["rank"] == 5);

  // --threads reaches OpenBLAS (no LibTorch to set it any more); the result records it.
  for (const int threads : {1, 3}) {
    const auto j =
        nlohmann::json::parse(run(bin + " --quiet --json --threads " + std::to_string(threads) +
                                      facts_cli + " " + (dir / "c_f32.npy").string(),
                                  &status));
    CHECK(status == 0);
    CHECK(j["blas_threads"] == threads);
  }

  const auto help = run(bin + " --help", &status);
  CHECK(status == 0);
  for (const char* example :
       {"rank_analysis logprobs.h5", "rank_analysis --head softmax --d 64 --bias 1 lp.npy",
        "rank_analysis --head softmax --d 64 --bias 1 plain.h5",
        "synthetic_logprobs --head softmax"}) {
    INFO(example);
    CHECK(help.find(example) != std::string::npos);
  }
}
