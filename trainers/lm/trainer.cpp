#include "trainers/lm/trainer.h"

#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/duration.h"
#include "common/errors.h"
#include "datasets/batchify.h"
#include "trainers/heads/unigram_bias.h"
#include "trainers/lm/evaluate.h"
#include "trainers/lm/train_step.h"
#include "trainers/lm/word_corpus.h"
#include "trainers/runkit/device.h"
#include "trainers/runkit/dump_rows.h"

namespace sb::lm {

namespace fs = std::filesystem;

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
  const HeadSpec& head = c.head.spec();
  check_head_fits(head, vocab_size, "words of the vocabulary");
  return AwdLstm(AwdLstmOptions(vocab_size, head)
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
                     .latent_bias(c.latent_bias)
                     .fused_lstm(c.fused_lstm));
}

std::vector<int64_t> eos_then(const data::Corpus& corpus, const std::vector<int64_t>& split,
                              int64_t limit) {
  const auto eos = corpus.vocab.find(data::kEos);
  // internal: load_corpus ends every line with <eos> and refuses a train split without a line.
  if (eos < 0) throw std::logic_error("the vocabulary has no " + std::string(data::kEos));
  const auto n = limit > 0 ? std::min(split.size(), static_cast<size_t>(limit)) : split.size();
  std::vector<int64_t> ids{eos};
  ids.insert(ids.end(), split.begin(), split.begin() + static_cast<std::ptrdiff_t>(n));
  return ids;
}

WordLmTrainer::WordLmTrainer(WordLmConfig config, data::Corpus corpus, std::string run_dir)
    : ConfiguredTrainer(descriptor(), std::move(config), std::move(run_dir)),
      corpus_(std::move(corpus)) {
  const auto device = runkit::resolve_device(config_.device);
  // The splits first: a split too short for its batch size is named before any model is built.
  train_data_ =
      data::batchify_split(corpus_.train, config_.batch_size, /*min_rows=*/3, "train", "batch_size")
          .to(device);
  valid_data_ = data::batchify_split(corpus_.valid, config_.eval_batch_size, /*min_rows=*/2,
                                     "valid", "eval_batch_size")
                    .to(device);
  model = make_awd_lstm(config_, corpus_.vocab.size());  // initialised on the CPU: same weights
  if (config_.bias_init == "unigram") {                  // head(b) = the training unigram (add-one)
    torch::NoGradGuard no_grad;
    model->decoder_bias.copy_(
        heads::unigram_bias(model->options.head(),
                            heads::unigram(corpus_.train, corpus_.vocab.size()))
            .to(torch::kFloat));
  } else if (config_.bias_init == "uniform") {  // b = -log M
    torch::NoGradGuard no_grad;
    model->decoder_bias.fill_(-std::log(static_cast<double>(corpus_.vocab.size())));
  }
  model->to(device);
  if (is_mixture(model->options.head()) && config_.mixture_stats > 0) {
    // N predicted positions: the first N + B validation tokens in B = eval_batch_size columns.
    const auto want = static_cast<size_t>(config_.mixture_stats + config_.eval_batch_size);
    const auto n = std::min(corpus_.valid.size(), want);
    const std::vector<int64_t> first(corpus_.valid.begin(),
                                     corpus_.valid.begin() + static_cast<std::ptrdiff_t>(n));
    if (static_cast<int64_t>(n) >= 2 * config_.eval_batch_size)
      stats_data_ = data::batchify(first, config_.eval_batch_size).to(device);
  }
}

std::vector<torch::Tensor> WordLmTrainer::params() const { return model->parameters(); }

nlohmann::ordered_json WordLmTrainer::position() const {
  // "phase main, epoch 3, batch 120" in messages.
  return {{"phase", phase_name(phase_)}, {"epoch", state_.epoch}, {"batch", state_.batch}};
}

void WordLmTrainer::save_extra(runkit::CheckpointWriter& w) const {
  w.put("phase", phase_name(phase_));
  w.put("position", position_);
  w.put("asgd", asgd_);
  w.put("asgd_epoch", asgd_epoch_);
  w.put("trigger_history", trigger_history_);
  w.put("avg_count", averager_.count());
  w.put_tensors("avg", averager_.averages());
}

