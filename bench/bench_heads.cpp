// Forward + backward of (head + NLL) on (N, M) float32 logits, each head timed as a ratio to
// log_softmax + NLL measured back to back in the same iterations (issue 1/4: target
// sigsoftmax and g:sigmoid <= 1.5x).
//   build/bench/bench_heads [--threads N] [google-benchmark flags]
// Prints Google Benchmark's table, then a markdown table of ratios.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
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

// One training-style step: loss = head + NLL (sparse: eq. 5), backward, drop the gradient.
double step_seconds(const Variant& v, const torch::Tensor& logits, const torch::Tensor& targets) {
  const auto start = std::chrono::steady_clock::now();
  const auto loss = v.sparse_loss ? sb::heads::sparse_softmax_loss(logits, targets, 20)
                                  : torch::nll_loss(v.fn(logits), targets);
  loss.backward();
  logits.mutable_grad() = torch::Tensor();
  benchmark::DoNotOptimize(loss.item<float>());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  const size_t n = x.size();
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

// Paired measurement: every iteration times log_softmax + NLL and the head on the same logits,
// back to back in alternating order, so both see the same machine load; the ratio reported is the median of the
// per-iteration ratios (this machine is shared, and its load drifts over seconds).
void run(benchmark::State& state, const Variant& v, const Variant& baseline) {
  const int64_t n = state.range(0), m = state.range(1);
  torch::manual_seed(0);
  const auto logits = (torch::randn({n, m}) * 3).requires_grad_(true);  // (N, M)
  const auto targets = torch::randint(m, {n}, torch::kLong);            // (N,)
  std::vector<double> ratios, base_ms, head_ms;
  bool head_first = false;
  for (auto _ : state) {
    // Alternate the order: the step that runs second inherits the allocator state of the first.
    head_first = !head_first;
    const double first = step_seconds(head_first ? v : baseline, logits, targets);
    const double second = step_seconds(head_first ? baseline : v, logits, targets);
    const double head = head_first ? first : second, base = head_first ? second : first;
    state.SetIterationTime(head);
    ratios.push_back(head / base);
    base_ms.push_back(1e3 * base);
    head_ms.push_back(1e3 * head);
  }
  state.counters["ratio"] = median(ratios);
  state.counters["softmax_ms"] = median(base_ms);
  state.counters["head_ms"] = median(head_ms);
  state.SetItemsProcessed(state.iterations() * n * m);
}

// Collects the paired ratio of every benchmark, then prints the console table as usual.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.iterations == 0) continue;
      const auto key = r.run_name.function_name + "/" + r.run_name.args;
      ratio_[key] = r.counters.at("ratio").value;
      ms_[key] = r.counters.at("head_ms").value;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  std::map<std::string, double> ratio_, ms_;
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
      benchmark::RegisterBenchmark(("head+nll/" + v.name).c_str(), run, v, vs.front())
          ->Args({n, m})
          ->Unit(benchmark::kMillisecond)
          ->MinTime(2.0)
          ->UseManualTime();

  benchmark::Initialize(&nargs, args.data());
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);

  std::printf("\nForward + backward of head + NLL, float32, %d threads, fused kernel ISA: %s\n",
              threads, sb::kernels::sigmoid_family_isa());
  std::printf("Ratio: median over iterations of (head step time / log_softmax + NLL step time),\n"
              "both timed back to back (alternating order) in each iteration on the same logits.\n\n");
  std::printf("| head | N=700, M=10000 | N=700, M=33278 |\n|---|---|---|\n");
  for (const auto& v : vs) {
    std::printf("| %s |", v.name.c_str());
    for (const auto& [n, m] : shapes) {
      const auto suffix = "/" + std::to_string(n) + "/" + std::to_string(m);
      const auto it = reporter.ratio_.find("head+nll/" + v.name + suffix);
      if (it == reporter.ratio_.end())
        std::printf(" - |");
      else
        std::printf(" %.2fx (%.1f ms) |", it->second, reporter.ms_.at(it->first));
    }
    std::printf("\n");
  }
  benchmark::Shutdown();
  return 0;
}
