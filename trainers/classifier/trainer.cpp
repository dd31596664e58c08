#include "trainers/classifier/trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/logprob_file.h"
#include "common/duration.h"
#include "trainers/lm/checkpoint.h"
#include "trainers/lm/trainer.h"  // stop_requested(): the Ctrl-C / SIGTERM flag

namespace sb::classifier {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr uint64_t kShuffleSalt = 0x5a1f0000;  // + the epoch: one generator per epoch

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

c10::IValue read(torch::serialize::InputArchive& a, const std::string& path,
                 const std::string& key) {
  c10::IValue v;
  if (!a.try_read(key, v))
    throw std::runtime_error(path + ": checkpoint field '" + key + "' is missing");
  return v;
}

nlohmann::json number_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

}  // namespace

ConvNet make_conv_net(const ClassifierConfig& cfg) {
  ConvNetOptions o;
  o.conv1 = cfg.conv1;
  o.conv2 = cfg.conv2;
  o.fc = cfg.fc;
  o.mse = is_mse(cfg);
  if (!o.mse) o.head = HeadSpec::parse(cfg.head);
  o.output_init_std = cfg.output_init_std;
  return ConvNet(o);
}

ClassifierTrainer::ClassifierTrainer(ClassifierConfig config, Splits splits,
                                     std::vector<std::string> classes, std::string dataset,
                                     std::string run_dir)
    : config_(std::move(config)),
      splits_(std::move(splits)),
      classes_(std::move(classes)),
      dataset_(std::move(dataset)),
      run_dir_(std::move(run_dir)) {
  fs::create_directories(run_dir_);
  torch::manual_seed(static_cast<uint64_t>(config_.seed));  // the initial weights
  model = make_conv_net(config_);
  // Nesterov momentum (Sutskever et al. 2013), as the paper's sec. 4.1.
  optimizer_ =
      std::make_unique<torch::optim::SGD>(model->parameters(), torch::optim::SGDOptions(config_.lr)
                                                                   .momentum(config_.momentum)
                                                                   .nesterov(config_.momentum > 0));
  state_.lr = config_.lr;
  state_.config = trajectory_toml(config_);
}

std::string ClassifierTrainer::path(const std::string& name) const {
  return (fs::path(run_dir_) / name).string();
}

void ClassifierTrainer::save() {
  torch::serialize::OutputArchive archive, model_archive, optim_archive;
  lm::save_module_on_cpu(*model, model_archive);
  archive.write("model", model_archive);
  optimizer_->save(optim_archive);
  archive.write("optimizer", optim_archive);
  const auto& s = state_;
  archive.write("epoch", c10::IValue(s.epoch));
  archive.write("batch", c10::IValue(s.batch));
  archive.write("step", c10::IValue(s.step));
  archive.write("lr", c10::IValue(s.lr));
  archive.write("bad_epochs", c10::IValue(s.bad_epochs));
  archive.write("best_epoch", c10::IValue(s.best_epoch));
  archive.write("best_valid_error", c10::IValue(s.best_valid_error));
  archive.write("best_valid_loss", c10::IValue(s.best_valid_loss));
  archive.write("best_train_loss", c10::IValue(s.best_train_loss));
  archive.write("done", c10::IValue(s.done));
  archive.write("epoch_loss", c10::IValue(s.epoch_loss));
  archive.write("epoch_images", c10::IValue(s.epoch_images));
  archive.write("config", c10::IValue(s.config));
  lm::write_atomically(path("checkpoint.pt"),
                       [&](const std::string& tmp) { archive.save_to(tmp); });
}

