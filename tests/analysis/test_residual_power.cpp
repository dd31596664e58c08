// The power-step bound on ||A (I - Q_c Q_c^T)||_2 (analysis/residual_power.h) against the value
// itself, computed independently: the float64 SVD of A (I - Q_c Q_c^T) formed explicitly. The bound
// may fail with probability 1e-12 per step, so any seed below the truth is a bug.

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <mutex>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "analysis/numerical_rank.h"
#include "analysis/residual_power.h"
#include "tests/fixtures/prescribed_matrix.h"

using namespace sb::analysis;

namespace {

constexpr int64_t kRows = 1500, kCols = 600, kCount = 50, kTail = 300;

double tol_of(double sigma1) {
  return 0.5 * std::sqrt(static_cast<double>(kRows + kCols + 1)) * sigma1 * kFloat32Eps;
}

// kCount values from 1 down to 3 tol, kTail over [0.2, 0.9] tol, zeros.
std::vector<double> spectrum() {
  const double tol = tol_of(1.0);
  std::vector<double> s;
  for (int64_t i = 0; i < kCount; ++i)
    s.push_back(std::pow(3 * tol, static_cast<double>(i) / (kCount - 1)));
  for (int64_t i = 0; i < kTail; ++i)
    s.push_back(tol * (0.9 - 0.7 * static_cast<double>(i) / (kTail - 1)));
  s.resize(static_cast<size_t>(kCols), 0.0);
  return s;
}

// The right singular vectors of the row-major T x M matrix a, V (M x M, column-major), by dgesdd.
std::vector<double> right_vectors(const std::vector<double>& a, int64_t t, int64_t m) {
  // Row-major T x M is column-major M x T = A^T; its left singular vectors are A's right ones.
  std::vector<double> copy = a, s(static_cast<size_t>(m)), u(static_cast<size_t>(m * m)),
                      vt(static_cast<size_t>(m * t));
  REQUIRE(LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'S', m, t, copy.data(), m, s.data(), u.data(), m,
                         vt.data(), m) == 0);
  return u;
}

// ||A (I - Q Q^T)||_2 in float64 (Q: M x c, orthonormal).
double residual_norm(const std::vector<double>& a, int64_t t, int64_t m,
                     const std::vector<double>& q, int64_t c) {
  // P = I - Q Q^T, then A P as the column-major M x T matrix P A^T.
  std::vector<double> p(static_cast<size_t>(m * m), 0.0);
  for (int64_t i = 0; i < m; ++i) p[static_cast<size_t>(i + i * m)] = 1.0;
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, int(m), int(m), int(c), -1.0, q.data(),
              int(m), q.data(), int(m), 1.0, p.data(), int(m));
  std::vector<double> ap(static_cast<size_t>(m * t)), s(static_cast<size_t>(m));
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, int(m), int(t), int(m), 1.0, p.data(),
              int(m), a.data(), int(m), 0.0, ap.data(), int(m));
  REQUIRE(LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'N', m, t, ap.data(), m, s.data(), nullptr, 1, nullptr,
                         1) == 0);
  return s[0];
}

ResidualPowerOptions options(double target, int steps) {
  ResidualPowerOptions o;
  o.max_steps = steps;
  o.target = target;
  o.sigma1_upper = 1.0 + 1e-9;
  o.abs_norm = 3.0;  // >= ||A||_F = sqrt(sum s_i^2) = 2.6 for spectrum()
  o.total_rows = kRows;
  o.block_rows = 256;
  return o;
}

}  // namespace

