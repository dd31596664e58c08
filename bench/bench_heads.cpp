// Forward + backward of (head + NLL) on (N, M) float32 logits, each head timed as a ratio to
// log_softmax + NLL measured in the same run (issue 1/4: sigsoftmax and g:sigmoid <= 1.5x).
//   build/bench/bench_heads [--threads N] [google-benchmark flags]
// Prints Google Benchmark's table, then a markdown table of ratios.

#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "g_sigmoid.h"
#include "registry.h"
#include "sigmoid_family_kernel.h"
#include "sigsoftmax.h"
#include "sparse_softmax.h"

namespace {

using LogOutput = std::function<torch::Tensor(const torch::Tensor&)>;

struct Variant {
  std::string name;
  LogOutput fn;
  bool sparse_loss = false;
};

std::vector<Variant> variants() {
  using sb::HeadSpec;
  auto spec_fn = [](const char* text) {
    const auto spec = HeadSpec::parse(text);
    return LogOutput([spec](const torch::Tensor& z) { return sb::heads::log_output(spec, z); });
  };
  return {
      {"softmax", spec_fn("softmax")},
      {"sigsoftmax", spec_fn("sigsoftmax")},
      {"sigsoftmax (composed ops)", sb::heads::log_sigsoftmax_composed},
      {"sigmoid", spec_fn("sigmoid")},
      {"sigmoid (composed ops)", sb::heads::log_g_sigmoid_composed},
      {"relu", spec_fn("relu")},
      {"softmax_abs", spec_fn("softmax_abs")},
      {"spherical", spec_fn("spherical")},
      {"taylor", spec_fn("taylor")},
      {"sparse:k=20 (eq. 5 loss)", spec_fn("sparse:k=20"), true},
  };
}

void run(benchmark::State& state, const Variant& v) {
  const int64_t n = state.range(0), m = state.range(1);
  torch::manual_seed(0);
  const auto logits = (torch::randn({n, m}) * 3).requires_grad_(true);  // (N, M)
  const auto targets = torch::randint(m, {n}, torch::kLong);            // (N,)
  for (auto _ : state) {
    const auto loss = v.sparse_loss ? sb::heads::sparse_softmax_loss(logits, targets, 20)
                                    : torch::nll_loss(v.fn(logits), targets);
    loss.backward();
    logits.mutable_grad() = torch::Tensor();
    benchmark::DoNotOptimize(loss.item<float>());
  }
  state.SetItemsProcessed(state.iterations() * n * m);
}

// Collects mean real time per iteration by benchmark name, then prints the console table as usual.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    // The minimum over repetitions: this machine is shared, and interference only adds time.
    for (const auto& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.iterations == 0) continue;
      const auto key = r.run_name.function_name + "/" + r.run_name.args;
      const double t = r.GetAdjustedRealTime();
      const auto it = seconds_.find(key);
      if (it == seconds_.end() || t < it->second) seconds_[key] = t;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  std::map<std::string, double> seconds_;
};

}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--threads") threads = std::stoi(argv[i + 1]);
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--threads") {
      ++i;
      continue;
    }
    args.push_back(argv[i]);
  }
  int nargs = static_cast<int>(args.size());
  torch::set_num_threads(threads);

  const std::vector<std::pair<int64_t, int64_t>> shapes = {{700, 10000}, {700, 33278}};
  const auto vs = variants();
  for (const auto& [n, m] : shapes)
    for (const auto& v : vs)
      benchmark::RegisterBenchmark(("head+nll/" + v.name).c_str(), run, v)
          ->Args({n, m})
          ->Unit(benchmark::kMillisecond)
          ->MinTime(0.5)
          ->Repetitions(5)
          ->ReportAggregatesOnly(false)
          ->UseRealTime();

  benchmark::Initialize(&nargs, args.data());
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);

  std::printf("\nForward + backward of head + NLL, float32, %d threads, fused kernel ISA: %s\n",
              threads, sb::kernels::sigmoid_family_isa());
  std::printf("Ratio = min time over 5 repetitions / the same for log_softmax + NLL at the same (N, M), same run.\n\n");
  std::printf("| head | N=700, M=10000 | N=700, M=33278 |\n|---|---|---|\n");
  for (const auto& v : vs) {
    std::printf("| %s |", v.name.c_str());
    for (const auto& [n, m] : shapes) {
      const auto suffix = "/" + std::to_string(n) + "/" + std::to_string(m);
      const auto base = reporter.seconds_.find("head+nll/softmax" + suffix);
      const auto it = reporter.seconds_.find("head+nll/" + v.name + suffix);
      if (base == reporter.seconds_.end() || it == reporter.seconds_.end())
        std::printf(" - |");
      else
        std::printf(" %.2fx |", it->second / base->second);
    }
    std::printf("\n");
  }
  benchmark::Shutdown();
  return 0;
}
