#include "bench/step_profile.h"

#include <ATen/record_function.h>
#include <sys/resource.h>
#include <nlohmann/json.hpp>

#include "common/duration.h"
#include "common/errors.h"

#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <unordered_map>

namespace sb::bench {
namespace {

using clock_type = std::chrono::steady_clock;

// One operator (or scope) run: its name, the range enclosing it (-1: none) and its times. The
// storage is allocated and touched before the profiled steps and never grows during them: the
// step's own large buffers (tens of MB) are reused from glibc's heap as train_wordlm reuses them
// (trainers/runkit/process_setup.h), where LibTorch's profiler, whose event blocks land between
// them, made every step page-fault ~100 MB of fresh memory and run 3x slower.
struct Range {
  int32_t name = 0, parent = -1, shape_begin = 0, shape_count = 0;
  double t0 = 0, t1 = 0;  // microseconds since the profile began
};

class Recorder {
 public:
  explicit Recorder(size_t capacity) : ranges_(capacity), dims_(8 * capacity) {
    names_.reserve(1024);
    stack_.reserve(256);
    for (const char* gemm : {"aten::mm", "aten::addmm", "aten::bmm"}) gemm_ids_.insert(id(gemm));
  }

  void start(const at::RecordFunction& fn) {
    if (std::this_thread::get_id() != thread_) {
      ++other_thread_;
      return;
    }
    if (used_ == ranges_.size()) {
      ++overflow_;
      stack_.push_back(-1);
      return;
    }
    Range& r = ranges_[used_];
    r.name = id(fn.name());
    r.parent = stack_.empty() ? -1 : stack_.back();
    r.shape_begin = static_cast<int32_t>(dims_used_);
    r.shape_count = 0;
    if (gemm_ids_.count(r.name)) record_shapes(fn, r);
    r.t0 = now_us();
    stack_.push_back(static_cast<int32_t>(used_++));
  }

  void end() {
    if (std::this_thread::get_id() != thread_ || stack_.empty()) return;
    const int32_t i = stack_.back();
    stack_.pop_back();
    if (i >= 0) ranges_[static_cast<size_t>(i)].t1 = now_us();
  }

  void write(std::ofstream& out, std::set<std::string>& gemms) const;
  size_t used() const { return used_; }
  size_t overflow() const { return overflow_; }
  size_t other_thread() const { return other_thread_; }

 private:
  double now_us() const {
    return std::chrono::duration<double, std::micro>(clock_type::now() - origin_).count();
  }
  // The name's index; names are interned by content (FNV-1a), since an autograd node's name may
  // live only as long as its run.
  int32_t id(const char* name) {
    uint64_t h = 1469598103934665603ULL;
    for (const char* c = name; *c; ++c) h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ULL;
    auto it = by_hash_.find(h);
    if (it != by_hash_.end() && names_[static_cast<size_t>(it->second)] == name) return it->second;
    names_.emplace_back(name);
    const auto index = static_cast<int32_t>(names_.size() - 1);
    by_hash_[h] = index;
    return index;
  }
  void record_shapes(const at::RecordFunction& fn, Range& r) {
    for (const auto& input : fn.inputs()) {
      if (!input.isTensor()) continue;
      const auto sizes = input.toTensor().sizes();
      if (dims_used_ + sizes.size() + 1 > dims_.size()) return;
      dims_[dims_used_++] = static_cast<int64_t>(sizes.size());
      for (auto s : sizes) dims_[dims_used_++] = s;
      ++r.shape_count;
    }
  }

