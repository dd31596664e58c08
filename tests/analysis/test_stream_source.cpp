// analysis/stream_source.h, the MatrixSource sbrank's streaming call wraps: rows read across
// uneven block boundaries equal the matrix's, a read from row 0 starts a new pass, T is counted
// when not given, every bad block is named (width, dtype, non-finite, a pass with other rows),
// and the analysis over the stream gives the array's rank and certificate.

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/analyse.h"
#include "analysis/array_source.h"
#include "analysis/stream_source.h"
#include "common/errors.h"

using namespace sb::analysis;

namespace {

// Passes over a row-major T x M float matrix in blocks of the given sizes (cycled); `rows_cut`
// from the second pass on drops that many rows, `width_of_block` gives one block another width.
struct Blocks {
  std::vector<float> data;
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> sizes{3, 1, 7};
  int64_t rows_cut = 0;
  int64_t narrow_block = -1;
  int passes = 0;

  PassFactory factory() {
    return [this]() -> std::unique_ptr<BlockPass> {
      struct Pass : BlockPass {
        Blocks* b;
        int64_t at = 0, index = 0, end;
        Pass(Blocks* blocks, int64_t e) : b(blocks), end(e) {}
        bool next(ArrayView& v) override {
          if (at >= end) return false;
          const int64_t n =
              std::min(b->sizes[static_cast<size_t>(index) % b->sizes.size()], end - at);
          v.data = b->data.data() + at * b->cols;
          v.rows = n;
          v.cols = index == b->narrow_block ? b->cols - 1 : b->cols;
          v.row_stride = b->cols * 4;
          v.col_stride = 4;
          v.float64 = false;
          at += n;
          ++index;
          return true;
        }
      };
      ++passes;
      return std::make_unique<Pass>(this, passes > 1 ? rows - rows_cut : rows);
    };
  }
};

Blocks softmax_like(int64_t t, int64_t m, int64_t d) {
  std::mt19937 gen(7);
  std::normal_distribution<double> z;
  std::vector<double> h(static_cast<size_t>(t * d)), w(static_cast<size_t>(d * m));
  for (auto& x : h) x = z(gen);
  for (auto& x : w) x = z(gen);
  Blocks b;
  b.rows = t;
  b.cols = m;
  b.data.resize(static_cast<size_t>(t * m));
  for (int64_t r = 0; r < t; ++r) {
    std::vector<double> row(static_cast<size_t>(m));
    double top = -1e300, sum = 0;
    for (int64_t c = 0; c < m; ++c) {
      double v = 0;
      for (int64_t k = 0; k < d; ++k)
        v += h[static_cast<size_t>(r * d + k)] * w[static_cast<size_t>(k * m + c)];
      row[static_cast<size_t>(c)] = v;
      top = std::max(top, v);
    }
    for (double v : row) sum += std::exp(v - top);
    for (int64_t c = 0; c < m; ++c)
      b.data[static_cast<size_t>(r * m + c)] =
          static_cast<float>(row[static_cast<size_t>(c)] - top - std::log(sum));
  }
  return b;
}

}  // namespace

TEST_CASE("a stream's rows, read across uneven blocks, are the matrix's, and row 0 starts a pass",
          "[stream_source]") {
  auto b = softmax_like(40, 9, 3);
  StreamSource s(b.factory(), 9, /*rows=*/-1);
  CHECK(s.rows() == 40);  // counted by a first pass
  CHECK(s.passes() == 1);
  std::vector<double> out(40 * 9);
  s.read_rows(0, 13, out.data());
  s.read_rows(13, 27, out.data() + 13 * 9);
  for (size_t i = 0; i < out.size(); ++i) REQUIRE(out[i] == static_cast<double>(b.data[i]));
  CHECK(s.passes() == 2);
  std::vector<float> again(5 * 9);
  s.read_rows(0, 5, again.data());  // a new pass
  CHECK(s.passes() == 3);
  CHECK(again[44] == b.data[44]);
  CHECK_THROWS_AS(s.read_rows(20, 1, again.data()), std::logic_error);  // out of order
}

TEST_CASE("a stream's bad blocks are named: width, a pass with fewer rows", "[stream_source]") {
  auto b = softmax_like(20, 6, 2);
  b.narrow_block = 1;
  try {
    StreamSource s(b.factory(), 6, -1);
    FAIL("a narrow block is refused");
  } catch (const sb::InputError& e) {
    CHECK(std::string(e.what()) ==
          "<stream>: pass 1, block 1: width: expected M = 6 columns, got 5");
    CHECK(e.field() == "width");
    CHECK(e.expected() == "M = 6 columns");
  }
  auto c = softmax_like(20, 6, 2);
  c.rows_cut = 4;
  StreamSource s(c.factory(), 6, -1);
  std::vector<double> out(20 * 6);
  try {
    s.read_rows(0, 20, out.data());
    FAIL("a shorter second pass is refused");
  } catch (const sb::InputError& e) {
    CHECK(std::string(e.what()) == "<stream>: pass 2 yields 16 rows, the first 20");
    CHECK(e.file() == "<stream>");
  }
  auto n = softmax_like(20, 6, 2);
  n.data[2 * 6 + 3] = std::numeric_limits<float>::quiet_NaN();  // row 2 = block 0 (rows 0..2)
  CHECK_THROWS_WITH(StreamSource(n.factory(), 6, -1),
                    Catch::Contains("<stream>: pass 1, block 0: row 2, column 3: not finite"));
  CHECK_THROWS_AS(StreamSource(n.factory(), 6, -1), sb::InputError);
  CHECK_THROWS_AS(StreamSource(n.factory(), 0, -1), sb::OptionError);  // M < 1
}

TEST_CASE("the analysis over a stream gives the array's rank and certificate", "[stream_source]") {
  auto b = softmax_like(600, 80, 5);
  AnalyseOptions o;
  o.method = "gram";
  o.facts.head = "softmax";
  o.facts.d = 5;
  o.facts.bias = 0;
  ArrayView v;
  v.data = b.data.data();
  v.rows = 600;
  v.cols = 80;
  v.row_stride = 80 * 4;
  v.col_stride = 4;
  const ArraySource array(v);
  const StreamSource stream(b.factory(), 80, 600);
  const auto limit = memory_limit(o);
  const auto ra = analyse(array, plan_analysis(array, o, limit), o);
  const auto rs = analyse(stream, plan_analysis(stream, o, limit), o);
  CHECK(rs.report.rank == ra.report.rank);
  CHECK(rs.report.rank == 5 + 1);  // log-probabilities without a bias: d + 1
  CHECK(rs.report.certified == ra.report.certified);
  CHECK(rs.report.sigma_max == ra.report.sigma_max);
}
