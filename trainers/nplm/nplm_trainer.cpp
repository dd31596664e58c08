#include "trainers/nplm/nplm_trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "trainers/lm/checkpoint.h"
#include "trainers/lm/log_prob_rows.h"
#include "trainers/lm/trainer.h"
#include "trainers/nplm/unigram.h"

namespace sb::nplm {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

namespace {

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

/// The permutation of the training rows in `epoch`: a generator of its own, seeded by (seed,
/// epoch), so a resumed epoch replays the same order without saving it.
torch::Tensor epoch_order(int64_t rows, int64_t seed, int64_t epoch) {
  auto gen = at::detail::createCPUGenerator(static_cast<uint64_t>(seed) * 1000003ULL +
                                            static_cast<uint64_t>(epoch));
  return torch::randperm(rows, gen, torch::kLong);  // (rows)
}

}  // namespace

double mean_nll(Nplm& model, const Contexts& data, int64_t batch, const lm::ProgressFn& progress) {
  torch::NoGradGuard no_grad;
  model->eval();
  const int64_t T = data.targets.size(0);
  const int64_t batches = (T + batch - 1) / batch;
  double total = 0;
  for (int64_t b = 0; b < batches; ++b) {
    const int64_t begin = b * batch, end = std::min(T, begin + batch);
    const auto x = data.inputs.slice(/*dim=*/0, begin, end);  // (n_b, n)
    const auto y = data.targets.slice(/*dim=*/0, begin, end);
    total += model->loss(x, y).item<double>() * static_cast<double>(end - begin);
    if (progress) progress(b + 1, batches, end);
  }
  return total / static_cast<double>(T);
}

NplmTrainer::NplmTrainer(NplmConfig config, data::Corpus corpus, std::string run_dir)
    : config_(std::move(config)), corpus_(std::move(corpus)), run_dir_(std::move(run_dir)) {
  fs::create_directories(run_dir_);
  const int64_t eos = corpus_.vocab.find(data::kEos);
  if (eos < 0) throw std::invalid_argument("the vocabulary has no " + std::string(data::kEos));
  if (static_cast<int64_t>(corpus_.train.size()) < config_.batch_size)
    throw std::invalid_argument("train: " + std::to_string(corpus_.train.size()) +
                                " training tokens, fewer than batch_size " +
                                std::to_string(config_.batch_size));
  train_ = make_contexts(corpus_.train, config_.context, eos);
  valid_ = make_contexts(corpus_.valid, config_.context, eos);
  test_ = make_contexts(corpus_.test, config_.context, eos);
  torch::manual_seed(static_cast<uint64_t>(config_.seed));
  model = Nplm(NplmOptions(corpus_.vocab.size(), HeadSpec::parse(config_.head))
                   .context(config_.context)
                   .emsize(config_.emsize)
                   .layers(config_.layers)
                   .hidden(config_.hidden),
               unigram(corpus_.train, corpus_.vocab.size()));
  optimizer_ = std::make_unique<torch::optim::SGD>(model->parameters(),
                                                   torch::optim::SGDOptions(config_.lr));
  state_.lr = config_.lr;
  state_.config = trajectory_toml(config_);
}

std::string NplmTrainer::path(const std::string& name) const {
  return (fs::path(run_dir_) / name).string();
}

void NplmTrainer::save() {
  runkit::save_run_checkpoint(path("checkpoint.pt"), *model, *optimizer_, state_);
}

void NplmTrainer::resume() {
  auto loaded = runkit::load_run_checkpoint(path("checkpoint.pt"), *model, *optimizer_);
  if (loaded.config != state_.config)
    throw std::runtime_error(path("checkpoint.pt") + ": written with a different config (" +
                             runkit::config_difference(loaded.config, state_.config) +
                             "); resume with the same settings or use a new --out");
  state_ = std::move(loaded);
  std::printf("resuming %s: epoch %lld, batch %lld\n", run_dir_.c_str(),
              static_cast<long long>(state_.epoch), static_cast<long long>(state_.batch));
}

NplmTrainer::EpochEnd NplmTrainer::train_epoch() {
  const int64_t T = train_.targets.size(0), B = config_.batch_size;
  const int64_t full = (T + B - 1) / B;
  const int64_t batches = config_.max_batches > 0 ? std::min(full, config_.max_batches) : full;
  const auto order = epoch_order(T, config_.seed, state_.epoch);  // (T)
  for (auto& group : optimizer_->param_groups()) group.options().set_lr(state_.lr);
  model->train();
  double interval_loss = 0;
  int64_t interval_batches = 0, interval_tokens = 0;
  auto interval_start = clock_type::now(), epoch_start = clock_type::now();
  const int64_t first_batch = state_.batch;
  while (state_.batch < batches) {
    const int64_t begin = state_.batch * B, end = std::min(T, begin + B);
    const auto rows = order.slice(/*dim=*/0, begin, end);
    const auto x = train_.inputs.index_select(/*dim=*/0, rows);   // (B, n)
    const auto y = train_.targets.index_select(/*dim=*/0, rows);  // (B)
    optimizer_->zero_grad();
    const auto loss = model->loss(x, y);
    const double value = loss.item<double>();
    if (!std::isfinite(value)) {
      std::fprintf(stderr,
                   "error: epoch %lld batch %lld: training loss is %g; stopping. The last good "
                   "checkpoint is %s (resume with a lower lr or clip)\n",
                   static_cast<long long>(state_.epoch), static_cast<long long>(state_.batch + 1),
                   value, path("checkpoint.pt").c_str());
      metrics_.write(
          {{"event", "non_finite"}, {"epoch", state_.epoch}, {"batch", state_.batch + 1}});
      return EpochEnd::non_finite;
    }
    loss.backward();
    if (config_.clip > 0) torch::nn::utils::clip_grad_norm_(model->parameters(), config_.clip);
    optimizer_->step();
    ++state_.batch;
    ++state_.step;
    ++batches_this_process_;
    state_.epoch_loss += value * static_cast<double>(end - begin);
    state_.epoch_tokens += end - begin;
    interval_loss += value;
    ++interval_batches;
    interval_tokens += end - begin;
    if (state_.batch % config_.log_interval == 0) {
      const double elapsed = seconds_since(interval_start);
      const double per_batch =
          seconds_since(epoch_start) / static_cast<double>(state_.batch - first_batch);
      lm::TrainProgress p{"nplm",
                          state_.epoch,
                          state_.batch,
                          batches,
                          state_.lr,
                          1000 * elapsed / static_cast<double>(interval_batches),
                          static_cast<double>(interval_tokens) / elapsed,
                          interval_loss / static_cast<double>(interval_batches),
                          per_batch * static_cast<double>(batches - state_.batch) +
                              per_batch * static_cast<double>(batches) *
                                  static_cast<double>(config_.epochs - state_.epoch)};
      std::printf("%s\n", lm::format_progress(p).c_str());
      std::fflush(stdout);
      metrics_.write(lm::to_json(p));
      interval_loss = 0;
      interval_batches = interval_tokens = 0;
      interval_start = clock_type::now();
    }
    if (stop_after_batches > 0 && batches_this_process_ >= stop_after_batches)
      lm::stop_requested().store(true);
    if (lm::stop_requested().load()) return EpochEnd::interrupted;
  }
  return EpochEnd::completed;
}

void NplmTrainer::end_epoch(double valid_loss, double seconds) {
  const double train_loss =
      state_.epoch_loss / static_cast<double>(std::max<int64_t>(1, state_.epoch_tokens));
  std::printf(
      "| end of epoch %3lld | time %s | lr %.4g | train loss %6.3f | valid loss %6.3f | valid ppl "
      "%9.2f\n",
      static_cast<long long>(state_.epoch), lm::format_duration(seconds).c_str(), state_.lr,
      train_loss, valid_loss, std::exp(valid_loss));
  metrics_.write({{"event", "valid"},
                  {"epoch", state_.epoch},
                  {"lr", state_.lr},
                  {"train_loss", train_loss},
                  {"valid_loss", valid_loss},
                  {"valid_ppl", std::exp(valid_loss)},
                  {"seconds", seconds}});
  if (valid_loss < state_.best_valid) {
    state_.best_valid = valid_loss;
    state_.bad_epochs = 0;
    runkit::save_weights(path("best.pt"), *model);
    std::printf("  saved the best model so far to %s\n", path("best.pt").c_str());
  } else {
    ++state_.bad_epochs;
    state_.lr *= config_.lr_decay;
  }
  ++state_.epoch;
  state_.batch = 0;
  state_.epoch_loss = 0;
  state_.epoch_tokens = 0;
}

void NplmTrainer::finish() {
  runkit::load_weights(path("best.pt"), *model);
  result_.valid_loss = mean_nll(model, valid_, 1000, lm::timed_progress("valid"));
  result_.test_loss = mean_nll(model, test_, 1000, lm::timed_progress("test"));
  std::printf("| best model %s | valid ppl %9.2f | test ppl %9.2f\n", path("best.pt").c_str(),
              std::exp(result_.valid_loss), std::exp(result_.test_loss));
  // The dump: the first dump_rows test tokens (0 = all), each from its 6-word context.
  const int64_t T = test_.targets.size(0);
  const int64_t rows = config_.dump_rows > 0 ? std::min(T, config_.dump_rows) : T;
  auto header = lm::vocab_header(corpus_.vocab, config_.dataset, "test", config_.seed,
                                 nplm_config().to_toml(config_));
  header.head = model->options.head().name();
  header.d = model->d();
  header.bias = true;
  header.vocab_size = corpus_.vocab.size();
  header.num_tokens = rows;
  header.compute_dtype = "float32";
  {
    torch::NoGradGuard no_grad;
    model->eval();
    analysis::LogProbWriter writer(path("logprobs.h5"), header);
    const int64_t block = 500;
    const auto progress = lm::timed_progress("dump");
    for (int64_t begin = 0; begin < rows; begin += block) {
      const int64_t end = std::min(rows, begin + block);
      lm::write_rows(writer, model->log_probs(test_.inputs.slice(/*dim=*/0, begin, end)),
                     test_.targets.slice(/*dim=*/0, begin, end));
      progress((end + block - 1) / block, (rows + block - 1) / block, end);
    }
    result_.dump_ppl = writer.finish();
  }
  result_.dump_rows = rows;
  std::printf("| dump ppl %9.2f | %lld test rows written to %s\n", result_.dump_ppl,
              static_cast<long long>(rows), path("logprobs.h5").c_str());
  const nlohmann::json final{{"event", "final"},
                             {"trainer", "nplm"},
                             {"head", config_.head},
                             {"best_model", path("best.pt")},
                             {"valid_loss", result_.valid_loss},
                             {"valid_ppl", std::exp(result_.valid_loss)},
                             {"test_loss", result_.test_loss},
                             {"test_ppl", std::exp(result_.test_loss)},
                             {"dump", path("logprobs.h5")},
                             {"dump_rows", rows},
                             {"dump_ppl", result_.dump_ppl},
                             {"d", model->d()},
                             {"epochs", state_.epoch - 1},
                             {"steps", state_.step}};
  metrics_.write(final);
  lm::write_atomically(path("final.json"), [&](const std::string& tmp) {
    std::ofstream(tmp) << final.dump(2) << '\n';
  });
}

int NplmTrainer::run() {
  lm::stop_requested().store(false);
  const bool resumed = state_.step > 0 && fs::exists(path("metrics.jsonl"));
  metrics_ = lm::MetricsLog(path("metrics.jsonl"), /*append=*/resumed);
  lm::write_atomically(path("config.toml"), [&](const std::string& tmp) {
    std::ofstream(tmp) << nplm_config().to_toml(config_);
  });
  int64_t params = 0;
  for (const auto& p : model->parameters()) params += p.numel();
  metrics_.write({{"event", resumed ? "resume" : "start"},
                  {"epoch", state_.epoch},
                  {"batch", state_.batch},
                  {"params", params}});
  while (state_.epoch <= config_.epochs) {
    const auto start = clock_type::now();
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
    const double valid_loss = mean_nll(model, valid_, 1000, lm::timed_progress("valid"));
    end_epoch(valid_loss, seconds_since(start));
    save();
  }
  finish();
  return lm::kFinished;
}

}  // namespace sb::nplm
