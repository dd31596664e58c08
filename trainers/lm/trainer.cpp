#include "trainers/lm/trainer.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "datasets/batchify.h"
#include "trainers/lm/device.h"
#include "trainers/lm/evaluate.h"
#include "trainers/lm/log_prob_rows.h"
#include "trainers/lm/train_step.h"

namespace sb::lm {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

std::atomic<bool>& stop_requested() {
  static std::atomic<bool> flag{false};
  return flag;
}

namespace {
extern "C" void on_sigint(int) { stop_requested().store(true); }

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

}  // namespace

void install_interrupt_handler() {
  std::signal(SIGINT, on_sigint);
  std::signal(SIGTERM, on_sigint);  // kill, or Slurm at a job's time limit: save and stop as well
}

int64_t draw_seq_len(int64_t base) {
  // Merity et al. 2018 sec. 4.1: bptt with p = 0.95 else bptt / 2, then N(., 5), at least 5.
  // Deviation, kept on purpose: we round to the nearest length (mean 70 for bptt 70); AWD-LSTM's
  // code truncates with int(), which makes the mean 69.5. Changing it would change every run.
  const auto u = torch::rand({3}, torch::kDouble);  // global generator: checkpointed
  const double u0 = u[0].item<double>(), u1 = u[1].item<double>(), u2 = u[2].item<double>();
  const double mean = u0 < 0.95 ? static_cast<double>(base) : static_cast<double>(base) / 2;
  const double z = std::sqrt(-2 * std::log1p(-u1)) * std::cos(2 * M_PI * u2);  // Box-Muller
  return std::max<int64_t>(5, std::llround(mean + 5 * z));
}

AwdLstm make_awd_lstm(const WordLmConfig& c, int64_t vocab_size) {
  return AwdLstm(AwdLstmOptions(vocab_size, HeadSpec::parse(c.head))
                     .emsize(c.emsize)
                     .nhid(c.nhid)
                     .nhidlast(c.nhidlast)
                     .nlayers(c.nlayers)
                     .dropout(c.dropout)
                     .dropouth(c.dropouth)
                     .dropouti(c.dropouti)
                     .dropoute(c.dropoute)
                     .wdrop(c.wdrop)
                     .dropoutl(c.dropoutl)
                     .latent_bias(c.latent_bias));
}

std::vector<int64_t> eos_then(const data::Corpus& corpus, const std::vector<int64_t>& split,
                              int64_t limit) {
  const auto eos = corpus.vocab.find(data::kEos);
  if (eos < 0) throw std::invalid_argument("the vocabulary has no " + std::string(data::kEos));
  const auto n = limit > 0 ? std::min(split.size(), static_cast<size_t>(limit)) : split.size();
  std::vector<int64_t> ids{eos};
  ids.insert(ids.end(), split.begin(), split.begin() + static_cast<std::ptrdiff_t>(n));
  return ids;
}

WordLmTrainer::WordLmTrainer(WordLmConfig config, data::Corpus corpus, std::string run_dir)
    : config_(std::move(config)), corpus_(std::move(corpus)), run_dir_(std::move(run_dir)) {
  fs::create_directories(run_dir_);
  const auto device = resolve_device(config_.device);
  torch::manual_seed(static_cast<uint64_t>(config_.seed));  // CPU and CUDA generators
  model = make_awd_lstm(config_, corpus_.vocab.size());     // initialised on the CPU: same weights
  model->to(device);
  train_data_ = data::batchify(corpus_.train, config_.batch_size).to(device);
  valid_data_ = data::batchify(corpus_.valid, config_.eval_batch_size).to(device);
  if (is_mixture(model->options.head()) && config_.mixture_stats > 0) {
    // N predicted positions: the first N + B validation tokens in B = eval_batch_size columns.
    const auto want = static_cast<size_t>(config_.mixture_stats + config_.eval_batch_size);
    const auto n = std::min(corpus_.valid.size(), want);
    const std::vector<int64_t> first(corpus_.valid.begin(),
                                     corpus_.valid.begin() + static_cast<std::ptrdiff_t>(n));
    if (static_cast<int64_t>(n) >= 2 * config_.eval_batch_size)
      stats_data_ = data::batchify(first, config_.eval_batch_size).to(device);
  }
  if (train_data_.size(0) < 3)
    throw std::invalid_argument("train: " + std::to_string(corpus_.train.size()) +
                                " training tokens give fewer than 3 rows at batch_size " +
                                std::to_string(config_.batch_size));
  state_.config = trajectory_toml(config_);
}

std::string WordLmTrainer::path(const std::string& name) const {
  return (fs::path(run_dir_) / name).string();
}

std::vector<torch::Tensor> WordLmTrainer::params() const { return model->parameters(); }

void WordLmTrainer::resume() {
  auto loaded = load_checkpoint(path("checkpoint.pt"), model, averager_);
  // Compared as configs, not as text: a key added since the checkpoint was written reads as its
  // default (e.g. device), and the saved text is normalised the same way as ours.
  const auto saved_config =
      trajectory_toml(load_config_text(loaded.state.config, path("checkpoint.pt") + " config"));
  if (saved_config != state_.config)
    throw std::runtime_error(path("checkpoint.pt") + ": written with a different config (" +
                             runkit::config_difference(saved_config, state_.config) +
                             "); resume with the same settings or use a new --out");
  loaded.state.config = state_.config;
  state_ = std::move(loaded.state);
  carried_ = std::move(loaded.carried);
  std::printf("resuming %s: phase %s, epoch %lld, batch %lld\n", run_dir_.c_str(),
              phase_name(state_.phase).c_str(), static_cast<long long>(state_.epoch),
              static_cast<long long>(state_.batch));
}

void WordLmTrainer::save() {
  save_checkpoint(path("checkpoint.pt"), model, averager_, state_, carried_);
}

WordLmTrainer::EpochEnd WordLmTrainer::train_epoch() {
  const int64_t n = train_data_.size(0), B = train_data_.size(1);
  const int64_t full = (n - 2 + config_.bptt - 1) / config_.bptt;
  const int64_t batches = config_.max_batches > 0 ? std::min(full, config_.max_batches) : full;
  const auto ps = params();
  auto hidden = carried_.empty() ? model->zero_state(B) : carried_;
  carried_.clear();
  double interval_loss = 0;
  int64_t interval_batches = 0, interval_tokens = 0;
  auto interval_start = clock_type::now();
  auto epoch_start = clock_type::now();
  const int64_t first_batch = state_.batch;
  model->train();
  while (state_.position < n - 2 && (config_.max_batches == 0 || state_.batch < batches)) {
    const int64_t seq_len = draw_seq_len(config_.bptt);
    const double lr = config_.lr * static_cast<double>(seq_len) / static_cast<double>(config_.bptt);
    auto [x, y] = data::get_batch(train_data_, state_.position, seq_len);  // (len, B)
    model->zero_grad();
    auto step = segment_loss(model, x, y, hidden, config_.alpha, config_.beta);
    const double value = step.raw_loss.item<double>();
    if (!std::isfinite(value) || !std::isfinite(step.loss.item<double>())) {
      std::fprintf(stderr,
                   "error: %s epoch %lld batch %lld: training loss is %g; stopping. The last good "
                   "checkpoint is %s (resume with a lower lr or clip)\n",
                   phase_name(state_.phase).c_str(), static_cast<long long>(state_.epoch),
                   static_cast<long long>(state_.batch + 1), value, path("checkpoint.pt").c_str());
      metrics_.write(
          {{"event", "non_finite"}, {"epoch", state_.epoch}, {"batch", state_.batch + 1}});
      return EpochEnd::non_finite;
    }
    step.loss.backward();
    clipped_sgd_step(ps, config_.clip, lr, config_.wdecay);
    if (state_.asgd) averager_.update(ps);
    hidden = std::move(step.state);
    const int64_t len = x.size(0);
    state_.position += len;
    ++state_.batch;
    ++state_.step;
    ++batches_this_process_;
    state_.epoch_loss += value * static_cast<double>(len * B);
    state_.epoch_tokens += len * B;
    interval_loss += value;
    ++interval_batches;
    interval_tokens += len * B;
    if (state_.batch % config_.log_interval == 0) {
      const double elapsed = seconds_since(interval_start);
      const double per_batch =
          seconds_since(epoch_start) / static_cast<double>(state_.batch - first_batch);
      TrainProgress p{phase_name(state_.phase),
                      state_.epoch,
                      state_.batch,
                      batches,
                      config_.lr,
                      1000 * elapsed / static_cast<double>(interval_batches),
                      static_cast<double>(interval_tokens) / elapsed,
                      interval_loss / static_cast<double>(interval_batches),
                      per_batch * static_cast<double>(batches - state_.batch)};
      std::printf("%s\n", format_progress(p).c_str());
      std::fflush(stdout);
      metrics_.write(to_json(p));
      interval_loss = 0;
      interval_batches = interval_tokens = 0;
      interval_start = clock_type::now();
    }
    if (stop_after_batches > 0 && batches_this_process_ >= stop_after_batches)
      stop_requested().store(true);
    if (stop_requested().load()) {
      carried_ = detach_state(hidden);
      return EpochEnd::interrupted;
    }
  }
  return EpochEnd::completed;
}

double WordLmTrainer::validate() {
  auto progress = timed_progress("valid");
  if (!state_.asgd) return evaluate(model, valid_data_, config_.bptt, progress);
  SwapInGuard averaged(params(), averager_.averages());  // evaluate the averaged weights
  return evaluate(model, valid_data_, config_.bptt, progress);
}

analysis::LogProbHeader WordLmTrainer::dump_header() const {
  return vocab_header(corpus_.vocab, config_.dataset, "test", config_.seed, to_toml(config_));
}

void WordLmTrainer::epoch_probes() {
  const bool stats = stats_data_.defined();
  const bool dump = config_.epoch_dump_rows > 0;
  if (!stats && !dump) return;
  const auto phase = phase_name(state_.phase);
  const auto probe = [&] {
    if (stats) {
      const auto s = mixture_stats(model, stats_data_, config_.bptt);
      std::printf(
          "  mixture: prior entropy %.4f, entropy of the mean prior %.4f (log K = %.4f), expert "
          "disagreement %.4f nats (%lld validation tokens)\n",
          s.prior_entropy, s.mean_prior_entropy, s.max_prior_entropy, s.disagreement,
          static_cast<long long>(s.contexts));
      metrics_.write({{"event", "mixture"},
                      {"phase", phase},
                      {"epoch", state_.epoch},
                      {"averaged", state_.asgd},
                      {"contexts", s.contexts},
                      {"experts", s.experts},
                      {"prior_entropy", s.prior_entropy},
                      {"mean_prior_entropy", s.mean_prior_entropy},
                      {"max_prior_entropy", s.max_prior_entropy},
                      {"disagreement", s.disagreement}});
    }
    if (dump) {
      // The final dump's path (batch size 1, <eos> first) on the first epoch_dump_rows tokens.
      const auto ids = eos_then(corpus_, corpus_.test, config_.epoch_dump_rows);
      fs::create_directories(path("epochs"));
      const auto file =
          (fs::path(run_dir_) / "epochs" / (phase + "_" + std::to_string(state_.epoch) + ".h5"))
              .string();
      const double ppl = dump_log_probs(model, ids, config_.bptt, file, dump_header(),
                                        timed_progress("epoch dump"));
      std::printf("  epoch dump: %lld test rows, ppl %.2f, to %s\n",
                  static_cast<long long>(ids.size() - 1), ppl, file.c_str());
      metrics_.write({{"event", "epoch_dump"},
                      {"phase", phase},
                      {"epoch", state_.epoch},
                      {"averaged", state_.asgd},
                      {"rows", static_cast<int64_t>(ids.size() - 1)},
                      {"ppl", ppl},
                      {"path", file}});
    }
  };
  if (state_.asgd) {
    SwapInGuard averaged(params(), averager_.averages());  // the weights validate() scored
    probe();
  } else {
    probe();
  }
}

void WordLmTrainer::end_epoch(double valid_loss, double seconds) {
  const double train_loss =
      state_.epoch_loss / static_cast<double>(std::max<int64_t>(1, state_.epoch_tokens));
  std::printf(
      "| end of %s epoch %3lld | time %s | train loss %6.3f | valid loss %6.3f | valid ppl "
      "%9.2f%s\n",
      phase_name(state_.phase).c_str(), static_cast<long long>(state_.epoch),
      format_duration(seconds).c_str(), train_loss, valid_loss, std::exp(valid_loss),
      state_.asgd ? " | averaged" : "");
  metrics_.write({{"event", "valid"},
                  {"phase", phase_name(state_.phase)},
                  {"epoch", state_.epoch},
                  {"train_loss", train_loss},
                  {"valid_loss", valid_loss},
                  {"valid_ppl", std::exp(valid_loss)},
                  {"averaged", state_.asgd},
                  {"seconds", seconds}});
  const std::string best = path(state_.phase == Phase::main ? "best.pt" : "best_finetune.pt");
  if (valid_loss < state_.best_valid) {
    state_.best_valid = valid_loss;
    if (state_.asgd) {
      SwapInGuard averaged(params(), averager_.averages());
      save_weights(best, model);
    } else {
      save_weights(best, model);
    }
    std::printf("  saved the best model so far to %s\n", best.c_str());
  }
  NonMonotoneTrigger trigger(config_.nonmono);
  trigger.set_history(state_.trigger_history);
  if (state_.phase == Phase::main && !state_.asgd) {
    if (trigger.observe(valid_loss)) {
      // NT-ASGD (Merity et al. 2018, Algorithm 1): average from the next step on.
      state_.asgd = true;
      state_.asgd_epoch = state_.epoch;
      averager_.start(params());
      std::printf(
          "  switching to ASGD (validation loss worse than the best before the last %lld)\n",
          static_cast<long long>(config_.nonmono));
      metrics_.write({{"event", "asgd"}, {"epoch", state_.epoch}});
    }
  } else if (state_.phase == Phase::finetune) {
    if (trigger.observe(valid_loss)) {
      std::printf("  finetuning done: the non-monotone criterion fired\n");
      state_.phase = Phase::done;
    }
  }
  state_.trigger_history = trigger.history();
  ++state_.epoch;
  state_.batch = state_.position = 0;
  state_.epoch_loss = 0;
  state_.epoch_tokens = 0;
}

void WordLmTrainer::start_finetune() {
  // Finetuning (Yang et al. 2018, finetune.py): ASGD restarted from the best model of the main
  // phase, averaging from the first step, until the non-monotone criterion fires again.
  load_weights(path("best.pt"), model);
  state_.phase = Phase::finetune;
  state_.epoch = 1;
  state_.asgd = false;
  state_.trigger_history.clear();
  state_.best_valid = validate();  // the loaded model itself (finetune.py's first stored_loss)
  state_.asgd = true;
  averager_.start(params());
  std::printf("| finetuning from %s | valid ppl %9.2f\n", path("best.pt").c_str(),
              std::exp(state_.best_valid));
  metrics_.write({{"event", "finetune_start"}, {"valid_loss", state_.best_valid}});
}

void WordLmTrainer::finish() {
  const std::string best =
      fs::exists(path("best_finetune.pt")) ? path("best_finetune.pt") : path("best.pt");
  load_weights(best, model);
  result_.best_valid_loss = evaluate(model, valid_data_, config_.bptt, timed_progress("valid"));
  std::printf("| best model %s | valid ppl %9.2f\n", best.c_str(),
              std::exp(result_.best_valid_loss));
  if (config_.dump_test) {
    // Batch size 1 as the paper; <eos> in front so that every test token is predicted (T = the
    // test tokens, 82430 on PTB, the paper's count).
    const auto ids = eos_then(corpus_, corpus_.test);
    result_.dump_path = path("logprobs.h5");
    result_.test_ppl = dump_log_probs(model, ids, config_.bptt, result_.dump_path, dump_header(),
                                      timed_progress("test"));
    std::printf("| test ppl %9.2f | %lld rows written to %s\n", result_.test_ppl,
                static_cast<long long>(ids.size() - 1), result_.dump_path.c_str());
  }
  const nlohmann::json final{{"event", "final"},
                             {"best_model", best},
                             {"valid_loss", result_.best_valid_loss},
                             {"valid_ppl", std::exp(result_.best_valid_loss)},
                             {"test_ppl", result_.test_ppl},
                             {"dump", result_.dump_path},
                             {"asgd_epoch", state_.asgd_epoch},
                             {"steps", state_.step}};
  metrics_.write(final);
  write_atomically(path("final.json"),
                   [&](const std::string& tmp) { std::ofstream(tmp) << final.dump(2) << '\n'; });
}

int WordLmTrainer::run(Phase until) {
  stop_requested().store(false);
  if (static_cast<int>(state_.phase) > static_cast<int>(until)) return kFinished;
  const bool resumed = fs::exists(path("metrics.jsonl")) && state_.step > 0;
  metrics_ = MetricsLog(path("metrics.jsonl"), /*append=*/resumed);
  write_atomically(path("config.toml"),
                   [&](const std::string& tmp) { std::ofstream(tmp) << to_toml(config_); });
  metrics_.write({{"event", resumed ? "resume" : "start"},
                  {"phase", phase_name(state_.phase)},
                  {"epoch", state_.epoch},
                  {"batch", state_.batch},
                  {"params", [&] {
                     int64_t n = 0;
                     for (const auto& p : params()) n += p.numel();
                     return n;
                   }()}});
  while (state_.phase != Phase::done) {
    if (state_.phase == Phase::main && state_.epoch > config_.epochs) {
      if (until == Phase::main) {
        save();
        std::printf("| main phase done (%lld epochs): stopping before finetuning as asked\n",
                    static_cast<long long>(config_.epochs));
        return kFinished;
      }
      if (config_.finetune_epochs == 0) {
        state_.phase = Phase::done;
        break;
      }
      start_finetune();
      save();
    }
    if (state_.phase == Phase::finetune && state_.epoch > config_.finetune_epochs) {
      state_.phase = Phase::done;
      break;
    }
    const auto start = clock_type::now();
    const auto end = train_epoch();
    if (end == EpochEnd::non_finite) return kNonFinite;
    if (end == EpochEnd::interrupted) {
      save();
      std::printf("interrupted: saved %s at %s epoch %lld batch %lld; continue with --resume\n",
                  path("checkpoint.pt").c_str(), phase_name(state_.phase).c_str(),
                  static_cast<long long>(state_.epoch), static_cast<long long>(state_.batch));
      metrics_.write({{"event", "interrupted"}, {"epoch", state_.epoch}, {"batch", state_.batch}});
      return kInterrupted;
    }
    const double valid_loss = validate();
    const double seconds = seconds_since(start);
    epoch_probes();
    end_epoch(valid_loss, seconds);
    save();
  }
  save();
  if (until != Phase::done) {
    std::printf("| training and finetuning done: stopping before the test-set dump as asked\n");
    return kFinished;
  }
  finish();
  return kFinished;
}

}  // namespace sb::lm
