#include "trainers/runkit/epoch_trainer.h"

#include <cmath>

#include <cstdio>
#include <filesystem>

#include "common/blas_core.h"
#include "common/duration.h"
#include "trainers/runkit/atomic_write.h"
#include "trainers/runkit/device.h"
#include "trainers/runkit/interrupt.h"

namespace sb::runkit {

namespace fs = std::filesystem;

namespace {

/// The version of final.json's layout (docs/design.md, "Run directory").
constexpr int64_t kFinalSchema = 2;

}  // namespace

EpochTrainer::EpochTrainer(std::string trainer, std::string run_dir)
    : trainer_(std::move(trainer)), run_dir_(std::move(run_dir)) {}

std::string EpochTrainer::path(const std::string& name) const {
  return (fs::path(run_dir_) / name).string();
}

nlohmann::ordered_json EpochTrainer::position() const {
  return {{"epoch", state_.epoch}, {"batch", state_.batch}};
}

std::string EpochTrainer::position_text() const {
  std::string text;
  const auto fields = position();  // a local: items() refers into it
  for (const auto& [key, value] : fields.items())
    text += (text.empty() ? "" : ", ") + key + " " +
            (value.is_string() ? value.get<std::string>() : value.dump());
  return text;
}

void EpochTrainer::add_position(nlohmann::json& record) const {
  const auto fields = position();
  for (const auto& [key, value] : fields.items()) record[key] = value;
}

std::string EpochTrainer::save_best() {
  const auto file = path("best.pt");
  save_weights(file, module());
  return file;
}

void EpochTrainer::save() {
  CheckpointWriter writer(trainer_, state_.config);
  writer.module(module());
  if (auto* opt = optimizer()) writer.optimizer(*opt);
  put_run_state(writer, state_);
  save_extra(writer);
  writer.save(path("checkpoint.pt"), device_of(module()));
  last_checkpoint_ = position_text();
}

void EpochTrainer::resume() {
  CheckpointReader reader(path("checkpoint.pt"), trainer_, device_of(module()));
  reader.check_config(state_.config,
                      [this](const std::string& saved) { return normalise_saved_config(saved); });
  reader.load_module(module());
  if (auto* opt = optimizer()) reader.load_optimizer(*opt);
  auto loaded = read_run_state(reader);
  loaded.config = state_.config;
  state_ = std::move(loaded);
  load_extra(reader);
  reader.restore_rng(device_of(module()));
  last_checkpoint_ = position_text();
  std::printf("resuming %s: %s\n", run_dir_.c_str(), position_text().c_str());
}

bool EpochTrainer::count_batch(double loss, int64_t tokens) {
  ++state_.batch;
  ++state_.step;
  ++batches_this_process_;
  state_.epoch_loss += loss * static_cast<double>(tokens);
  state_.epoch_tokens += tokens;
  if (stop_after_batches > 0 && batches_this_process_ >= stop_after_batches)
    stop_requested().store(true);
  return stop_requested().load();
}

EpochTrainer::EpochEnd EpochTrainer::non_finite(double loss) {
  // checkpoint.pt is not written from here on, so it stays the last good one: the one saved
  // before the loss went non-finite (at an epoch's end, a stage boundary or an interrupt).
  // Resuming it with the same settings would repeat the same steps, so the advice is a new run.
  const std::string where = last_checkpoint_.empty()
                                ? "No checkpoint was written before it in this run"
                                : "The last good checkpoint is " + path("checkpoint.pt") + " (" +
                                      last_checkpoint_ +
                                      "; resuming it with the same settings repeats this)";
  std::fflush(stdout);
  std::fprintf(stderr,
               "error: %s: training loss is %g at batch %lld; stopping. %s. Start a new run "
               "(another --out) with a lower lr or stronger clipping\n",
               position_text().c_str(), loss, static_cast<long long>(state_.batch + 1),
               where.c_str());
  nlohmann::json record{{"event", "non_finite"}};
  add_position(record);
  record["batch"] = state_.batch + 1;
  metrics_.write(record);
  return EpochEnd::non_finite;
}

// final.json's shared keys by their member names; dump_ppl, optional, is written below.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(FinalCommon, head, dataset, seed, best_model, valid_loss, dump,
                                   dump_rows)

