// The rank-only solve stage alone, on a synthetic Gram matrix shaped like a log-output one, for
// sizes whose file would not fit (the WikiText-2 projection in
// results/bench/rank_ptb_synthetic.md):
//   G = B B^T + eta I, B (n x r) with entries -10 + N(0, 1) (all of one sign, one dominant
//   eigenvalue, as log-probabilities give), eta a noise floor far below tol^2.
// Prints seconds for: the power iteration, the inertia counts of rank_by_inertia (and their split),
// and, on request, dsytrf_rook / dsyevd_2stage on the same matrix and the dsyrk rate.
//   bench_inertia N [RANK=402] [T=82430] [extra: sytrf,syevd,syrk]

#include <cblas.h>
#include <lapacke.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "analysis/inertia.h"
#include "analysis/rank_certificate.h"
#include "common/errors.h"

namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::vector<double> synthetic_gram(int64_t n, int64_t r) {
  std::mt19937_64 gen(1);
  std::normal_distribution<double> normal;
  std::vector<double> b(static_cast<size_t>(n * r));
  for (auto& v : b) v = -10 + normal(gen);
  std::vector<double> g(static_cast<size_t>(n * n), 0.0);
  cblas_dsyrk(CblasColMajor, CblasUpper, CblasNoTrans, static_cast<int>(n), static_cast<int>(r),
              1.0, b.data(), static_cast<int>(n), 0.0, g.data(), static_cast<int>(n));
  // eta: 1e-16 of lambda_1 ~ 100 n r, like float32 rounding noise in a log-output Gram matrix.
  const double eta = 1e-14 * static_cast<double>(n * r);
  for (int64_t i = 0; i < n; ++i) g[static_cast<size_t>(i + i * n)] += eta;
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_inertia N [RANK=402] [T=82430] [sytrf,syevd,syrk]\n");
    return sb::kExitBadInput;
  }
  const int64_t n = std::atoll(argv[1]);
  const int64_t r = argc > 2 ? std::atoll(argv[2]) : 402;
  const int64_t t = argc > 3 ? std::atoll(argv[3]) : 82430;
  const std::string extra = argc > 4 ? argv[4] : "";
  const double flops = static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / 3;

  auto start = std::chrono::steady_clock::now();
  auto g0 = synthetic_gram(n, r);
  std::printf("n = %lld, rank %lld, T = %lld: matrix built in %.1f s\n", static_cast<long long>(n),
              static_cast<long long>(r), static_cast<long long>(t), since(start));
  start = std::chrono::steady_clock::now();
  sb::analysis::InertiaCounter counter(std::move(g0), n);  // mirrors G into the lower triangle
  const double setup = since(start);
  start = std::chrono::steady_clock::now();
  std::string solver;
  double power = 0;
  const auto rep = sb::analysis::rank_by_inertia(counter, t, sb::analysis::kFloat32Eps, true, r,
                                                 true, &solver, &power);
  const double total = since(start);
  const auto& s = counter.timing();
  std::printf(
      "solve: %.2f s = copy to the lower triangle %.2f s + rank_by_inertia %.2f s (power "
      "iteration %.2f s in %d steps; pivoted Cholesky %.2f s, %lld pivots; LDL^T %.2f s); rank "
      "%lld, %s, %s\n",
      setup + total, setup, total, power, rep.sigma_max_iterations, s.split,
      static_cast<long long>(counter.pivots()), s.ldlt, static_cast<long long>(rep.rank),
      rep.certificate().c_str(), solver.c_str());

  if (extra.find("sytrf") != std::string::npos || extra.find("syevd") != std::string::npos) {
    auto g = synthetic_gram(n, r);
    const double tau = rep.tol * rep.tol;
    const auto ln = static_cast<lapack_int>(n);
    for (const bool rook : {true, false}) {
      if (extra.find("sytrf") == std::string::npos) break;
      auto a = g;
      for (int64_t i = 0; i < n; ++i) a[static_cast<size_t>(i + i * n)] -= tau;
      std::vector<lapack_int> ipiv(static_cast<size_t>(n));
      start = std::chrono::steady_clock::now();
      const auto info =
          rook ? LAPACKE_dsytrf_rook(LAPACK_COL_MAJOR, 'U', ln, a.data(), ln, ipiv.data())
               : LAPACKE_dsytrf(LAPACK_COL_MAJOR, 'U', ln, a.data(), ln, ipiv.data());
      const double sec = since(start);
      std::printf("%s: %.2f s (%.1f GFLOP/s on n^3 / 3), info %d\n",
                  rook ? "dsytrf_rook" : "dsytrf", sec, flops / sec / 1e9, static_cast<int>(info));
    }
    if (extra.find("syevd") != std::string::npos) {
      std::vector<double> w(static_cast<size_t>(n));
      start = std::chrono::steady_clock::now();
      const auto info =
          LAPACKE_dsyevd_2stage(LAPACK_COL_MAJOR, 'N', 'U', ln, g.data(), ln, w.data());
      std::printf("dsyevd_2stage: %.2f s, info %d\n", since(start), static_cast<int>(info));
    }
  }
  if (extra.find("syrk") != std::string::npos) {
    const int64_t k = 4096;
    std::vector<double> x(static_cast<size_t>(n * k), -1.5), c(static_cast<size_t>(n * n), 0.0);
    start = std::chrono::steady_clock::now();
    cblas_dsyrk(CblasColMajor, CblasUpper, CblasNoTrans, static_cast<int>(n), static_cast<int>(k),
                1.0, x.data(), static_cast<int>(n), 1.0, c.data(), static_cast<int>(n));
    const double sec = since(start);
    std::printf(
        "dsyrk n x %lld block: %.2f s, %.1f GFLOP/s counted as n^2 k\n", static_cast<long long>(k),
        sec, static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(k) / sec / 1e9);
  }
  return sb::kExitOk;
}
