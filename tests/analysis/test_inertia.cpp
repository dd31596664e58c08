// Inertia counts and the rank certificate on prescribed spectra: G = Q diag(lambda) Q^T in float64
// with a random orthogonal Q, so the eigenvalues are known independently of any factorisation.

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <vector>

#include <catch2/catch.hpp>

#include "analysis/inertia.h"
#include "analysis/rank_certificate.h"
#include "analysis/spectrum.h"

using namespace sb::analysis;

namespace {

// Q diag(lambda) Q^T (n x n, column-major, both triangles), Q the orthogonal factor of a Gaussian.
std::vector<double> prescribed(const std::vector<double>& lambda, uint64_t seed) {
  const auto n = static_cast<int64_t>(lambda.size());
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal;
  std::vector<double> q(static_cast<size_t>(n * n)), tau(static_cast<size_t>(n));
  for (auto& v : q) v = normal(gen);
  REQUIRE(LAPACKE_dgeqrf(LAPACK_COL_MAJOR, n, n, q.data(), n, tau.data()) == 0);
  REQUIRE(LAPACKE_dorgqr(LAPACK_COL_MAJOR, n, n, n, q.data(), n, tau.data()) == 0);
  std::vector<double> ql(q), g(static_cast<size_t>(n * n));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i) ql[static_cast<size_t>(i + j * n)] *= lambda[size_t(j)];
  cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, int(n), int(n), int(n), 1.0, ql.data(),
              int(n), q.data(), int(n), 0.0, g.data(), int(n));
  return g;
}

int64_t count_above(const std::vector<double>& lambda, double t) {
  return std::count_if(lambda.begin(), lambda.end(), [&](double l) { return l > t; });
}

// Eigenvalues of the stored matrix by dsyevd: a second, independent count.
std::vector<double> eigenvalues(std::vector<double> g, int64_t n) {
  std::vector<double> w(static_cast<size_t>(n));
  REQUIRE(LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'N', 'U', n, g.data(), n, w.data()) == 0);
  return w;
}

// tol^2 / lambda_1 of the Numerical Recipes threshold.
double tol2_factor(int64_t rows, int64_t cols, double eps) {
  const double t = 0.5 * std::sqrt(double(rows + cols + 1)) * eps;
  return t * t;
}

}  // namespace

TEST_CASE("inertia: the count equals the eigenvalue count on prescribed spectra") {
  const int64_t n = 200;
  // A Gram-like spectrum: 40 eigenvalues log-spaced over [1e-9, 1], the rest 0. Thresholds
  // halfway (geometrically) between neighbours sit a factor 1.3 from both: far beyond the
  // ~1e-14 rounding of the stored matrix.
  std::vector<double> gramlike(static_cast<size_t>(n), 0.0);
  for (int i = 0; i < 40; ++i) gramlike[size_t(i)] = std::pow(10.0, -9.0 * i / 39);
  // An indefinite spectrum, uniform in [-1, 1].
  std::vector<double> indefinite(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) indefinite[size_t(i)] = -1 + 2.0 * (i + 0.5) / double(n);
  for (const auto* lambda : {&gramlike, &indefinite}) {
    InertiaCounter counter(prescribed(*lambda, 7), n);
    const auto w = eigenvalues(prescribed(*lambda, 7), n);
    std::vector<double> thresholds;
    if (lambda == &gramlike) {
      for (int i = 0; i + 1 < 40; ++i)
        thresholds.push_back(std::sqrt((*lambda)[size_t(i)] * (*lambda)[size_t(i + 1)]));
      thresholds.push_back(1e-11);  // below the last nonzero eigenvalue, far above the zeros
      thresholds.push_back(2.0);    // above all
    } else {
      // Eigenvalues at -1 + 0.01 (i + 1/2): thresholds at -1 + 0.01 i lie halfway.
      for (double t : {-0.99, -0.5, -0.01, 0.0, 0.01, 0.33, 0.8, 0.99}) thresholds.push_back(t);
    }
    for (double t : thresholds) {
      INFO("threshold " << t);
      const int64_t expected = count_above(*lambda, t);
      CHECK(counter.count_above(t) == expected);
      CHECK(count_above(w, t) == expected);  // dsyevd on the same stored matrix agrees
      CHECK(counter.method() == "dsytrf_rook");
      // Backward error bound: gamma_(n+1) times norms of order 1 here.
      CHECK(counter.backward_error() < 1e-10);
    }
  }
}