void WordLmTrainer::load_extra(runkit::CheckpointReader& r) {
  phase_ = phase_from_name(r.get_string("phase"));
  position_ = r.get_int("position");
  asgd_ = r.get_bool("asgd");
  asgd_epoch_ = r.get_int("asgd_epoch");
  trigger_history_ = r.get_doubles("trigger_history");
  const auto count = r.get_int("avg_count");
  averager_.restore(r.get_tensors("avg"), count);
  // The averaged weights are swapped in for validation: one tensor per parameter (a checkpoint
  // that says otherwise would reach ParameterAverager's and SwapInGuard's internal checks).
  if (asgd_ && averager_.averages().size() != params().size())
    throw InputError(r.path(), "avg",
                     "an averaged tensor for each of the model's " +
                         std::to_string(params().size()) + " parameters",
                     std::to_string(averager_.averages().size()));
  const size_t carried = state_.carried.size();
  if (carried % 2 != 0 || (carried != 0 && carried != 2 * model->rnns.size()))
    throw InputError::described(
        r.path(), "carried LSTM state",
        r.path() + ": carried LSTM state: " + std::to_string(state_.carried.size()) +
            " tensors, expected h and c for each layer",
        "h and c for each layer");
}

double WordLmTrainer::epoch_lr() const {
  if (phase_ != Phase::main || config_.lr_decay == 1) return config_.lr;
  const auto past = std::max<int64_t>(0, state_.epoch - config_.lr_decay_after);
  return config_.lr / std::pow(config_.lr_decay, static_cast<double>(past));
}

WordLmTrainer::EpochEnd WordLmTrainer::train_epoch() {
  const int64_t n = train_data_.size(0), B = train_data_.size(1);
  const int64_t full = (n - 2 + config_.bptt - 1) / config_.bptt;
  const int64_t batches = config_.max_batches > 0 ? std::min(full, config_.max_batches) : full;
  const auto ps = params();
  // The mid-epoch state a Ctrl-C checkpoint carried (RunState::carried: h and c per layer).
  std::vector<LstmState> hidden;
  if (state_.carried.empty()) hidden = model->zero_state(B);
  for (size_t l = 0; l + 1 < state_.carried.size(); l += 2)
    hidden.emplace_back(state_.carried[l], state_.carried[l + 1]);
  state_.carried.clear();
  double interval_loss = 0;
  int64_t interval_batches = 0, interval_tokens = 0;
  auto interval_start = std::chrono::steady_clock::now();
  auto epoch_start = std::chrono::steady_clock::now();
  const int64_t first_batch = state_.batch;
  model->train();
  while (position_ < n - 2 && (config_.max_batches == 0 || state_.batch < batches)) {
    const int64_t seq_len = draw_seq_len(config_.bptt);
    const double lr = epoch_lr() * static_cast<double>(seq_len) / static_cast<double>(config_.bptt);
    auto [x, y] = data::get_batch(train_data_, position_, seq_len);  // (len, B)
    model->zero_grad();
    auto step = segment_loss(model, x, y, hidden, config_.alpha, config_.beta);
    const double value = step.raw_loss.item<double>();
    if (!std::isfinite(value) || !std::isfinite(step.loss.item<double>())) return non_finite(value);
    step.loss.backward();
    clipped_sgd_step(ps, config_.clip, lr, config_.wdecay);
    if (asgd_) averager_.update(ps);
    hidden = std::move(step.state);
    const int64_t len = x.size(0);
    position_ += len;
    const bool stop = count_batch(value, len * B);
    interval_loss += value;
    ++interval_batches;
    interval_tokens += len * B;
    if (state_.batch % config_.log_interval == 0) {
      const double elapsed = seconds_since(interval_start);
      const double per_batch =
          seconds_since(epoch_start) / static_cast<double>(state_.batch - first_batch);
      runkit::TrainProgress p{phase_name(phase_),
                              state_.epoch,
                              state_.batch,
                              batches,
                              epoch_lr(),
                              1000 * elapsed / static_cast<double>(interval_batches),
                              static_cast<double>(interval_tokens) / elapsed,
                              interval_loss / static_cast<double>(interval_batches),
                              per_batch * static_cast<double>(batches - state_.batch)};
      std::printf("%s\n", runkit::format_progress(p).c_str());
      std::fflush(stdout);
      metrics_.write(runkit::train_record(p));
      interval_loss = 0;
      interval_batches = interval_tokens = 0;
      interval_start = std::chrono::steady_clock::now();
    }
    if (stop) {
      for (const auto& [h, c] : detach_state(hidden))
        state_.carried.insert(state_.carried.end(), {h, c});
      return EpochEnd::interrupted;
    }
  }
  return EpochEnd::completed;
}

