#include "trainers/classifier/trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/duration.h"
#include "contract/logprob_file.h"
#include "datasets/image_dataset.h"
#include "trainers/runkit/checkpoint.h"

namespace sb::classifier {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kShuffleSalt = 0x5a1f0000;  // + the epoch: one generator per epoch

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
  if (!o.mse) o.head = cfg.head.spec();
  o.output_init_std = cfg.output_init_std;
  return ConvNet(o);
}

ClassifierTrainer::ClassifierTrainer(ClassifierConfig config, Splits splits,
                                     std::vector<std::string> classes, std::string dataset,
                                     std::string run_dir)
    : ConfiguredTrainer(descriptor(), std::move(config), std::move(run_dir)),
      splits_(std::move(splits)),
      classes_(std::move(classes)),
      dataset_(std::move(dataset)) {
  model = make_conv_net(config_);
  // Nesterov momentum (Sutskever et al. 2013), as the paper's sec. 4.1.
  optimizer_ =
      std::make_unique<torch::optim::SGD>(model->parameters(), torch::optim::SGDOptions(config_.lr)
                                                                   .momentum(config_.momentum)
                                                                   .nesterov(config_.momentum > 0));
}

void ClassifierTrainer::set_lr(double lr) {
  for (auto& group : optimizer_->param_groups())
    static_cast<torch::optim::SGDOptions&>(group.options()).lr(lr);
}

void ClassifierTrainer::save_extra(runkit::CheckpointWriter& w) const {
  w.put("best_epoch", best_epoch_);
  w.put("best_valid_error", best_valid_error_);
  w.put("best_train_loss", best_train_loss_);
}

void ClassifierTrainer::load_extra(runkit::CheckpointReader& r) {
  best_epoch_ = r.get_int("best_epoch");
  best_valid_error_ = r.get_double("best_valid_error");
  best_train_loss_ = r.get_double("best_train_loss");
  set_lr(state_.lr);  // the run state is restored before this: the optimiser gets its lr back
}

ClassifierTrainer::EpochEnd ClassifierTrainer::train_epoch() {
  const int64_t n = splits_.train.size(), B = config_.batch_size;
  const int64_t batches = (n + B - 1) / B;
  // The epoch's order from its own generator: a resume mid-epoch draws the same permutation.
  const auto order = torch::randperm(
      n, seeded_generator(config_.seed, kShuffleSalt + static_cast<uint64_t>(state_.epoch)),
      torch::kLong);
  model->train();
  const auto start = std::chrono::steady_clock::now();
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
    if (!std::isfinite(value)) return non_finite(value);
    loss.backward();
    optimizer_->step();
    const int64_t b = y.size(0);
    const bool stop = count_batch(value, b);
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
      interval_start = std::chrono::steady_clock::now();
    }
    if (stop) return EpochEnd::interrupted;
  }
  return EpochEnd::completed;
}

double ClassifierTrainer::validate() {
  last_valid_ = evaluate(model, splits_.valid, config_.eval_batch_size);
  return last_valid_.loss;
}

void ClassifierTrainer::report_epoch(double train_loss, double valid_loss, double seconds) {
  const auto& valid = last_valid_;
  std::printf(
      "| end of epoch %3lld | time %s | train loss %7.4f | valid loss %7.4f | valid error %6.2f%% "
      "| lr %g\n",
      static_cast<long long>(state_.epoch), format_duration(seconds).c_str(), train_loss,
      valid_loss, valid.error_pct, state_.lr);
  write_epoch_record(train_loss, valid_loss, seconds,
                     {{"valid_error_pct", valid.error_pct},
                      {"valid_nll", number_or_null(valid.nll)},
                      {"lr", state_.lr}});
}

bool ClassifierTrainer::take_as_best(double valid_loss, double train_loss) {
  // Improvement = a lower validation error, ties broken by a lower validation loss.
  const bool better =
      last_valid_.error_pct < best_valid_error_ ||
      (last_valid_.error_pct == best_valid_error_ && valid_loss < state_.best_valid);
  if (better) {
    best_valid_error_ = last_valid_.error_pct;
    best_epoch_ = state_.epoch;
    best_train_loss_ = train_loss;
  }
  return better;
}