  std::vector<Range> ranges_;
  std::vector<int64_t> dims_;  // per tensor input of a GEMM: its rank, then its sizes
  size_t used_ = 0, dims_used_ = 0, overflow_ = 0, other_thread_ = 0;
  std::vector<int32_t> stack_;
  std::vector<std::string> names_;
  std::unordered_map<uint64_t, int32_t> by_hash_;
  std::set<int32_t> gemm_ids_;
  std::thread::id thread_ = std::this_thread::get_id();
  clock_type::time_point origin_ = clock_type::now();
};

Recorder* g_recorder = nullptr;  // the callbacks are plain function pointers

// "op m n k batch" of a GEMM from its inputs' shapes, or "".
std::string gemm_key(const std::string& name, const std::vector<std::vector<int64_t>>& s) {
  auto key = [&](int64_t m, int64_t n, int64_t k, int64_t batch) {
    return name + " " + std::to_string(m) + " " + std::to_string(n) + " " + std::to_string(k) +
           " " + std::to_string(batch);
  };
  if (name == "aten::mm" && s.size() >= 2 && s[0].size() == 2 && s[1].size() == 2)
    return key(s[0][0], s[1][1], s[0][1], 1);  // (m, k) x (k, n)
  if (name == "aten::addmm" && s.size() >= 3 && s[1].size() == 2 && s[2].size() == 2)
    return key(s[1][0], s[2][1], s[1][1], 1);  // bias + (m, k) x (k, n)
  if (name == "aten::bmm" && s.size() >= 2 && s[0].size() == 3 && s[1].size() == 3)
    return key(s[0][1], s[1][2], s[0][2], s[0][0]);  // (b, m, k) x (b, k, n)
  return "";
}

void Recorder::write(std::ofstream& out, std::set<std::string>& gemms) const {
  for (size_t i = 0; i < used_; ++i) {
    const Range& r = ranges_[i];
    std::vector<std::vector<int64_t>> shapes;
    for (size_t d = static_cast<size_t>(r.shape_begin), t = 0;
         t < static_cast<size_t>(r.shape_count); ++t) {
      const auto rank = static_cast<size_t>(dims_[d++]);
      shapes.emplace_back(dims_.begin() + static_cast<std::ptrdiff_t>(d),
                          dims_.begin() + static_cast<std::ptrdiff_t>(d + rank));
      d += rank;
    }
    const std::string& name = names_[static_cast<size_t>(r.name)];
    if (!shapes.empty())
      if (auto key = gemm_key(name, shapes); !key.empty()) gemms.insert(key);
    out << nlohmann::json{{"k", "range"}, {"i", i},     {"p", r.parent}, {"n", name},
                          {"t0", r.t0},   {"t1", r.t1}, {"s", shapes}}
               .dump()
        << '\n';
  }
}

long minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

}  // namespace

std::vector<std::string> profile_to_file(const std::string& path,
                                         const std::function<void()>& steps) {
  std::ofstream out(path);
  if (!out) throw sb::WriteError(path, "cannot open for writing");
  Recorder recorder(/*capacity=*/size_t{1} << 21);  // 2M ranges, 64 MB; a step runs ~10k
  g_recorder = &recorder;
  const auto handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback(
          [](const at::RecordFunction& fn) -> std::unique_ptr<at::ObserverContext> {
            g_recorder->start(fn);
            return nullptr;
          },
          [](const at::RecordFunction&, at::ObserverContext*) { g_recorder->end(); })
          .needsInputs(true));
  const long faults_before = minor_faults();
  const auto start = clock_type::now();
  try {
    steps();
  } catch (...) {
    at::removeCallback(handle);
    g_recorder = nullptr;
    throw;
  }
  const double seconds = sb::seconds_since(start);
  const long faults = minor_faults() - faults_before;
  at::removeCallback(handle);
  g_recorder = nullptr;
  if (recorder.overflow() > 0)
    throw sb::OptionError::described("--profile-batches",
                                     "--profile-batches: more than " +
                                         std::to_string(recorder.used()) +
                                         " ranges recorded; expected fewer batches",
                                     "fewer batches");
  std::set<std::string> gemms;
  out << nlohmann::json{{"k", "meta"},
                        {"seconds", seconds},
                        {"minor_faults", faults},
                        {"ranges", recorder.used()},
                        {"other_thread_ranges", recorder.other_thread()}}
             .dump()
      << '\n';
  recorder.write(out, gemms);
  out.flush();
  if (!out) throw sb::WriteError(path, "write failed");
  return {gemms.begin(), gemms.end()};
}

void time_gemm_shapes(const std::string& path, const std::vector<std::string>& shapes,
                      double min_seconds) {
  std::ofstream out(path, std::ios::app);
  if (!out) throw sb::WriteError(path, "cannot open for appending");
  torch::NoGradGuard no_grad;
  for (const auto& key : shapes) {
    std::istringstream in(key);
    std::string op;
    int64_t m = 0, n = 0, k = 0, batch = 0;
    in >> op >> m >> n >> k >> batch;
    const auto a = torch::randn({batch, m, k}), b = torch::randn({batch, k, n});  // float32
    auto c = torch::empty({batch, m, n});
    auto a0 = a[0], b0 = b[0], c0 = c[0];
    auto run = [&] {
      if (batch == 1)
        torch::mm_out(c0, a0, b0);
      else
        torch::bmm_out(c, a, b);
    };
    run();  // warm-up: the first call pays for the output's pages and the library's buffers
    int64_t reps = 0;
    const auto start = clock_type::now();
    double seconds = 0;
    while (seconds < min_seconds) {
      run();
      ++reps;
      seconds = sb::seconds_since(start);
    }
    const double flops = 2.0 * static_cast<double>(batch * m * n * k);  // multiply + add
    out << nlohmann::json{{"k", "gemm"},
                          {"op", op},
                          {"m", m},
                          {"n", n},
                          {"k_dim", k},
                          {"batch", batch},
                          {"reps", reps},
                          {"seconds", seconds},
                          {"gflops", flops * static_cast<double>(reps) / seconds / 1e9}}
               .dump()
        << '\n';
  }
  out.flush();
  if (!out) throw sb::WriteError(path, "write failed");
}

}  // namespace sb::bench
