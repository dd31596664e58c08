// Forward + backward of (head + NLL) on (N, M) float32 logits, each head timed as a ratio to
// log_softmax + NLL measured back to back in the same iterations (issue 1/4: target
// sigsoftmax and g:sigmoid <= 1.5x).
//   build/bench/bench_heads [--threads N] [google-benchmark flags]
// Prints Google Benchmark's table, then a markdown table of ratios.

#include <benchmark/benchmark.h>

#include <malloc.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "trainers/heads/g_sigmoid.h"
#include "trainers/heads/kernels/sigmoid_family_kernel.h"
#include "trainers/heads/output_head.h"
#include "trainers/heads/sigsoftmax.h"
#include "trainers/heads/sparse_softmax.h"

namespace {

using Loss = std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>;

struct Variant {
  std::string name;
  Loss loss;  // logits (N, M), targets (N,) -> mean loss
};

std::vector<Variant> variants() {
  auto nll_of = [](const char* text) {
    const auto spec = sb::HeadSpec::parse(text);
    return Loss([spec](const torch::Tensor& z, const torch::Tensor& t) {
      return torch::nll_loss(sb::heads::log_output(spec, z), t);
    });
  };
  auto nll_of_fn = [](torch::Tensor (*fn)(const torch::Tensor&)) {
    return Loss(
        [fn](const torch::Tensor& z, const torch::Tensor& t) { return torch::nll_loss(fn(z), t); });
  };
  return {
      {"softmax", nll_of("softmax")},
      {"sigsoftmax", nll_of("sigsoftmax")},
      {"sigsoftmax (fused NLL loss)", sb::heads::sigsoftmax_nll_loss},
      {"sigsoftmax (composed ops)", nll_of_fn(sb::heads::log_sigsoftmax_composed)},
      {"sigmoid", nll_of("sigmoid")},
      {"sigmoid (fused NLL loss)", sb::heads::g_sigmoid_nll_loss},
      {"sigmoid (composed ops)", nll_of_fn(sb::heads::log_g_sigmoid_composed)},
      {"relu", nll_of("relu")},
      {"softmax_abs", nll_of("softmax_abs")},
      {"spherical", nll_of("spherical")},
      {"taylor", nll_of("taylor")},
      {"sparse:k=20 (eq. 5 loss)",
       [](const torch::Tensor& z, const torch::Tensor& t) {
         return sb::heads::sparse_softmax_loss(z, t, 20);
       }},
  };
}

// One training-style step: the loss, backward, drop the gradient.
double step_seconds(const Variant& v, const torch::Tensor& logits, const torch::Tensor& targets) {
  const auto start = std::chrono::steady_clock::now();
  const auto loss = v.loss(logits, targets);
  loss.backward();
  logits.mutable_grad() = torch::Tensor();
  benchmark::DoNotOptimize(loss.item<float>());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> x) {
  if (x.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(x.begin(), x.end());
  const size_t n = x.size();
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

// Paired measurement: every iteration times log_softmax + NLL and the head on the same logits,
// back to back in alternating order, so both see the same machine load (this machine is shared,
// and its load drifts over seconds). The step that runs first pays more page faults, so each
// ratio sums two consecutive iterations, one of each order; the median of those is reported.
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
    base_ms.push_back(1e3 * base);
    head_ms.push_back(1e3 * head);
  }
  // One ratio per pair of iterations (one of each order): the order effect cancels in the sums.
  for (size_t i = 0; i + 1 < head_ms.size(); i += 2)
    ratios.push_back((head_ms[i] + head_ms[i + 1]) / (base_ms[i] + base_ms[i + 1]));
  if (ratios.empty() && !head_ms.empty()) ratios.push_back(head_ms[0] / base_ms[0]);  // 1 iteration
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
  bool keep_heap = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--threads" && i + 1 < argc) {
      threads = std::stoi(argv[++i]);
    } else if (arg == "--keep-heap") {
      keep_heap = true;
    } else if (arg == "--help") {
      std::printf(
          "bench_heads [--threads N] [--keep-heap] [google-benchmark flags]\n"
          "  --threads N   torch threads (default 2)\n"
          "  --keep-heap   keep freed memory in glibc's heap (mallopt), so buffers of up to 32 "
          "MiB\n"
          "                are reused without page faults; shows the kernels' cost without the\n"
          "                page-fault cost of fresh (N, M) tensors (M = 10000 only: M = 33278\n"
          "                buffers are larger than mallopt's 32 MiB cap)\n");
      benchmark::PrintDefaultHelp();
      return 0;
    } else {
      args.push_back(argv[i]);
    }
  }
  if (keep_heap) {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
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

  std::printf("\nForward + backward of head + NLL, float32, %d threads, fused kernel ISA: %s%s\n",
              threads, sb::kernels::sigmoid_family_isa(), keep_heap ? ", --keep-heap" : "");
  std::printf(
      "Ratio: median over pairs of iterations of (head time / log_softmax + NLL time); in\n"
      "each iteration both steps run back to back on the same logits, in alternating\n"
      "order, and a pair sums one iteration of each order. In brackets: median head ms.\n\n");
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