double WordLmTrainer::validate() {
  auto progress = runkit::timed_progress("valid");
  if (!asgd_) return evaluate(model, valid_data_, config_.bptt, progress);
  SwapInGuard averaged(params(), averager_.averages());  // evaluate the averaged weights
  return evaluate(model, valid_data_, config_.bptt, progress);
}

void WordLmTrainer::after_validate() {
  const bool stats = stats_data_.defined();
  const bool dump = config_.epoch_dump_rows > 0;
  if (!stats && !dump) return;
  const auto phase = phase_name(phase_);
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
                      {"averaged", asgd_},
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
      const double ppl = dump_log_probs(model, ids, config_.bptt, file, dump_header(ids),
                                        runkit::timed_progress("epoch dump"));
      std::printf("  epoch dump: %lld test rows, ppl %.2f, to %s\n",
                  static_cast<long long>(ids.size() - 1), ppl, file.c_str());
      metrics_.write({{"event", "epoch_dump"},
                      {"phase", phase},
                      {"epoch", state_.epoch},
                      {"averaged", asgd_},
                      {"rows", static_cast<int64_t>(ids.size() - 1)},
                      {"ppl", ppl},
                      {"path", file}});
    }
  };
  if (asgd_) {
    SwapInGuard averaged(params(), averager_.averages());  // the weights validate() scored
    probe();
  } else {
    probe();
  }
}

void WordLmTrainer::report_epoch(double train_loss, double valid_loss, double seconds) {
  std::printf(
      "| end of %s epoch %3lld | time %s | train loss %6.3f | valid loss %6.3f | valid ppl "
      "%9.2f%s\n",
      phase_name(phase_).c_str(), static_cast<long long>(state_.epoch),
      format_duration(seconds).c_str(), train_loss, valid_loss, std::exp(valid_loss),
      asgd_ ? " | averaged" : "");
  write_epoch_record(train_loss, valid_loss, seconds,
                     {{"phase", phase_name(phase_)},
                      {"valid_ppl", std::exp(valid_loss)},
                      {"averaged", asgd_},
                      {"lr", epoch_lr()}});
}

std::string WordLmTrainer::save_best() {
  const auto file = path(phase_ == Phase::main ? "best.pt" : "best_finetune.pt");
  if (!asgd_) {
    runkit::save_weights(file, *model);
    return file;
  }
  SwapInGuard averaged(params(), averager_.averages());  // the weights validate() scored
  runkit::save_weights(file, *model);
  return file;
}

void WordLmTrainer::after_epoch(double valid_loss) {
  NonMonotoneTrigger trigger(config_.nonmono);
  trigger.set_history(trigger_history_);
  if (phase_ == Phase::main && !asgd_) {
    if (trigger.observe(valid_loss)) {
      // NT-ASGD (Merity et al. 2018, Algorithm 1): average from the next step on.
      asgd_ = true;
      asgd_epoch_ = state_.epoch;
      averager_.start(params());
      std::printf(
          "  switching to ASGD (validation loss worse than the best before the last %lld)\n",
          static_cast<long long>(config_.nonmono));
      metrics_.write({{"event", "asgd"}, {"epoch", state_.epoch}});
    }
  } else if (phase_ == Phase::finetune) {
    if (trigger.observe(valid_loss)) {
      std::printf("  finetuning done: the non-monotone criterion fired\n");
      phase_ = Phase::done;
    }
  }
  trigger_history_ = trigger.history();
  position_ = 0;
}

void WordLmTrainer::start_finetune() {
  // Finetuning (Yang et al. 2018, finetune.py): ASGD restarted from the best model of the main
  // phase, averaging from the first step, until the non-monotone criterion fires again.
  runkit::load_weights(path("best.pt"), *model);
  phase_ = Phase::finetune;
  state_.epoch = 1;
  asgd_ = false;
  trigger_history_.clear();
  state_.best_valid = validate();  // the loaded model itself (finetune.py's first stored_loss)
  asgd_ = true;
  averager_.start(params());
  std::printf("| finetuning from %s | valid ppl %9.2f\n", path("best.pt").c_str(),
              std::exp(state_.best_valid));
  metrics_.write({{"event", "finetune_start"}, {"valid_loss", state_.best_valid}});
}