TEST_CASE(
    "residual power bound: over 20 seeds and three bases (the top c singular vectors, one too "
    "few, a random basis) the bound never falls below the true 2-norm, and 24 steps bring it "
    "within 15% of it") {
  const auto s = spectrum();
  double frobenius_sq = 0;
  for (double x : s) frobenius_sq += x * x;
  REQUIRE(std::sqrt(frobenius_sq) <= 3.0);
  const auto a = sb::test::prescribed_matrix(kRows, kCols, s, /*seed=*/71);
  const auto v = right_vectors(a, kRows, kCols);
  const auto read = sb::test::reader(a, kCols);
  // Its own stream (the probes' seeds are 1..20: a probe drawn from the basis's own Gaussians
  // would lie in its range, which the bound's independence forbids).
  std::mt19937_64 gen(1000);
  const auto random_basis = sb::test::orthonormal(kCols, kCount, gen);
  struct Case {
    const char* name;
    std::vector<double> q;
    int64_t c;
  };
  const std::vector<Case> cases = {
      {"top c", {v.begin(), v.begin() + kCount * kCols}, kCount},
      {"one too few", {v.begin(), v.begin() + (kCount - 1) * kCols}, kCount - 1},
      {"random", random_basis, kCount}};
  for (const auto& cs : cases) {
    const double truth = residual_norm(a, kRows, kCols, cs.q, cs.c);
    INFO(cs.name << ": ||A P|| = " << truth << " (tol " << tol_of(1.0) << ")");
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      std::mt19937_64 rng(seed);
      SpectrumTiming timing;
      // target 0: every step runs (no early stop), so the last bound is the 24-step one.
      const auto r = residual_power_bound<double>(read, kRows, kCols, cs.q, cs.c, 1e-15,
                                                  options(0.0, 24), rng, &timing);
      INFO("seed " << seed << ": bound " << r.bound << ", estimate " << r.estimate << ", steps "
                   << r.steps);
      // Soundness: the truth's own float64 rounding is ~1e-16 of sigma_1, 1e-10 of it here.
      CHECK(r.bound >= truth * (1 - 1e-9));
      CHECK(r.estimate <= truth * (1 + 1e-9));
      CHECK(r.checks == r.steps);
      // Usefulness: a tail of <= 300 values at the top: (1.28 sqrt(300))^(1/49) = 1.09.
      if (r.steps == 24) CHECK(r.bound <= 1.15 * truth);
    }
  }
}

TEST_CASE(
    "residual power bound: with a target it stops at the first bound below it, and stops early "
    "when the probes' Rayleigh quotient shows the target cannot be met") {
  const auto s = spectrum();
  const auto a = sb::test::prescribed_matrix(kRows, kCols, s, /*seed=*/73);
  const auto v = right_vectors(a, kRows, kCols);
  const auto read = sb::test::reader(a, kCols);
  const double tol = tol_of(1.0);
  SpectrumTiming timing;
  {
    // Top c: ||A P|| = 0.9 tol, so tol is reachable.
    const std::vector<double> q(v.begin(), v.begin() + kCount * kCols);
    std::mt19937_64 rng(1);
    const auto r = residual_power_bound<double>(read, kRows, kCols, q, kCount, 1e-15,
                                                options(tol, 24), rng, &timing);
    CHECK(r.bound < tol);
    CHECK(r.bound >= 0.9 * tol * (1 - 1e-9));
    CHECK(r.steps < 24);
  }
  {
    // One too few: ||A P|| = sigma_50 = 3 tol; the estimate passes tol within a few steps.
    const std::vector<double> q(v.begin(), v.begin() + (kCount - 1) * kCols);
    std::mt19937_64 rng(1);
    const auto r = residual_power_bound<double>(read, kRows, kCols, q, kCount - 1, 1e-15,
                                                options(tol, 24), rng, &timing);
    CHECK(r.bound > tol);
    CHECK(r.estimate >= tol);
    CHECK(r.steps <= 6);
  }
}