void EpochTrainer::write_epoch_record(double train_loss, double valid_loss, double seconds,
                                      const nlohmann::json& own) {
  nlohmann::json record = {{"event", "valid"},
                           {"epoch", state_.epoch},
                           {"train_loss", train_loss},
                           {"valid_loss", valid_loss},
                           {"seconds", seconds}};
  if (own.is_object()) record.update(own);  // {} (no own fields) arrives as null
  metrics_.write(record);
}

nlohmann::json EpochTrainer::write_final(const FinalCommon& c, const nlohmann::json& section) {
  nlohmann::json common = c;
  const bool ppl = c.dump_ppl && std::isfinite(*c.dump_ppl);
  common["dump_ppl"] = ppl ? nlohmann::json(*c.dump_ppl) : nlohmann::json(nullptr);
  common["event"] = "final";
  common["schema"] = kFinalSchema;
  common["trainer"] = trainer_;
  common["steps"] = state_.step;
  const auto blas = blas::blas_info();  // which kernels produced these numbers (issue 5/5)
  common["blas"] = {{"library", blas.library}, {"core", blas.core}, {"threads", blas.threads}};
  common[trainer_] = section;
  metrics_.write(common);
  write_text_atomically(path("final.json"), common.dump(2) + '\n');
  return common;
}

void EpochTrainer::end_epoch(double valid_loss, double seconds) {
  const double train_loss =
      state_.epoch_loss / static_cast<double>(std::max<int64_t>(1, state_.epoch_tokens));
  report_epoch(train_loss, valid_loss, seconds);
  if (take_as_best(valid_loss, train_loss)) {
    state_.best_valid = valid_loss;
    state_.bad_epochs = 0;
    const auto best = save_best();
    std::printf("  saved the best model so far to %s\n", best.c_str());
  } else {
    ++state_.bad_epochs;
    on_worse_epoch();
  }
  after_epoch(valid_loss);
  ++state_.epoch;
  state_.batch = 0;
  state_.epoch_loss = 0;
  state_.epoch_tokens = 0;
}

int EpochTrainer::run() {
  stop_requested().store(false);
  fs::create_directories(run_dir_);  // here, not earlier: a trainer refused in its constructor
                                     // (a split too short, a head that does not fit) writes nothing
  const bool resumed = state_.step > 0 && fs::exists(path("metrics.jsonl"));
  metrics_ = MetricsLog(path("metrics.jsonl"), /*append=*/resumed);
  write_text_atomically(path("config.toml"), config_toml());
  int64_t params = 0;
  for (const auto& p : module().parameters()) params += p.numel();
  nlohmann::json start{{"event", resumed ? "resume" : "start"}};
  add_position(start);
  start["params"] = params;
  metrics_.write(start);
  while (true) {
    const Next next = before_epoch();
    if (next == Next::stop_here) {
      save();
      return kFinished;
    }
    if (next == Next::done) break;
    const auto begin = std::chrono::steady_clock::now();
    const auto end = train_epoch();
    if (end == EpochEnd::non_finite) return kNonFinite;
    if (end == EpochEnd::interrupted) {
      save();
      std::printf("interrupted: saved %s at %s; continue with --resume\n",
                  path("checkpoint.pt").c_str(), position_text().c_str());
      nlohmann::json record{{"event", "interrupted"}};
      add_position(record);
      metrics_.write(record);
      return kInterrupted;
    }
    const double valid_loss = validate();
    const double seconds = seconds_since(begin);
    after_validate();
    end_epoch(valid_loss, seconds);
    save();
  }
  save();
  finish();
  return kFinished;
}

IntervalMeter::IntervalMeter(int64_t first_batch)
    : first_batch_(first_batch), epoch_start_(clock_type::now()), interval_start_(epoch_start_) {}

void IntervalMeter::add(double loss, int64_t tokens) {
  loss_ += loss;
  ++batches_;
  tokens_ += tokens;
}

TrainProgress IntervalMeter::take(const std::string& phase, int64_t epoch, int64_t epochs,
                                  int64_t batch, int64_t batches, double lr) {
  const double elapsed = seconds_since(interval_start_);
  const double per_batch =
      seconds_since(epoch_start_) / static_cast<double>(std::max<int64_t>(1, batch - first_batch_));
  // This epoch's rest and the epochs after it at this speed (validation not counted).
  const double eta = per_batch * static_cast<double>(batches - batch) +
                     per_batch * static_cast<double>(batches) * static_cast<double>(epochs - epoch);
  const int64_t n = std::max<int64_t>(1, batches_);
  TrainProgress p{phase,
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