void ClassifierTrainer::on_worse_epoch() {
  // de Brebisson & Vincent 2016, footnote 3: halve the learning rate every time the performance
  // did not improve for 5 consecutive epochs.
  if (state_.bad_epochs % config_.patience != 0) return;
  state_.lr /= 2;
  set_lr(state_.lr);
  std::printf("  no improvement for %lld epochs: lr halved to %g\n",
              static_cast<long long>(state_.bad_epochs), state_.lr);
  metrics_.write({{"event", "lr_halved"}, {"epoch", state_.epoch}, {"lr", state_.lr}});
}

void ClassifierTrainer::after_epoch(double /*valid_loss*/) {
  const bool last = state_.epoch >= config_.epochs;
  if (!last && !(config_.early_stop > 0 && state_.bad_epochs >= config_.early_stop)) return;
  std::printf("  stopping: %s; best epoch %lld (valid error %.2f%%)\n",
              last ? "last epoch" : "early stopping", static_cast<long long>(best_epoch_),
              best_valid_error_);
  state_.stopped = true;
}

void ClassifierTrainer::finish() {
  runkit::load_weights(path("best.pt"), *model);
  const auto valid = evaluate(model, splits_.valid, config_.eval_batch_size);
  const bool dump = config_.dump_test && !is_mse(config_);
  std::unique_ptr<contract::LogProbWriter> writer;
  if (dump) {
    const auto h =
        test_dump_header({config_.head.spec(), config_.fc}, static_cast<int64_t>(classes_.size()),
                         splits_.test.size(), classes_, dataset_);
    writer = std::make_unique<contract::LogProbWriter>(path("logprobs.h5"), h);
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
      static_cast<long long>(best_epoch_), valid.error_pct, test.error_pct, test.loss,
      is_mse(config_) ? "- (mse: no probabilities)"
                      : (std::isfinite(test.nll) ? std::to_string(test.nll).c_str() : "inf"),
      dump ? (" | " + std::to_string(test.images) + " rows written to " + path("logprobs.h5"))
                 .c_str()
           : "");
  if (test.outside_support > 0)
    std::printf("  %lld test labels outside the head's support (log-probability -inf)\n",
                static_cast<long long>(test.outside_support));
  const nlohmann::json dump_ppl = dump ? number_or_null(ppl) : nlohmann::json(nullptr);
  runkit::FinalCommon common = final_common();
  common.dataset = dataset_;
  common.valid_loss = valid.loss;
  common.dump = dump ? path("logprobs.h5") : "";
  common.dump_rows = dump ? test.images : int64_t{0};
  if (dump) common.dump_ppl = ppl;
  const nlohmann::json section{
      {"split", config_.split},
      {"d", config_.fc},
      {"classes", static_cast<int64_t>(classes_.size())},
      {"train_images", splits_.train.size()},
      {"valid_images", splits_.valid.size()},
      {"test_images", splits_.test.size()},
      {"best_epoch", best_epoch_},
      {"epochs_run", state_.epoch - 1},
      {"final_lr", state_.lr},
      {"train_loss", best_train_loss_},
      {"valid_error_pct", valid.error_pct},
      {"test_error_pct", test.error_pct},
      {"test_loss", test.loss},
      {"test_nll", is_mse(config_) ? nlohmann::json(nullptr) : number_or_null(test.nll)},
      {"test_outside_support", test.outside_support},
      {"test_ppl", dump_ppl}};
  final_ = write_final(common, section);
}

int train(const ClassifierConfig& config, const runkit::TrainerRun& run) {
  const auto dir = data::find_image_dataset_dir(config.dataset, config.data);
  const auto data = data::load_image_dataset(config.dataset, dir);
  auto splits = make_splits(data, config);
  std::printf("%s: %s, %s split: %lld train / %lld valid / %lld test images; %s\n",
              config.dataset.c_str(), dir.c_str(), config.split.c_str(),
              static_cast<long long>(splits.train.size()),
              static_cast<long long>(splits.valid.size()),
              static_cast<long long>(splits.test.size()), run.line_end(config.head.text()).c_str());
  std::fflush(stdout);
  ClassifierTrainer trainer(config, std::move(splits), data.classes, data.name, run.run_dir);
  return runkit::run_trainer(trainer, run.flags);
}

int cli_main(int argc, char** argv) {
  return runkit::trainer_main(argc, argv, descriptor(), train);
}

}  // namespace sb::classifier