runkit::EpochTrainer::Next WordLmTrainer::before_epoch() {
  if (phase_ == Phase::main && state_.epoch > config_.epochs) {
    if (until_ == Phase::main) {
      std::printf("| main phase done (%lld epochs): stopping before finetuning as asked\n",
                  static_cast<long long>(config_.epochs));
      return Next::stop_here;  // the loop saves the checkpoint
    }
    if (config_.finetune_epochs == 0) {
      phase_ = Phase::done;
    } else {
      start_finetune();
      save();
    }
  }
  if (phase_ == Phase::finetune && state_.epoch > config_.finetune_epochs) phase_ = Phase::done;
  if (phase_ != Phase::done) return Next::go_on;
  if (until_ == Phase::done) return Next::done;  // the loop saves the checkpoint, then finish()
  std::printf("| training and finetuning done: stopping before the test-set dump as asked\n");
  return Next::stop_here;
}

contract::LogProbHeader WordLmTrainer::dump_header(const std::vector<int64_t>& ids) const {
  return test_dump_header({model->options.head(), model->d()}, model->options.vocab_size(),
                          static_cast<int64_t>(ids.size()) - 1, corpus_.vocab.words());
}

void WordLmTrainer::finish() {
  const std::string best =
      fs::exists(path("best_finetune.pt")) ? path("best_finetune.pt") : path("best.pt");
  runkit::load_weights(best, *model);
  result_.best_valid_loss =
      evaluate(model, valid_data_, config_.bptt, runkit::timed_progress("valid"));
  std::printf("| best model %s | valid ppl %9.2f\n", best.c_str(),
              std::exp(result_.best_valid_loss));
  int64_t rows = 0;
  if (config_.dump_test) {
    // Batch size 1 as the paper; <eos> in front so that every test token is predicted (T = the
    // test tokens, 82430 on PTB, the paper's count).
    const auto ids = eos_then(corpus_, corpus_.test);
    rows = static_cast<int64_t>(ids.size()) - 1;
    result_.dump_path = path("logprobs.h5");
    result_.test_ppl = dump_log_probs(model, ids, config_.bptt, result_.dump_path, dump_header(ids),
                                      runkit::timed_progress("test"));
    std::printf("| test ppl %9.2f | %lld rows written to %s\n", result_.test_ppl,
                static_cast<long long>(rows), result_.dump_path.c_str());
  }
  runkit::FinalCommon common = final_common();
  common.best_model = best;
  common.valid_loss = result_.best_valid_loss;
  common.dump = result_.dump_path;
  common.dump_rows = rows;
  if (config_.dump_test) common.dump_ppl = result_.test_ppl;
  write_final(common, {{"valid_ppl", std::exp(result_.best_valid_loss)},
                       {"test_ppl", result_.test_ppl},
                       {"asgd_epoch", asgd_epoch_}});
}

int WordLmTrainer::run(Phase until) {
  if (static_cast<int>(phase_) > static_cast<int>(until)) return runkit::kFinished;
  until_ = until;
  return EpochTrainer::run();
}

int train(WordLmConfig config, const runkit::TrainerRun& run, const std::string& until) {
  const auto device = runkit::resolve_device(config.device);  // fails here, before the corpus
  config.device = device.str();  // what config.toml records: cpu, cuda:0, ...
  auto [corpus, dir] = load_word_corpus(config);
  std::printf("%s: %s, %s, vocabulary %lld; %s\n", config.dataset.c_str(), dir.c_str(),
              runkit::split_sizes(corpus, "tokens").c_str(),
              static_cast<long long>(corpus.vocab.size()),
              run.line_end(config.head.text(), runkit::describe_device(device)).c_str());
  WordLmTrainer trainer(config, std::move(corpus), run.run_dir);
  if (run.flags.resume) trainer.resume();
  trainer.stop_after_batches = run.flags.stop_after_batches;
  runkit::handle_interrupts();
  const auto stop_phase = until == "train"      ? Phase::main
                          : until == "finetune" ? Phase::finetune
                                                : Phase::done;
  return trainer.run(stop_phase);
}

int cli_main(int argc, char** argv) {
  std::string until = "dump";
  return runkit::trainer_main(
      argc, argv, descriptor(),
      [&](WordLmConfig config, const runkit::TrainerRun& run) {
        return train(std::move(config), run, until);
      },
      [&](CLI::App& app) {
        app.add_option("--until", until,
                       "stop after this stage, checkpoint saved: train (the main SGD/NT-ASGD "
                       "phase), finetune, or dump (everything: the test-set dump and final.json); "
                       "a later --resume continues from there")
            ->check(CLI::IsMember({"train", "finetune", "dump"}))
            ->capture_default_str();
      });
}

}  // namespace sb::lm