TEST_CASE(
    "inertia: the window count equals the eigenvalue count when the spectrum below the window is "
    "negligible, and refuses otherwise") {
  const int64_t n = 200;
  // Log-output-like: 40 eigenvalues log-spaced over [1e-3, 1], the other 160 at 1e-15 .. 1e-12
  // (their sum, ~1e-11, far below the window [1e-8, 1e-7]).
  std::vector<double> lambda(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    lambda[size_t(i)] = i < 40 ? std::pow(10.0, -3.0 * double(i) / 39)
                               : std::pow(10.0, -12 - 3.0 * double(i - 40) / 159);
  InertiaCounter counter(prescribed(lambda, 13), n);
  CHECK(counter.split(1e-8, 1e-7, n) == 40);
  CHECK(counter.pivots() == 40);
  CHECK(counter.method() == "pivoted_cholesky");
  CHECK(counter.backward_error() < 1e-12);  // gamma_41 (|| |G| || + ||R||_F^2), both ~1
  CHECK(counter.count_above(3e-8) == 40);   // the LDL^T count agrees
  // Between signal eigenvalues the eigenvalues below the window sum to more than it: refused.
  const double mid = std::sqrt(lambda[10] * lambda[11]);
  CHECK(counter.split(mid / 1.05, mid * 1.05, n) == -1);
  // A window holding an eigenvalue: never one count.
  CHECK(counter.split(lambda[39] / 2, lambda[39] * 2, n) == -1);
  // The pivot cap: 40 pivots needed.
  CHECK(counter.split(1e-8, 1e-7, 39) == -1);
  CHECK(counter.split(1e-8, 1e-7, 40) == 40);
  // Positive definite on the window needs all n pivots; a window above everything needs none.
  // (trace 200 < 0.9 * 300 and ||G||_F = 14: no pivot needed above 300).
  InertiaCounter spd(prescribed(std::vector<double>(size_t(n), 1.0), 3), n);
  CHECK(spd.split(0.5, 0.6, n) == n);
  CHECK(spd.split(300, 400, n) == 0);
  CHECK(spd.split(1.5, 1.6, n) == -1);  // 200 eigenvalues of 1 sum to more than the window
}

TEST_CASE(
    "inertia: the window count concludes when the pivoted principal block is ill-conditioned but "
    "R R^T is not (delocalised eigenvectors, as in large-vocabulary Gram matrices)") {
  const int64_t n = 400, k = 40;
  // 40 eigenvalues log-spaced over [1e-3, 1], the rest at 1e-15 .. 1e-12; random Q spreads every
  // eigenvector over all n coordinates, so the last pivots are ~lambda_40 / n and the pivoted
  // 40 x 40 principal block G11 has lambda_min far below lambda_40 (measured below).
  std::vector<double> lambda(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    lambda[size_t(i)] = i < k ? std::pow(10.0, -3.0 * double(i) / double(k - 1))
                              : std::pow(10.0, -12 - 3.0 * double(i - k) / double(n - k - 1));
  const auto g = prescribed(lambda, 21);
  // An independent pivoted Cholesky (LAPACK dpstrf) picks the pivot columns; lambda_min of G on
  // them, by dsyevd, is below the window: a check on G11 - t_hi I could not conclude here.
  std::vector<double> f(g);
  std::vector<lapack_int> piv(static_cast<size_t>(n));
  lapack_int rank = 0;
  REQUIRE(LAPACKE_dpstrf(LAPACK_COL_MAJOR, 'U', n, f.data(), n, piv.data(), &rank, -1.0) >= 0);
  std::vector<double> g11(static_cast<size_t>(k * k));
  for (int64_t b = 0; b < k; ++b)
    for (int64_t a = 0; a < k; ++a)
      g11[size_t(a + b * k)] = g[size_t((piv[size_t(a)] - 1) + (piv[size_t(b)] - 1) * n)];
  const double g11_min = eigenvalues(g11, k).front();
  const double t_lo = 1e-4, t_hi = 2e-4;  // 5x below lambda_40
  INFO("lambda_min(G11) = " << g11_min << ", lambda_40 = " << lambda[size_t(k - 1)]);
  CHECK(g11_min < t_lo);
  // The count over the whole window, without an n x n factorisation, equals the eigenvalue count.
  InertiaCounter counter(g, n);
  CHECK(counter.split(t_lo, t_hi, n) == k);
  CHECK(counter.method() == "pivoted_cholesky");
  CHECK(counter.pivots() == k);
  CHECK(count_above(lambda, t_lo) == k);
  CHECK(count_above(lambda, t_hi) == k);
  CHECK(count_above(eigenvalues(g, n), t_lo) == k);  // dsyevd on the stored matrix agrees
  CHECK(counter.count_above(1.5e-4) == k);           // and so does the LDL^T count
  // The window's top above lambda_40: refused, not miscounted.
  CHECK(counter.split(t_lo, 2 * lambda[size_t(k - 1)], n) == -1);
}

TEST_CASE("inertia: power iteration brackets lambda_1 as dsyevd computes it") {
  const int64_t n = 150;
  // Mixed-sign G with lambda_2 / lambda_1 = 0.5: the residual bracket.
  std::vector<double> lambda(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) lambda[size_t(i)] = std::pow(0.5, double(i)) * 3.0;
  InertiaCounter counter(prescribed(lambda, 3), n);
  CHECK_FALSE(counter.nonnegative());
  const auto p = counter.largest_eigenvalue();
  const double l1 = eigenvalues(prescribed(lambda, 3), n).back();
  // dsyevd's lambda_1 is within ~n eps64 lambda_1 = 3e-14 lambda_1 of the matrix's.
  CHECK(p.lower <= l1 * (1 + 1e-13));
  CHECK(p.upper >= l1 * (1 - 1e-13));
  CHECK(p.relative_width() < 1e-11);  // converged: the stop asks for 1e-12 plus rounding
  CHECK_FALSE(p.rigorous);
  CHECK(std::abs(p.rho - l1) < 1e-12 * l1);

  // G = B^T B with B of one sign: G >= 0 entrywise, the Collatz-Wielandt bracket.
  const int64_t t = 500;
  std::mt19937_64 gen(11);
  std::normal_distribution<double> normal;
  std::vector<double> b(static_cast<size_t>(t * n)), g(static_cast<size_t>(n * n), 0.0);
  for (auto& v : b) v = -5 + normal(gen);  // column-major t x n, every entry < 0 w.p. ~1
  REQUIRE(std::all_of(b.begin(), b.end(), [](double v) { return v < 0; }));
  cblas_dsyrk(CblasColMajor, CblasUpper, CblasTrans, int(n), int(t), 1.0, b.data(), int(t), 0.0,
              g.data(), int(n));
  InertiaCounter positive(g, n);
  CHECK(positive.nonnegative());
  const auto q = positive.largest_eigenvalue();
  const double m1 = eigenvalues(g, n).back();
  CHECK(q.rigorous);
  CHECK(q.lower <= m1 * (1 + 1e-13));
  CHECK(q.upper >= m1 * (1 - 1e-13));
  CHECK(q.relative_width() < 1e-11);
  CHECK(q.iterations < 20);  // lambda_2 / lambda_1 ~ 1e-2 for this matrix: a handful of steps
}

TEST_CASE(
    "rank certificate: a threshold clear of the spectrum is certified, and the rank equals the "
    "eigenvalue count") {
  const int64_t n = 200, rows = 100000;
  const double tau = tol2_factor(rows, n, kFloat32Eps);  // tol^2 with lambda_1 = 1
  // Gram-like: lambda_1 = 1, 30 more log-spaced down to 1e4 tau, a tail at 1e-3 .. 1e-9 tau.
  std::vector<double> lambda{1.0};
  for (int i = 0; i < 30; ++i) lambda.push_back(std::pow(1e4 * tau, double(i + 1) / 30));
  while (int64_t(lambda.size()) < n)
    lambda.push_back(1e-3 * tau * std::pow(1e-6, double(lambda.size() - 31) / double(n - 31)));
  for (bool near : {false, true}) {
    // near: one more eigenvalue at 1.1 tau, 10% above tol^2 where the window is ~+-4%.
    if (near) lambda[30] = 1.1 * tau;
    INFO((near ? "with" : "without") << " an eigenvalue at 1.1 tol^2");
    InertiaCounter counter(prescribed(lambda, 5), n);
    std::string solver;
    const auto r = rank_by_inertia(counter, rows, kFloat32Eps, /*same_sign=*/false,
                                   /*bound=*/31, /*theorem2_bounded=*/true, &solver);
    CHECK(r.rank == 31);
    CHECK(r.rank == count_above(lambda, tau));
    CHECK(r.certified);
    CHECK(r.certificate() == "certified");
    CHECK(r.uncertain == 0);
    CHECK(r.rank_min == 31);
    CHECK(r.rank_max == 31);
    CHECK(r.tol_lo * r.tol_lo < tau);
    CHECK(r.tol_hi * r.tol_hi > tau);
    CHECK(r.tol_hi * r.tol_hi < 1.1 * tau);
    CHECK(std::abs(r.sigma_max - 1) < 1e-12);
    if (!near) {  // the window count concludes: no n x n factorisation
      CHECK(solver == "power_iteration+pivoted_cholesky");
      CHECK(counter.timing().ldlt == 0);
    }

    // The eigenvalue path on the same matrix: same rank, certified too.
    const auto w = eigenvalues(prescribed(lambda, 5), n);
    std::vector<double> sigma;
    for (auto it = w.rbegin(); it != w.rend(); ++it) sigma.push_back(std::sqrt(std::max(*it, 0.0)));
    auto e = numerical_rank(sigma, rows, n, kFloat32Eps, 31, true, std::sqrt(kFloat64Eps));
    certify_from_spectrum(e, sigma, rows, n, /*same_sign=*/false);
    CHECK(e.rank == r.rank);
    CHECK(e.certified);
  }
}

TEST_CASE(
    "rank certificate: eigenvalues packed densely around tol^2 are reported uncertain, and the "
    "count lies within the reported +-n") {
  const int64_t n = 200, rows = 100000;
  const double tau = tol2_factor(rows, n, kFloat32Eps);  // lambda_1 = 1
  // The window is tau +- (gamma_T trace + solver error) = tau (1 +- ~4.7%): ten eigenvalues at
  // tau (1.002 + 0.004 j), j = -5..4, all inside; 20 clearly above, the rest clearly below.
  std::vector<double> lambda{1.0};
  for (int i = 0; i < 19; ++i) lambda.push_back(std::pow(3 * tau, double(i + 1) / 19));
  for (int j = -5; j < 5; ++j) lambda.push_back(tau * (1.002 + 0.004 * j));
  while (int64_t(lambda.size()) < n) lambda.push_back(tau / 3);
  InertiaCounter counter(prescribed(lambda, 9), n);
  const auto r = rank_by_inertia(counter, rows, kFloat32Eps, false, 30, true);
  INFO("rank " << r.rank << " in [" << r.rank_min << ", " << r.rank_max << "], window ["
               << r.tol_lo * r.tol_lo / tau << ", " << r.tol_hi * r.tol_hi / tau << "] tau");
  CHECK_FALSE(r.certified);
  CHECK(r.certificate() == "uncertain +-" + std::to_string(r.uncertain));
  // The window's ends against the prescribed spectrum: an independent count of each end.
  CHECK(r.rank_max == count_above(lambda, r.tol_lo * r.tol_lo));
  CHECK(r.rank_min == count_above(lambda, r.tol_hi * r.tol_hi));
  CHECK(r.rank_min == 20);
  CHECK(r.rank_max == 30);
  // The true rank (lambda_1 = 1 exactly: tol^2 = tau) within rank +- uncertain, and the nominal
  // count equal to it (the packed eigenvalues lie >= 0.2% = 7e-13 from tau, the stored matrix's
  // rounding is ~n eps64 = 4e-14).
  const int64_t truth = count_above(lambda, tau);
  CHECK(truth == 25);
  CHECK(std::abs(r.rank - truth) <= r.uncertain);
  CHECK(r.rank == truth);
  CHECK(r.uncertain == std::max(r.rank - 20, int64_t{30} - r.rank));

  // The eigenvalue path reports the same interval.
  const auto w = eigenvalues(prescribed(lambda, 9), n);
  std::vector<double> sigma;
  for (auto it = w.rbegin(); it != w.rend(); ++it) sigma.push_back(std::sqrt(std::max(*it, 0.0)));
  auto e = numerical_rank(sigma, rows, n, kFloat32Eps, 30, true, std::sqrt(kFloat64Eps));
  certify_from_spectrum(e, sigma, rows, n, false);
  CHECK_FALSE(e.certified);
  CHECK(e.rank == truth);
  CHECK(e.rank_min == 20);
  CHECK(e.rank_max == 30);
}

TEST_CASE(
    "rank certificate: inertia counts of the matrix the eigensolver ran on narrow the spectrum's "
    "window where its a priori solver error dominates, to the true count") {
  // rows = 640, n = 200, float32: tol^2 = tau ~ 3e-12 lambda_1, so the eigensolver's doubled
  // a priori error (4.0% of tau) outweighs the Gram rounding (gamma_640 trace, 3.2%): the
  // spectrum's window is tau (1 +- 7.3%). The counts measure their backward error from the
  // factors, about half the estimate: tau (1 +- ~5.3%). Four eigenvalues 6.5-6.8% from tau lie
  // inside the first window and outside the second.
  const int64_t n = 200, rows = 640;
  const double tau = tol2_factor(rows, n, kFloat32Eps);
  std::vector<double> lambda{1.0};
  for (int i = 0; i < 19; ++i) lambda.push_back(std::pow(3 * tau, double(i + 1) / 19));
  for (double f : {1.068, 1.065, 0.935, 0.932}) lambda.push_back(f * tau);
  while (int64_t(lambda.size()) < n) lambda.push_back(tau / 3);
  const int64_t truth = count_above(lambda, tau);
  REQUIRE(truth == 22);

  // The spectrum from the counter's own array: the eigensolver overwrites the upper triangle,
  // the counts after it read the lower one (InertiaCounter::with_upper).
  InertiaCounter counter(prescribed(lambda, 13), n);
  const auto sigma = counter.with_upper([&](double* g, int64_t order) {
    return gram_singular_values(g, order, order, EigenSolver::dsyevd);
  });
  REQUIRE(int64_t(sigma.size()) == n);
  std::vector<double> sorted(lambda);
  std::sort(sorted.rbegin(), sorted.rend());
  for (int64_t i = 0; i < 24; ++i)  // dsyevd's values, to its rounding (~n eps64 lambda_1)
    CHECK(std::abs(sigma[size_t(i)] * sigma[size_t(i)] - sorted[size_t(i)]) < 1e-13);
  for (double t : {0.5, 1e-3, 10 * tau, tau, 0.5 * tau})  // the lower copy survived: exact counts
    CHECK(counter.count_above(t) == count_above(lambda, t));

  auto e = numerical_rank(sigma, rows, n, kFloat32Eps, 30, true, std::sqrt(kFloat64Eps));
  certify_from_spectrum(e, sigma, rows, n, /*same_sign=*/false);
  INFO("spectrum window [" << e.rank_min << ", " << e.rank_max << "] solver_error "
                           << e.solver_error / tau << " tau, gram_error " << e.gram_error / tau
                           << " tau");
  CHECK_FALSE(e.certified);
  CHECK(e.rank_min <= 20);
  CHECK(e.rank_max >= 24);
  CHECK(e.rank == truth);

  const auto routes = narrow_by_inertia(e, counter, rows, /*same_sign=*/false);
  INFO("after the counts [" << e.rank_min << ", " << e.rank_max << "] by " << routes);
  CHECK(routes.find("dsytrf_rook") != std::string::npos);
  CHECK(e.certified);
  CHECK(e.rank_min == truth);
  CHECK(e.rank_max == truth);
  CHECK(e.rank == truth);
  CHECK(e.certificate() == "certified");

  // A certified report is left alone, and says so with "".
  CHECK(narrow_by_inertia(e, counter, rows, false).empty());
}

TEST_CASE("rank analysis: the overlapped read accumulates the same Gram matrix as the plain one") {
  const int64_t t = 1000, m = 120;
  std::mt19937_64 gen(2);
  std::normal_distribution<float> normal;
  std::vector<float> a(static_cast<size_t>(t * m));
  for (auto& v : a) v = -3 + normal(gen);
  a[5] = std::abs(a[5]) + 1;  // one positive entry: mixed signs
  const RowReader read = [&](int64_t begin, int64_t count, float* out) {
    std::copy(a.begin() + begin * m, a.begin() + (begin + count) * m, out);
  };
  FiniteScan s1, s2;
  const auto plain = accumulate_gram(read, t, m, /*block_rows=*/96, &s1, nullptr, {}, false);
  const auto overlapped = accumulate_gram(read, t, m, 96, &s2, nullptr, {}, true);
  REQUIRE(plain.g.size() == size_t(m * m));
  REQUIRE(overlapped.g.size() == size_t(m * m));
  CHECK_FALSE(plain.same_sign);
  CHECK_FALSE(overlapped.same_sign);
  // The same dsyrk calls on the same blocks in the same order: identical up to BLAS threading
  // (entries ~1e4; a tolerance of 1e-9 admits only reassociation).
  for (int64_t j = 0; j < m; ++j)
    for (int64_t i = 0; i <= j; ++i)
      CHECK(std::abs(plain.g[size_t(i + j * m)] - overlapped.g[size_t(i + j * m)]) < 1e-9);
  // A float64 recomputation of one entry.
  double g01 = 0;
  for (int64_t r = 0; r < t; ++r) g01 += double(a[size_t(r * m)]) * double(a[size_t(r * m + 1)]);
  CHECK(std::abs(overlapped.g[size_t(0 + 1 * m)] - g01) < 1e-12 * std::abs(g01) * double(t));

  // A non-finite entry in a later block stops both with the same scan.
  a[size_t(700 * m + 3)] = std::nanf("");
  FiniteScan s3, s4;
  CHECK(accumulate_gram(read, t, m, 96, &s3, nullptr, {}, false).g.empty());
  CHECK(accumulate_gram(read, t, m, 96, &s4, nullptr, {}, true).g.empty());
  CHECK(s3.describe() == s4.describe());
  CHECK(s4.first_row == 700);
}

TEST_CASE(
    "rank certificate: two windows of one count narrow to their intersection, the verdict "
    "follows it, and disjoint windows leave the report as it was") {
  auto window = [](int64_t lo, int64_t rank, int64_t hi) {
    RankReport r;
    r.has_certificate = true;
    r.rank_min = lo;
    r.rank = rank;
    r.rank_max = hi;
    r.bound = 129;
    r.within_bound = false;
    return r;
  };
  // The transformer profile's sigsoftmax dump at d = 128: sketch 429..5000, Gram 422..439.
  RankReport sketch = window(429, 429, 5000);
  REQUIRE(narrow_window(sketch, window(422, 430, 439)));
  CHECK(sketch.rank_min == 429);
  CHECK(sketch.rank_max == 439);
  CHECK(sketch.rank == 429);
  CHECK_FALSE(sketch.certified);
  CHECK(sketch.uncertain == 10);
  CHECK(sketch.verdict() == "exceeds_bound");
  // Meeting windows certify; the nominal rank moves into the window.
  RankReport meet = window(100, 140, 200);
  REQUIRE(narrow_window(meet, window(120, 120, 120)));
  CHECK(meet.certified);
  CHECK(meet.rank == 120);
  CHECK(meet.uncertain == 0);
  // A window that falls within the bound turns the verdict.
  RankReport below = window(110, 131, 5000);
  REQUIRE(narrow_window(below, window(100, 120, 128)));
  CHECK(below.rank_max == 128);
  CHECK(below.within_bound);
  // Disjoint windows: one certificate is wrong; nothing changes.
  RankReport apart = window(300, 310, 5000);
  CHECK_FALSE(narrow_window(apart, window(100, 120, 200)));
  CHECK(apart.rank_min == 300);
  CHECK(apart.rank_max == 5000);
  // Without a certificate on either side there is nothing to intersect.
  RankReport bare = window(300, 310, 5000);
  RankReport none;
  CHECK_FALSE(narrow_window(bare, none));
}
