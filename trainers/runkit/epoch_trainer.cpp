#include "trainers/runkit/epoch_trainer.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "trainers/lm/checkpoint.h"
#include "trainers/lm/trainer.h"
#include "trainers/runkit/config_table.h"

namespace sb::runkit {

namespace fs = std::filesystem;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

EpochTrainer::EpochTrainer(std::string run_dir) : run_dir_(std::move(run_dir)) {
  fs::create_directories(run_dir_);
}

std::string EpochTrainer::path(const std::string& name) const {
  return (fs::path(run_dir_) / name).string();
}

void EpochTrainer::save() {
  save_run_checkpoint(path("checkpoint.pt"), module(), optimizer(), state_);
}

void EpochTrainer::resume() {
  auto loaded = load_run_checkpoint(path("checkpoint.pt"), module(), optimizer());
  if (loaded.config != state_.config)
    throw std::runtime_error(path("checkpoint.pt") + ": written with a different config (" +
                             config_difference(loaded.config, state_.config) +
                             "); resume with the same settings or use a new --out");
  state_ = std::move(loaded);
  std::printf("resuming %s: epoch %lld, batch %lld\n", run_dir_.c_str(),
              static_cast<long long>(state_.epoch), static_cast<long long>(state_.batch));
}

bool EpochTrainer::count_batch(double loss, int64_t tokens) {
  ++state_.batch;
  ++state_.step;
  ++batches_this_process_;
  state_.epoch_loss += loss * static_cast<double>(tokens);
  state_.epoch_tokens += tokens;
  if (stop_after_batches > 0 && batches_this_process_ >= stop_after_batches)
    lm::stop_requested().store(true);
  return lm::stop_requested().load();
}

EpochTrainer::EpochEnd EpochTrainer::non_finite(double loss) {
  std::fprintf(stderr,
               "error: epoch %lld batch %lld: training loss is %g; stopping. The last good "
               "checkpoint is %s (resume with a lower lr or clip)\n",
               static_cast<long long>(state_.epoch), static_cast<long long>(state_.batch + 1), loss,
               path("checkpoint.pt").c_str());
  metrics_.write({{"event", "non_finite"}, {"epoch", state_.epoch}, {"batch", state_.batch + 1}});
  return EpochEnd::non_finite;
}

void EpochTrainer::write_final(const nlohmann::json& final) {
  metrics_.write(final);
  lm::write_atomically(path("final.json"), [&](const std::string& tmp) {
    std::ofstream(tmp) << final.dump(2) << '\n';
  });
}

void EpochTrainer::end_epoch(double valid_loss, double seconds) {
  const double train_loss =
      state_.epoch_loss / static_cast<double>(std::max<int64_t>(1, state_.epoch_tokens));
  report_epoch(train_loss, valid_loss, seconds);
  if (valid_loss < state_.best_valid) {
    state_.best_valid = valid_loss;
    state_.bad_epochs = 0;
    save_weights(path("best.pt"), module());
    std::printf("  saved the best model so far to %s\n", path("best.pt").c_str());
  } else {
    ++state_.bad_epochs;
    on_worse_epoch();
  }
  ++state_.epoch;
  state_.batch = 0;
  state_.epoch_loss = 0;
  state_.epoch_tokens = 0;
}

int EpochTrainer::run() {
  lm::stop_requested().store(false);
  const bool resumed = state_.step > 0 && fs::exists(path("metrics.jsonl"));
  metrics_ = lm::MetricsLog(path("metrics.jsonl"), /*append=*/resumed);
  const auto toml = config_toml();
  lm::write_atomically(path("config.toml"),
                       [&](const std::string& tmp) { std::ofstream(tmp) << toml; });
  int64_t params = 0;
  for (const auto& p : module().parameters()) params += p.numel();
  metrics_.write({{"event", resumed ? "resume" : "start"},
                  {"epoch", state_.epoch},
                  {"batch", state_.batch},
                  {"params", params}});
  while (state_.epoch <= epochs()) {
    const auto start = std::chrono::steady_clock::now();
    const auto end = train_epoch();
    if (end == EpochEnd::non_finite) return lm::kNonFinite;
    if (end == EpochEnd::interrupted) {
      save();
      std::printf("interrupted: saved %s at epoch %lld batch %lld; continue with --resume\n",
                  path("checkpoint.pt").c_str(), static_cast<long long>(state_.epoch),
                  static_cast<long long>(state_.batch));
      metrics_.write({{"event", "interrupted"}, {"epoch", state_.epoch}, {"batch", state_.batch}});
      return lm::kInterrupted;
    }
    end_epoch(validate(), seconds_since(start));
    save();
  }
  finish();
  return lm::kFinished;
}

IntervalMeter::IntervalMeter(int64_t first_batch)
    : first_batch_(first_batch), epoch_start_(clock_type::now()), interval_start_(epoch_start_) {}

void IntervalMeter::add(double loss, int64_t tokens) {
  loss_ += loss;
  ++batches_;
  tokens_ += tokens;
}

lm::TrainProgress IntervalMeter::take(const std::string& phase, int64_t epoch, int64_t epochs,
                                      int64_t batch, int64_t batches, double lr) {
  const double elapsed = seconds_since(interval_start_);
  const double per_batch =
      seconds_since(epoch_start_) / static_cast<double>(std::max<int64_t>(1, batch - first_batch_));
  // This epoch's rest and the epochs after it at this speed (validation not counted).
  const double eta = per_batch * static_cast<double>(batches - batch) +
                     per_batch * static_cast<double>(batches) * static_cast<double>(epochs - epoch);
  const int64_t n = std::max<int64_t>(1, batches_);
  lm::TrainProgress p{phase,
                      epoch,
                      batch,
                      batches,
                      lr,
                      1000 * elapsed / static_cast<double>(n),
                      static_cast<double>(tokens_) / elapsed,
                      loss_ / static_cast<double>(n),
                      eta};
  loss_ = 0;
  batches_ = tokens_ = 0;
  interval_start_ = clock_type::now();
  return p;
}

}  // namespace sb::runkit