void ClassifierTrainer::resume() {
  const auto file = path("checkpoint.pt");
  if (!fs::exists(file)) throw std::runtime_error(file + ": no checkpoint to resume from");
  torch::serialize::InputArchive archive, model_archive, optim_archive;
  archive.load_from(file);
  const auto saved = trajectory_toml(
      load_config_text(read(archive, file, "config").toStringRef(), file + " config"));
  if (saved != state_.config)
    throw std::runtime_error(file + ": written with a different config (" +
                             runkit::config_difference(saved, state_.config) +
                             "); resume with the same settings or use a new --out");
  if (!archive.try_read("model", model_archive) || !archive.try_read("optimizer", optim_archive))
    throw std::runtime_error(file + ": checkpoint field 'model' or 'optimizer' is missing");
  try {
    model->load(model_archive);
    optimizer_->load(optim_archive);
  } catch (const c10::Error& e) {
    throw std::runtime_error(file + ": does not match this model: " + e.what_without_backtrace());
  }
  auto& s = state_;
  s.epoch = read(archive, file, "epoch").toInt();
  s.batch = read(archive, file, "batch").toInt();
  s.step = read(archive, file, "step").toInt();
  s.lr = read(archive, file, "lr").toDouble();
  s.bad_epochs = read(archive, file, "bad_epochs").toInt();
  s.best_epoch = read(archive, file, "best_epoch").toInt();
  s.best_valid_error = read(archive, file, "best_valid_error").toDouble();
  s.best_valid_loss = read(archive, file, "best_valid_loss").toDouble();
  s.best_train_loss = read(archive, file, "best_train_loss").toDouble();
  s.done = read(archive, file, "done").toBool();
  s.epoch_loss = read(archive, file, "epoch_loss").toDouble();
  s.epoch_images = read(archive, file, "epoch_images").toInt();
  for (auto& group : optimizer_->param_groups())
    static_cast<torch::optim::SGDOptions&>(group.options()).lr(s.lr);
  std::printf("resuming %s: epoch %lld, batch %lld, lr %g\n", run_dir_.c_str(),
              static_cast<long long>(s.epoch), static_cast<long long>(s.batch), s.lr);
}

ClassifierTrainer::EpochEnd ClassifierTrainer::train_epoch() {
  const int64_t n = splits_.train.size(), B = config_.batch_size;
  const int64_t batches = (n + B - 1) / B;
  // The epoch's order from its own generator: a resume mid-epoch draws the same permutation.
  const auto order = torch::randperm(
      n, seeded_generator(config_.seed, kShuffleSalt + static_cast<uint64_t>(state_.epoch)),
      torch::kLong);
  model->train();
  const auto start = clock_type::now();
  auto interval_start = start;
  const int64_t first = state_.batch;
  double interval_loss = 0;
  int64_t interval_batches = 0, interval_images = 0;
  while (state_.batch < batches) {
    const auto idx = order.slice(/*dim=*/0, state_.batch * B, std::min(n, (state_.batch + 1) * B));
    const auto x = splits_.train.images.index_select(/*dim=*/0, idx);  // (b, 1, 28, 28)
    const auto y = splits_.train.labels.index_select(/*dim=*/0, idx);  // (b,)
    optimizer_->zero_grad();
    const auto loss = model->loss(model->hidden(x), y);
    const double value = loss.item<double>();
    if (!std::isfinite(value)) {
      std::fprintf(stderr,
                   "error: epoch %lld batch %lld: training loss is %g; stopping. The last good "
                   "checkpoint is %s (lower the lr)\n",
                   static_cast<long long>(state_.epoch), static_cast<long long>(state_.batch + 1),
                   value, path("checkpoint.pt").c_str());
      metrics_.write(
          {{"event", "non_finite"}, {"epoch", state_.epoch}, {"batch", state_.batch + 1}});
      return EpochEnd::non_finite;
    }
    loss.backward();
    optimizer_->step();
    const int64_t b = y.size(0);
    ++state_.batch;
    ++state_.step;
    ++batches_this_process_;
    state_.epoch_loss += value * static_cast<double>(b);
    state_.epoch_images += b;
    interval_loss += value;
    ++interval_batches;
    interval_images += b;
    if (state_.batch % config_.log_interval == 0) {
      const double elapsed = seconds_since(interval_start);
      const double per_batch = seconds_since(start) / static_cast<double>(state_.batch - first);
      const double eta = per_batch * static_cast<double>(batches - state_.batch);
      // At most: this epoch's rest and the epochs left at this speed (validation not counted;
      // early stopping may end sooner).
      const double eta_run =
          eta + per_batch * static_cast<double>(batches * (config_.epochs - state_.epoch));
      const double mean = interval_loss / static_cast<double>(interval_batches);
      std::printf(
          "| epoch %3lld | %5lld/%5lld batches | lr %8.5f | ms/batch %7.1f | img/s %6.0f | loss "
          "%7.4f | ETA epoch %s, run <= %s\n",
          static_cast<long long>(state_.epoch), static_cast<long long>(state_.batch),
          static_cast<long long>(batches), state_.lr,
          1000 * elapsed / static_cast<double>(interval_batches),
          static_cast<double>(interval_images) / elapsed, mean, format_duration(eta).c_str(),
          format_duration(eta_run).c_str());
      std::fflush(stdout);
      metrics_.write({{"event", "train"},
                      {"epoch", state_.epoch},
                      {"batch", state_.batch},
                      {"batches", batches},
                      {"lr", state_.lr},
                      {"images_per_s", static_cast<double>(interval_images) / elapsed},
                      {"loss", mean},
                      {"eta_epoch_s", eta},
                      {"eta_run_max_s", eta_run}});
      interval_loss = 0;
      interval_batches = interval_images = 0;
      interval_start = clock_type::now();
    }
    if (stop_after_batches > 0 && batches_this_process_ >= stop_after_batches)
      lm::stop_requested().store(true);
    if (lm::stop_requested().load()) return EpochEnd::interrupted;
  }
  return EpochEnd::completed;
}

