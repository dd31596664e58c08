#include "trainers/charlm/char_trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "datasets/batchify.h"
#include "trainers/lm/checkpoint.h"
#include "trainers/lm/log_prob_rows.h"
#include "trainers/lm/trainer.h"

namespace sb::charlm {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

namespace {

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

double bpc(double nats) { return nats / std::log(2.0); }

CharState detached(const CharState& s) { return {s.first.detach(), s.second.detach()}; }

}  // namespace

double evaluate(CharLstm& model, const torch::Tensor& data, int64_t bptt,
                const lm::ProgressFn& progress) {
  if (data.dim() != 2 || data.size(0) < 2)
    throw std::invalid_argument("evaluate: data must be (N >= 2, B), got " +
                                c10::str(data.sizes()));
  torch::NoGradGuard no_grad;
  model->eval();
  const int64_t n = data.size(0), B = data.size(1);
  const int64_t segments = (n - 1 + bptt - 1) / bptt;
  auto state = model->zero_state(B);
  double total = 0;
  int64_t tokens = 0, done = 0;
  for (int64_t i = 0; i < n - 1; i += bptt) {
    auto [x, y] = data::get_batch(data, i, bptt);  // (len, B)
    auto [out, next] = model->forward(x, state);
    total += model->loss(out, y.reshape({-1})).item<double>() * static_cast<double>(y.numel());
    tokens += y.numel();
    state = next;
    if (progress) progress(++done, segments, tokens);
  }
  return total / static_cast<double>(tokens);
}

CharTrainer::CharTrainer(CharConfig config, CharCorpus corpus, std::string run_dir)
    : config_(std::move(config)), corpus_(std::move(corpus)), run_dir_(std::move(run_dir)) {
  fs::create_directories(run_dir_);
  torch::manual_seed(static_cast<uint64_t>(config_.seed));
  model = CharLstm(corpus_.vocab.size(), HeadSpec::parse(config_.head), config_.emsize,
                   config_.nhid, config_.nlayers);
  train_data_ = data::batchify(corpus_.train, config_.batch_size);
  valid_data_ = data::batchify(corpus_.valid, config_.eval_batch_size);
  if (train_data_.size(0) < 3)
    throw std::invalid_argument("train: " + std::to_string(corpus_.train.size()) +
                                " training symbols give fewer than 3 rows at batch_size " +
                                std::to_string(config_.batch_size));
  if (valid_data_.size(0) < 2)
    throw std::invalid_argument("valid: " + std::to_string(corpus_.valid.size()) +
                                " symbols give fewer than 2 rows at eval_batch_size " +
                                std::to_string(config_.eval_batch_size));
  optimizer_ = std::make_unique<torch::optim::Adam>(model->parameters(),
                                                    torch::optim::AdamOptions(config_.lr));
  state_.lr = config_.lr;
  state_.config = trajectory_toml(config_);
}

std::string CharTrainer::path(const std::string& name) const {
  return (fs::path(run_dir_) / name).string();
}

void CharTrainer::save() {
  runkit::save_run_checkpoint(path("checkpoint.pt"), *model, *optimizer_, state_);
}

void CharTrainer::resume() {
  auto loaded = runkit::load_run_checkpoint(path("checkpoint.pt"), *model, *optimizer_);
  if (loaded.config != state_.config)
    throw std::runtime_error(path("checkpoint.pt") + ": written with a different config (" +
                             runkit::config_difference(loaded.config, state_.config) +
                             "); resume with the same settings or use a new --out");
  state_ = std::move(loaded);
  std::printf("resuming %s: epoch %lld, batch %lld\n", run_dir_.c_str(),
              static_cast<long long>(state_.epoch), static_cast<long long>(state_.batch));
}

CharTrainer::EpochEnd CharTrainer::train_epoch() {
  const int64_t n = train_data_.size(0), B = train_data_.size(1), bptt = config_.bptt;
  const int64_t full = (n - 1 + bptt - 1) / bptt;
  const int64_t batches = config_.max_batches > 0 ? std::min(full, config_.max_batches) : full;
  auto state = state_.carried.size() == 2 ? CharState{state_.carried[0], state_.carried[1]}
                                          : model->zero_state(B);
  state_.carried.clear();
  model->train();
  double interval_loss = 0;
  int64_t interval_batches = 0, interval_tokens = 0;
  auto interval_start = clock_type::now(), epoch_start = clock_type::now();
  const int64_t first_batch = state_.batch;
  while (state_.batch < batches) {
    auto [x, y] = data::get_batch(train_data_, state_.batch * bptt, bptt);  // (len, B)
    optimizer_->zero_grad();
    auto [out, next] = model->forward(x, state);
    const auto loss = model->loss(out, y.reshape({-1}));
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
    state = detached(next);
    const int64_t tokens = y.numel();
    ++state_.batch;
    ++state_.step;
    ++batches_this_process_;
    state_.epoch_loss += value * static_cast<double>(tokens);
    state_.epoch_tokens += tokens;
    interval_loss += value;
    ++interval_batches;
    interval_tokens += tokens;
    if (state_.batch % config_.log_interval == 0) {
      const double elapsed = seconds_since(interval_start);
      const double per_batch =
          seconds_since(epoch_start) / static_cast<double>(state_.batch - first_batch);
      const double mean = interval_loss / static_cast<double>(interval_batches);
      const double eta = per_batch * static_cast<double>(batches - state_.batch) +
                         per_batch * static_cast<double>(batches) *
                             static_cast<double>(config_.epochs - state_.epoch);
      lm::TrainProgress p{"char",
                          state_.epoch,
                          state_.batch,
                          batches,
                          state_.lr,
                          1000 * elapsed / static_cast<double>(interval_batches),
                          static_cast<double>(interval_tokens) / elapsed,
                          mean,
                          eta};
      std::printf(
          "| char     epoch %3lld | %5lld/%5lld batches | ms/batch %7.1f | chars/s %6.0f "
          "| loss %6.3f | bpc %6.3f | ETA %s\n",
          static_cast<long long>(p.epoch), static_cast<long long>(p.batch),
          static_cast<long long>(p.batches), p.ms_per_batch, p.tokens_per_s, mean, bpc(mean),
          lm::format_duration(eta).c_str());
      std::fflush(stdout);
      auto record = lm::to_json(p);
      record["bpc"] = bpc(mean);
      record["eta_seconds"] = eta;
      metrics_.write(record);
      interval_loss = 0;
      interval_batches = interval_tokens = 0;
      interval_start = clock_type::now();
    }
    if (stop_after_batches > 0 && batches_this_process_ >= stop_after_batches)
      lm::stop_requested().store(true);
    if (lm::stop_requested().load()) {
      if (state_.batch < batches) state_.carried = {state.first, state.second};
      return EpochEnd::interrupted;
    }
  }
  return EpochEnd::completed;
}

void CharTrainer::end_epoch(double valid_loss, double seconds) {
  const double train_loss =
      state_.epoch_loss / static_cast<double>(std::max<int64_t>(1, state_.epoch_tokens));
  std::printf("| end of epoch %3lld | time %s | train bpc %6.3f | valid bpc %6.3f\n",
              static_cast<long long>(state_.epoch), lm::format_duration(seconds).c_str(),
              bpc(train_loss), bpc(valid_loss));
  metrics_.write({{"event", "valid"},
                  {"epoch", state_.epoch},
                  {"train_loss", train_loss},
                  {"train_bpc", bpc(train_loss)},
                  {"valid_loss", valid_loss},
                  {"valid_bpc", bpc(valid_loss)},
                  {"seconds", seconds}});
  if (valid_loss < state_.best_valid) {
    state_.best_valid = valid_loss;
    state_.bad_epochs = 0;
    runkit::save_weights(path("best.pt"), *model);
    std::printf("  saved the best model so far to %s\n", path("best.pt").c_str());
  } else {
    ++state_.bad_epochs;
  }
  ++state_.epoch;
  state_.batch = 0;
  state_.epoch_loss = 0;
  state_.epoch_tokens = 0;
}

void CharTrainer::finish() {
  runkit::load_weights(path("best.pt"), *model);
  result_.valid_loss = evaluate(model, valid_data_, config_.bptt, lm::timed_progress("valid"));
  // The test set with batch size 1, <eos> in front: row t predicts test symbol t from all before.
  const int64_t eos = corpus_.vocab.find(data::kEos);
  if (eos < 0) throw std::invalid_argument("the character vocabulary has no <eos>");
  std::vector<int64_t> ids{eos};
  ids.insert(ids.end(), corpus_.test.begin(), corpus_.test.end());
  const auto stream = torch::tensor(ids, torch::kLong).view({-1, 1});  // (T + 1, 1)
  const int64_t T = stream.size(0) - 1;
  auto header = lm::vocab_header(corpus_.vocab, config_.dataset + "_char", "test", config_.seed,
                                 char_config().to_toml(config_));
  header.head = model->head_spec().name();
  header.d = model->d();
  header.bias = true;
  header.vocab_size = corpus_.vocab.size();
  header.num_tokens = T;
  header.compute_dtype = "float32";
  double dump_ppl = 0;
  {
    torch::NoGradGuard no_grad;
    model->eval();
    analysis::LogProbWriter writer(path("logprobs.h5"), header);
    auto state = model->zero_state(1);
    const int64_t bptt = config_.bptt, segments = (T + bptt - 1) / bptt;
    const auto progress = lm::timed_progress("test");
    int64_t done = 0;
    for (int64_t i = 0; i < T; i += bptt) {
      auto [x, y] = data::get_batch(stream, i, bptt);  // (len, 1)
      auto [out, next] = model->forward(x, state);
      lm::write_rows(writer, model->log_probs(out), y.reshape({-1}));  // (len, M)
      state = next;
      progress(++done, segments, i + x.size(0));
    }
    dump_ppl = writer.finish();
  }
  result_.test_loss = std::log(dump_ppl);
  result_.test_rows = T;
  std::printf("| best model %s | valid bpc %6.3f | test bpc %6.3f | %lld rows written to %s\n",
              path("best.pt").c_str(), bpc(result_.valid_loss), bpc(result_.test_loss),
              static_cast<long long>(T), path("logprobs.h5").c_str());
  const nlohmann::json final{{"event", "final"},
                             {"trainer", "charlm"},
                             {"head", config_.head},
                             {"best_model", path("best.pt")},
                             {"valid_loss", result_.valid_loss},
                             {"valid_bpc", bpc(result_.valid_loss)},
                             {"test_loss", result_.test_loss},
                             {"test_bpc", bpc(result_.test_loss)},
                             {"dump", path("logprobs.h5")},
                             {"dump_rows", T},
                             {"dump_ppl", dump_ppl},
                             {"d", model->d()},
                             {"M", corpus_.vocab.size()},
                             {"epochs", state_.epoch - 1},
                             {"steps", state_.step}};
  metrics_.write(final);
  lm::write_atomically(path("final.json"), [&](const std::string& tmp) {
    std::ofstream(tmp) << final.dump(2) << '\n';
  });
}

int CharTrainer::run() {
  lm::stop_requested().store(false);
  const bool resumed = state_.step > 0 && fs::exists(path("metrics.jsonl"));
  metrics_ = lm::MetricsLog(path("metrics.jsonl"), /*append=*/resumed);
  lm::write_atomically(path("config.toml"), [&](const std::string& tmp) {
    std::ofstream(tmp) << char_config().to_toml(config_);
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
    const double valid_loss =
        evaluate(model, valid_data_, config_.bptt, lm::timed_progress("valid"));
    end_epoch(valid_loss, seconds_since(start));
    save();
  }
  finish();
  return lm::kFinished;
}

}  // namespace sb::charlm
