#pragma once
// What a run tells its user: fixed-format progress lines on stdout, a JSON-lines metrics file,
// and progress for long evaluations.

#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "common/duration.h"

namespace sb::runkit {

using sb::format_duration;  // common/duration.h

/// One JSON object per line, flushed after each; appended to on resume.
class MetricsLog {
 public:
  MetricsLog() = default;
  MetricsLog(const std::string& path, bool append);
  void write(const nlohmann::json& record);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ofstream out_;
};

struct TrainProgress {
  std::string phase;  // main | finetune
  int64_t epoch = 0, batch = 0, batches = 0;
  double lr = 0, ms_per_batch = 0, tokens_per_s = 0, loss = 0, eta_seconds = 0;
};
/// "| main  epoch   3 |  200/ 663 batches | lr 30.00 | ms/batch 85.2 | tok/s 16432 |
///  loss 5.123 | ppl 167.85 | ETA 45s"
std::string format_progress(const TrainProgress& p);
// The fields a metrics record keeps, each under its own name (eta_seconds is the line's only).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TrainProgress, phase, epoch, batch, batches, lr, ms_per_batch,
                                   tokens_per_s, loss)
/// metrics.jsonl's record of a progress line: {"event": "train", the fields above, "ppl":
/// exp(loss)}.
nlohmann::json train_record(const TrainProgress& p);

/// Called with (segments done, segments in all, tokens done); prints a line to stdout at most
/// every `every_seconds` (and never for evaluations shorter than that).
using ProgressFn = std::function<void(int64_t, int64_t, int64_t)>;
ProgressFn timed_progress(std::string label, double every_seconds = 15);

}  // namespace sb::runkit