TEST_CASE(
    "residual power bound: two and three lanes give one lane's bound to rounding and the same bits "
    "run to run, the steps read every row once each and alternate last-to-first and "
    "first-to-last, and a reader that fails in the middle of a pass is rethrown, not a crash") {
  const auto s = spectrum();
  const auto a = sb::test::prescribed_matrix(kRows, kCols, s, /*seed=*/79);
  const auto v = right_vectors(a, kRows, kCols);
  const auto read = sb::test::reader(a, kCols);
  const std::vector<double> q(v.begin(), v.begin() + kCount * kCols);
  auto run = [&](int lanes, const std::function<void(int64_t, int64_t, double*)>& reader) {
    ResidualPowerOptions o = options(0.0, 6);
    o.lanes = lanes;
    o.block_rows = 200;  // 8 blocks of 200 rows for one lane; L lanes take 400 / L rows each
    std::mt19937_64 rng(5);
    SpectrumTiming timing;
    return residual_power_bound<double>(reader, kRows, kCols, q, kCount, 1e-15, o, rng, &timing);
  };
  const auto one = run(1, read);
  for (int lanes : {2, 3}) {
    const auto r = run(lanes, read);
    INFO(lanes << " lanes: bound " << r.bound << " vs " << one.bound);
    // Only the order of the sums over rows differs: float64 rounding, ~1e-16 relative per
    // product, grown over 6 steps of the chain; 1e-9 leaves room and would catch a lost block
    // (a block's share of ||A w||^2 is ~1e-1).
    CHECK(std::abs(r.bound - one.bound) <= 1e-9 * one.bound);
    CHECK(std::abs(r.estimate - one.estimate) <= 1e-9 * one.estimate);
    CHECK(r.steps == one.steps);
    const auto again = run(lanes, read);
    CHECK(again.bound == r.bound);
    CHECK(again.estimate == r.estimate);
  }
  // The order ("Order" in the header): per step, every row once; step 1 from the last block,
  // step 2 from the first.
  for (int lanes : {1, 2}) {
    std::vector<std::pair<int64_t, int64_t>> reads;  // (first row, rows), in the order read
    std::mutex hold;
    auto recording = [&](int64_t first, int64_t n, double* out) {
      const std::lock_guard<std::mutex> lock(hold);
      reads.emplace_back(first, n);
      read(first, n, out);
    };
    ResidualPowerOptions o = options(0.0, 2);
    o.lanes = lanes;
    o.block_rows = 200;
    std::mt19937_64 rng(5);
    SpectrumTiming timing;
    residual_power_bound<double>(recording, kRows, kCols, q, kCount, 1e-15, o, rng, &timing);
    std::vector<int> seen(static_cast<size_t>(2 * kRows), 0);
    int64_t step = 0, covered = 0;
    for (const auto& [first, n] : reads) {
      for (int64_t r = first; r < first + n; ++r) ++seen[static_cast<size_t>(step * kRows + r)];
      if ((covered += n) == kRows) covered = 0, ++step;
    }
    INFO(lanes << " lane(s), " << reads.size() << " reads");
    CHECK(step == 2);
    CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
    if (lanes > 1) continue;  // the lanes interleave their reads in whichever order they run
    // One lane: step 1 reads the block holding the last row before the one holding row 0, step 2
    // the other way round.
    auto position = [&](size_t from, size_t to, int64_t row) {
      return std::find_if(
                 reads.begin() + from, reads.begin() + to,
                 [row](const auto& r) { return r.first <= row && row < r.first + r.second; }) -
             reads.begin();
    };
    size_t step2 = 0;
    for (int64_t sum = 0; step2 < reads.size() && sum < kRows; ++step2) sum += reads[step2].second;
    CHECK(position(0, step2, kRows - 1) < position(0, step2, 0));
    CHECK(position(step2, reads.size(), 0) < position(step2, reads.size(), kRows - 1));
  }
  int calls = 0;
  auto failing = [&](int64_t first, int64_t n, double* out) {
    if (++calls == 20) throw std::runtime_error("read failed");
    read(first, n, out);
  };
  CHECK_THROWS_WITH(run(2, failing), "read failed");
}

TEST_CASE(
    "residual power bound: the block bound's chi-square constant leaves a lower tail of at most "
    "1e-12 (the density integrated numerically) and not far below it, and with no error terms "
    "its root is the closed form (||Z D|| / sqrt(c_p))^(1/(2j+1))") {
  for (const int p : {12, 20, 40, 64}) {
    const double c = std::exp(2 * block_chi_log(p));
    // P(chi^2_p < c) = int_0^c t^(p/2-1) e^(-t/2) dt / (2^(p/2) Gamma(p/2)): Simpson's rule on
    // 20000 intervals (the integrand is smooth; its error is far below the 1% asked here).
    const int n = 20000;
    const double h = c / n, half = 0.5 * p;
    auto density = [&](double t) {
      if (t <= 0) return 0.0;
      return std::exp((half - 1) * std::log(t) - 0.5 * t - half * std::log(2.0) -
                      std::lgamma(half));
    };
    double sum = density(0) + density(c);
    for (int i = 1; i < n; ++i) sum += (i % 2 ? 4 : 2) * density(i * h);
    const double tail = sum * h / 3;
    INFO("p " << p << ": c_p " << c << ", P(chi^2 < c_p) " << tail);
    CHECK(tail <= 1e-12 * 1.01);
    // The bound (c/2)^(p/2) / Gamma(p/2 + 1) drops e^(-t/2) <= 1: at c_p it is at most e^(c/2)
    // above the tail, so the tail lies in [1e-12 e^(-c/2), 1e-12].
    CHECK(tail >= 1e-12 * std::exp(-0.5 * c) * 0.99);
  }
  const double log_chi = block_chi_log(40);
  for (const int power : {1, 7, 25}) {
    const double log_gram = std::log(3e-4);
    const double root = block_bound_root(log_gram, power, {{}, {}}, log_chi, 1.0);
    CHECK(root == Approx(std::exp((log_gram - log_chi) / power)).epsilon(1e-10));
    // Error terms only raise it.
    const std::vector<std::vector<PowerTerm>> errors = {{{std::log(1e-9), power}}};
    CHECK(block_bound_root(log_gram, power, errors, log_chi, 1.0) > root);
  }
}