void ClassifierTrainer::end_epoch(const Evaluation& valid, double seconds) {
  auto& s = state_;
  const double train_loss =
      s.epoch_loss / static_cast<double>(std::max<int64_t>(1, s.epoch_images));
  std::printf(
      "| end of epoch %3lld | time %s | train loss %7.4f | valid loss %7.4f | valid error %6.2f%% "
      "| lr %g\n",
      static_cast<long long>(s.epoch), format_duration(seconds).c_str(), train_loss, valid.loss,
      valid.error_pct, s.lr);
  metrics_.write({{"event", "valid"},
                  {"epoch", s.epoch},
                  {"train_loss", train_loss},
                  {"valid_loss", valid.loss},
                  {"valid_error_pct", valid.error_pct},
                  {"valid_nll", number_or_null(valid.nll)},
                  {"lr", s.lr},
                  {"seconds", seconds}});
  // Improvement = a lower validation error, ties broken by a lower validation loss.
  const bool better = valid.error_pct < s.best_valid_error ||
                      (valid.error_pct == s.best_valid_error && valid.loss < s.best_valid_loss);
  if (better) {
    s.best_valid_error = valid.error_pct;
    s.best_valid_loss = valid.loss;
    s.best_epoch = s.epoch;
    s.best_train_loss = train_loss;
    s.bad_epochs = 0;
    torch::serialize::OutputArchive archive;
    lm::save_module_on_cpu(*model, archive);
    lm::write_atomically(path("best.pt"), [&](const std::string& tmp) { archive.save_to(tmp); });
    std::printf("  saved the best model so far to %s\n", path("best.pt").c_str());
  } else {
    ++s.bad_epochs;
    // de Brebisson & Vincent 2016, footnote 3: halve the learning rate every time the
    // performance did not improve for 5 consecutive epochs.
    if (s.bad_epochs % config_.patience == 0) {
      s.lr /= 2;
      for (auto& group : optimizer_->param_groups())
        static_cast<torch::optim::SGDOptions&>(group.options()).lr(s.lr);
      std::printf("  no improvement for %lld epochs: lr halved to %g\n",
                  static_cast<long long>(s.bad_epochs), s.lr);
      metrics_.write({{"event", "lr_halved"}, {"epoch", s.epoch}, {"lr", s.lr}});
    }
  }
  if ((config_.early_stop > 0 && s.bad_epochs >= config_.early_stop) || s.epoch >= config_.epochs) {
    s.done = true;
    std::printf("  stopping: %s; best epoch %lld (valid error %.2f%%)\n",
                s.epoch >= config_.epochs ? "last epoch" : "early stopping",
                static_cast<long long>(s.best_epoch), s.best_valid_error);
  }
  ++s.epoch;
  s.batch = 0;
  s.epoch_loss = 0;
  s.epoch_images = 0;
}

