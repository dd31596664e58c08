// The sketch's first product per row block (analysis/sketch.h, "Start"): Z = A_b Omega with the
// sparse sign Omega (analysis/sparse_sign.h) against Z = A_b Q with a dense Q (the Gaussian
// start, cblas_dgemm as sketch.cpp calls it), timed back to back in alternating order on the
// same float64 block so that both see the same load. Prints Google Benchmark's table with, per
// shape, the paired ratio dense / sparse (median over pairs) and each side's rate in its own
// FLOP model: the dense product 2 n M k flops, the sparse one n M zeta multiply-adds, and the
// bytes of A_b read (8 n M) per second.
//   build/bench/bench_sparse_sign [--threads N] [Google Benchmark flags]

#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "analysis/sparse_sign.h"

namespace {

int g_threads = 2;

double seconds_of(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  return x.empty() ? 0 : x[x.size() / 2];
}

// Args: rows n of the block, M, k, zeta.
void start_product(benchmark::State& state) {
  const int64_t n = state.range(0), m = state.range(1), k = state.range(2);
  const int zeta = static_cast<int>(state.range(3));
  std::mt19937_64 rng(0);
  std::normal_distribution<double> normal;
  std::vector<double> x(static_cast<size_t>(n * m)), q(static_cast<size_t>(m * k));
  for (auto& v : x) v = normal(rng);
  for (auto& v : q) v = normal(rng);
  const sb::analysis::SparseSign omega(m, k, zeta, rng);
  std::vector<double> z(static_cast<size_t>(n * k));
  auto dense = [&] {
    cblas_dgemm(CblasColMajor, CblasTrans, CblasNoTrans, static_cast<int>(n), static_cast<int>(k),
                static_cast<int>(m), 1.0, x.data(), static_cast<int>(m), q.data(),
                static_cast<int>(m), 0.0, z.data(), static_cast<int>(n));
  };
  auto sparse = [&] { omega.apply(x.data(), n, z.data(), n, g_threads); };
  std::vector<double> dense_s, sparse_s, ratios;
  bool sparse_first = false;
  for (auto _ : state) {
    sparse_first = !sparse_first;
    const double a = seconds_of(sparse_first ? std::function<void()>(sparse) : dense);
    const double b = seconds_of(sparse_first ? std::function<void()>(dense) : sparse);
    const double s = sparse_first ? a : b, d = sparse_first ? b : a;
    state.SetIterationTime(s);
    sparse_s.push_back(s);
    dense_s.push_back(d);
    ratios.push_back(d / s);
    benchmark::DoNotOptimize(z.data());
  }
  const double nm = static_cast<double>(n) * static_cast<double>(m);
  state.counters["dense_over_sparse"] = median(ratios);
  state.counters["dense_GFLOPs"] = 2 * nm * static_cast<double>(k) / median(dense_s) / 1e9;
  state.counters["sparse_Gmadd_s"] = nm * zeta / median(sparse_s) / 1e9;
  state.counters["sparse_GB_s"] = 8 * nm / median(sparse_s) / 1e9;
}

}  // namespace

// The block the sketch streams at WikiText-2's M (1008 rows: 256 MiB of float64, sketch.h's
// sketch_block_rows) at k = 412 (bound 402 + 10), and GPT-2's M at k = 780; zeta = 8 (the
// default) and 4.
BENCHMARK(start_product)
    ->Args({1008, 33278, 412, 8})
    ->Args({1008, 33278, 412, 4})
    ->Args({667, 50257, 780, 8})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);

int main(int argc, char** argv) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      g_threads = std::stoi(argv[++i]);
      continue;
    }
    args.push_back(argv[i]);
  }
  openblas_set_num_threads(g_threads);
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
