// NormalisationCheck (analysis/input_kind.h): every row's logsumexp against a float64
// recomputation, on blocks large enough to be shared between two threads and on small ones, in
// whatever blocks the rows arrive.

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "analysis/array_source.h"
#include "analysis/input_kind.h"

using namespace sb::analysis;

namespace {

// Log-probabilities (T x M, float32) from random logits, with row `shifted` moved off zero by
// `shift` (-1: none). Returns the float64 logsumexp of every row as stored.
std::vector<double> make_rows(std::vector<float>& a, int64_t t, int64_t m, int64_t shifted,
                              float shift) {
  std::mt19937_64 gen(7);
  std::normal_distribution<double> normal(0.0, 3.0);
  a.assign(static_cast<size_t>(t * m), 0.0f);
  std::vector<double> lse(static_cast<size_t>(t));
  std::vector<double> z(static_cast<size_t>(m));
  for (int64_t r = 0; r < t; ++r) {
    double top = -INFINITY;
    for (auto& v : z) top = std::max(top, v = normal(gen));
    double sum = 0;
    for (double v : z) sum += std::exp(v - top);
    const double norm = top + std::log(sum);
    for (int64_t j = 0; j < m; ++j)
      a[static_cast<size_t>(r * m + j)] =
          static_cast<float>(z[static_cast<size_t>(j)] - norm) + (r == shifted ? shift : 0.0f);
    // The stored floats' own logsumexp, in float64 (the reference).
    double stored_top = -INFINITY, stored_sum = 0;
    for (int64_t j = 0; j < m; ++j) stored_top = std::max(stored_top, double(a[r * m + j]));
    for (int64_t j = 0; j < m; ++j) stored_sum += std::exp(double(a[r * m + j]) - stored_top);
    lse[static_cast<size_t>(r)] = stored_top + std::log(stored_sum);
  }
  return lse;
}

ArraySource source_over(const std::vector<float>& a, int64_t t, int64_t m) {
  ArrayView v;
  v.data = a.data();
  v.rows = t;
  v.cols = m;
  v.row_stride = m * int64_t{sizeof(float)};
  v.col_stride = sizeof(float);
  v.name = "rows";
  return ArraySource(v);
}

}  // namespace

TEST_CASE(
    "the normalisation check finds every row's logsumexp as float64 does, in large and "
    "small blocks, and names the first row that does not normalise") {
  // 48 x 40000 floats: a 48-row block holds 1.9M entries, past the two-thread split.
  const int64_t t = 48, m = 40000, shifted = 29;
  std::vector<float> a;
  const auto lse = make_rows(a, t, m, shifted, 0.01f);
  const ArraySource src = source_over(a, t, m);
  double max_abs = 0;
  for (double v : lse) max_abs = std::max(max_abs, std::abs(v));
  REQUIRE(std::abs(lse[shifted]) > 5e-3);  // the shifted row is past the 1e-3 tolerance
  for (const int64_t block : {t, int64_t{5}, int64_t{1}}) {
    NormalisationCheck check(src, /*must_normalise=*/false, "");
    std::vector<float> out(static_cast<size_t>(block * m));
    for (int64_t r = 0; r < t; r += block) {
      const int64_t count = std::min(block, t - r);
      check.read_rows(r, count, out.data());
    }
    CHECK(check.rows_checked() == t);
    CHECK_FALSE(check.normalised());
    CHECK(check.first_bad_row() == shifted);
    // float exponentials summed in float64: within 1e-6 of the float64 logsumexp (each term's
    // relative error is ~1e-7, so the sum's is too), far inside the 1e-3 tolerance.
    CHECK(std::abs(check.first_bad_logsumexp() - lse[shifted]) < 1e-6);
    CHECK(std::abs(check.max_abs_logsumexp() - max_abs) < 1e-6);
  }
}

TEST_CASE(
    "declared log-probabilities that do not normalise are refused at the first bad row, "
    "also when a two-thread block finds it in its second half") {
  const int64_t t = 48, m = 40000, shifted = 40;
  std::vector<float> a;
  make_rows(a, t, m, shifted, -0.5f);
  const ArraySource src = source_over(a, t, m);
  NormalisationCheck check(src, /*must_normalise=*/true, "--input");
  std::vector<float> out(static_cast<size_t>(t * m));
  try {
    check.read_rows(0, t, out.data());
    FAIL("no refusal");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("row 40 has logsumexp -0.5") != std::string::npos);
  }
}

TEST_CASE(
    "a row holding a non-finite entry is left to the finite scan, not counted as "
    "non-normalised") {
  const int64_t t = 48, m = 40000;
  std::vector<float> a;
  make_rows(a, t, m, -1, 0.0f);
  a[static_cast<size_t>(3 * m + 17)] = NAN;
  a[static_cast<size_t>(30 * m + 5)] = -INFINITY;
  const ArraySource src = source_over(a, t, m);
  NormalisationCheck check(src, /*must_normalise=*/true, "--input");
  std::vector<float> out(static_cast<size_t>(t * m));
  check.read_rows(0, t, out.data());
  CHECK(check.normalised());
  CHECK(check.rows_checked() == t);
}