void ClassifierTrainer::finish() {
  torch::serialize::InputArchive archive;
  archive.load_from(path("best.pt"));
  model->load(archive);
  const auto valid = evaluate(model, splits_.valid, config_.eval_batch_size);
  const bool dump = config_.dump_test && !is_mse(config_);
  std::unique_ptr<analysis::LogProbWriter> writer;
  if (dump) {
    analysis::LogProbHeader h;
    h.head = HeadSpec::parse(config_.head).name();
    h.d = config_.fc;
    h.bias = true;
    h.vocab_size = static_cast<int64_t>(classes_.size());
    h.num_tokens = splits_.test.size();
    h.dataset = dataset_;
    h.split = "test";
    h.seed = config_.seed;
    h.compute_dtype = "float32";
    h.config = to_toml(config_);
    h.vocab = classes_;
    writer = std::make_unique<analysis::LogProbWriter>(path("logprobs.h5"), h);
  }
  const auto test =
      evaluate(model, splits_.test, config_.eval_batch_size,
               [&](const torch::Tensor& log_p, const torch::Tensor& labels) {
                 if (!writer) return;
                 const auto rows = log_p.to(torch::kFloat).contiguous();  // (n, M)
                 const auto t = labels.contiguous();                      // (n,)
                 writer->write_rows(rows.data_ptr<float>(), t.data_ptr<int64_t>(), rows.size(0));
               });
  double ppl = 0;
  if (writer) ppl = writer->finish();
  std::printf(
      "| best epoch %lld | valid error %.2f%% | test error %.2f%% | test loss %.4f | test nll "
      "%s%s\n",
      static_cast<long long>(state_.best_epoch), valid.error_pct, test.error_pct, test.loss,
      is_mse(config_) ? "- (mse: no probabilities)"
                      : (std::isfinite(test.nll) ? std::to_string(test.nll).c_str() : "inf"),
      dump ? (" | " + std::to_string(test.images) + " rows written to " + path("logprobs.h5"))
                 .c_str()
           : "");
  if (test.outside_support > 0)
    std::printf("  %lld test labels outside the head's support (log-probability -inf)\n",
                static_cast<long long>(test.outside_support));
  final_ = {{"event", "final"},
            {"head", config_.head},
            {"dataset", dataset_},
            {"split", config_.split},
            {"seed", config_.seed},
            {"d", config_.fc},
            {"classes", static_cast<int64_t>(classes_.size())},
            {"train_images", splits_.train.size()},
            {"valid_images", splits_.valid.size()},
            {"test_images", splits_.test.size()},
            {"best_epoch", state_.best_epoch},
            {"epochs_run", state_.epoch - 1},
            {"steps", state_.step},
            {"final_lr", state_.lr},
            {"train_loss", state_.best_train_loss},
            {"valid_error_pct", valid.error_pct},
            {"valid_loss", valid.loss},
            {"test_error_pct", test.error_pct},
            {"test_loss", test.loss},
            {"test_nll", is_mse(config_) ? nlohmann::json(nullptr) : number_or_null(test.nll)},
            {"test_outside_support", test.outside_support},
            {"test_ppl", dump ? number_or_null(ppl) : nlohmann::json(nullptr)},
            {"dump", dump ? path("logprobs.h5") : ""}};
  metrics_.write(final_);
  lm::write_atomically(path("final.json"), [&](const std::string& tmp) {
    std::ofstream(tmp) << final_.dump(2) << '\n';
  });
}

int ClassifierTrainer::run() {
  lm::stop_requested().store(false);
  const bool resumed = fs::exists(path("metrics.jsonl")) && state_.step > 0;
  metrics_ = lm::MetricsLog(path("metrics.jsonl"), /*append=*/resumed);
  lm::write_atomically(path("config.toml"),
                       [&](const std::string& tmp) { std::ofstream(tmp) << to_toml(config_); });
  int64_t params = 0;
  for (const auto& p : model->parameters()) params += p.numel();
  metrics_.write({{"event", resumed ? "resume" : "start"},
                  {"epoch", state_.epoch},
                  {"batch", state_.batch},
                  {"params", params}});
  while (!state_.done) {
    const auto start = clock_type::now();
    const auto end = train_epoch();
    if (end == EpochEnd::non_finite) return kNonFinite;
    if (end == EpochEnd::interrupted) {
      save();
      std::printf("interrupted: saved %s at epoch %lld batch %lld; continue with --resume\n",
                  path("checkpoint.pt").c_str(), static_cast<long long>(state_.epoch),
                  static_cast<long long>(state_.batch));
      metrics_.write({{"event", "interrupted"}, {"epoch", state_.epoch}, {"batch", state_.batch}});
      return kInterrupted;
    }
    const auto valid = evaluate(model, splits_.valid, config_.eval_batch_size);
    end_epoch(valid, seconds_since(start));
    save();
  }
  finish();
  return kFinished;
}

}  // namespace sb::classifier
