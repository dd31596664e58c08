#include "trainers/runkit/metrics_log.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include "common/errors.h"

namespace sb::runkit {

MetricsLog::MetricsLog(const std::string& path, bool append)
    : path_(path), out_(path, append ? std::ios::app : std::ios::trunc) {
  if (!out_) throw WriteError(path, path + ": cannot open the metrics log for writing");
}

void MetricsLog::write(const nlohmann::json& record) {
  if (!out_.is_open()) return;
  out_ << record.dump() << '\n';
  out_.flush();
}

std::string format_progress(const TrainProgress& p) {
  char buf[256];
  std::snprintf(
      buf, sizeof buf,
      "| %-8s epoch %3lld | %5lld/%5lld batches | lr %6.2f | ms/batch %7.1f | tok/s %6.0f "
      "| loss %6.3f | ppl %9.2f | ETA %s",
      p.phase.c_str(), static_cast<long long>(p.epoch), static_cast<long long>(p.batch),
      static_cast<long long>(p.batches), p.lr, p.ms_per_batch, p.tokens_per_s, p.loss,
      std::exp(p.loss), format_duration(p.eta_seconds).c_str());
  return buf;
}

nlohmann::json train_record(const TrainProgress& p) {
  nlohmann::json record = p;
  record["event"] = "train";
  record["ppl"] = std::exp(p.loss);
  return record;
}

ProgressFn timed_progress(std::string label, double every_seconds) {
  using clock = std::chrono::steady_clock;
  auto start = std::make_shared<clock::time_point>(clock::now());
  auto last = std::make_shared<clock::time_point>(*start);
  return [=](int64_t done, int64_t total, int64_t tokens) {
    const auto now = clock::now();
    if (std::chrono::duration<double>(now - *last).count() < every_seconds || done >= total) return;
    *last = now;
    const double elapsed = std::chrono::duration<double>(now - *start).count();
    const double eta = elapsed / static_cast<double>(done) * static_cast<double>(total - done);
    std::printf("  %s %3.0f%% (%lld/%lld segments, %.0f tok/s, ETA %s)\n", label.c_str(),
                100.0 * static_cast<double>(done) / static_cast<double>(total),
                static_cast<long long>(done), static_cast<long long>(total),
                static_cast<double>(tokens) / elapsed, format_duration(eta).c_str());
    std::fflush(stdout);
  };
}

}  // namespace sb::runkit
