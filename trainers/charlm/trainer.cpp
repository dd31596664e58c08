#include "trainers/charlm/trainer.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "datasets/batchify.h"
#include "datasets/corpus.h"
#include "datasets/data_location.h"
#include "trainers/runkit/dump_rows.h"
#include "trainers/runkit/segment_loss.h"

namespace sb::charlm {

namespace {

double bpc(double nats) { return nats / std::log(2.0); }

CharState detached(const CharState& s) { return {s.first.detach(), s.second.detach()}; }

}  // namespace

double evaluate(CharLstm& model, const torch::Tensor& data, int64_t bptt,
                const runkit::ProgressFn& progress) {
  CharState state;
  return runkit::mean_segment_loss(
      *model, data, bptt, [&](int64_t columns) { state = model->zero_state(columns); },
      [&](const torch::Tensor& input, const torch::Tensor& target) {
        auto [out, next] = model->forward(input, state);
        state = next;
        return model->loss(out, target);
      },
      progress);
}

CharTrainer::CharTrainer(CharConfig config, CharCorpus corpus, std::string run_dir)
    : ConfiguredTrainer(descriptor(), std::move(config), std::move(run_dir)),
      corpus_(std::move(corpus)) {
  const HeadSpec& head = config_.head.spec();
  check_head_fits(head, corpus_.vocab.size(), "symbols of the character vocabulary");
  model = CharLstm(corpus_.vocab.size(), head, config_.emsize, config_.nhid, config_.nlayers,
                   config_.latent);
  train_data_ = data::batchify_split(corpus_.train, config_.batch_size, /*min_rows=*/3, "train",
                                     "batch_size", "symbols");
  valid_data_ = data::batchify_split(corpus_.valid, config_.eval_batch_size, /*min_rows=*/2,
                                     "valid", "eval_batch_size", "symbols");
  optimizer_ = std::make_unique<torch::optim::Adam>(model->parameters(),
                                                    torch::optim::AdamOptions(config_.lr));
}

double CharTrainer::validate() {
  return evaluate(model, valid_data_, config_.bptt, runkit::timed_progress("valid"));
}

CharTrainer::EpochEnd CharTrainer::train_epoch() {
  const int64_t n = train_data_.size(0), B = train_data_.size(1), bptt = config_.bptt;
  const int64_t full = (n - 1 + bptt - 1) / bptt;
  const int64_t batches = config_.max_batches > 0 ? std::min(full, config_.max_batches) : full;
  auto state = state_.carried.size() == 2 ? CharState{state_.carried[0], state_.carried[1]}
                                          : model->zero_state(B);
  state_.carried.clear();
  model->train();
  runkit::IntervalMeter meter(state_.batch);
  while (state_.batch < batches) {
    auto [x, y] = data::get_batch(train_data_, state_.batch * bptt, bptt);  // (len, B)
    optimizer_->zero_grad();
    auto [out, next] = model->forward(x, state);
    const auto loss = model->loss(out, y.reshape({-1}));
    const double value = loss.item<double>();
    if (!std::isfinite(value)) return non_finite(value);
    loss.backward();
    if (config_.clip > 0) torch::nn::utils::clip_grad_norm_(model->parameters(), config_.clip);
    optimizer_->step();
    state = detached(next);
    const bool stop = count_batch(value, y.numel());
    meter.add(value, y.numel());
    if (state_.batch % config_.log_interval == 0) {
      const auto p =
          meter.take("char", state_.epoch, config_.epochs, state_.batch, batches, state_.lr);
      std::printf(
          "| char     epoch %3lld | %5lld/%5lld batches | ms/batch %7.1f | chars/s %6.0f "
          "| loss %6.3f | bpc %6.3f | ETA %s\n",
          static_cast<long long>(p.epoch), static_cast<long long>(p.batch),
          static_cast<long long>(p.batches), p.ms_per_batch, p.tokens_per_s, p.loss, bpc(p.loss),
          sb::format_duration(p.eta_seconds).c_str());
      std::fflush(stdout);
      auto record = runkit::train_record(p);
      record["bpc"] = bpc(p.loss);
      record["eta_seconds"] = p.eta_seconds;
      metrics_.write(record);
    }
    if (stop) {
      if (state_.batch < batches) state_.carried = {state.first, state.second};
      return EpochEnd::interrupted;
    }
  }
  return EpochEnd::completed;
}

void CharTrainer::report_epoch(double train_loss, double valid_loss, double seconds) {
  std::printf("| end of epoch %3lld | time %s | train bpc %6.3f | valid bpc %6.3f\n",
              static_cast<long long>(state_.epoch), sb::format_duration(seconds).c_str(),
              bpc(train_loss), bpc(valid_loss));
  write_epoch_record(train_loss, valid_loss, seconds,
                     {{"train_bpc", bpc(train_loss)}, {"valid_bpc", bpc(valid_loss)}});
}

void CharTrainer::finish() {
  runkit::load_weights(path("best.pt"), *model);
  result_.valid_loss = evaluate(model, valid_data_, config_.bptt, runkit::timed_progress("valid"));
  // The test set with batch size 1, <eos> in front: row t predicts test symbol t from all before.
  const int64_t eos = corpus_.vocab.find(data::kEos);
  // internal: spell() gives every <eos> of the word corpus (one per line, load_corpus) a symbol.
  if (eos < 0) throw std::logic_error("the character vocabulary has no <eos>");
  std::vector<int64_t> ids{eos};
  ids.insert(ids.end(), corpus_.test.begin(), corpus_.test.end());
  const auto stream = torch::tensor(ids, torch::kLong).view({-1, 1});  // (T + 1, 1)
  const int64_t T = stream.size(0) - 1;
  const auto header = test_dump_header({model->head_spec(), model->d()}, corpus_.vocab.size(), T,
                                       corpus_.vocab.words(), config_.dataset + "_char");
  double dump_ppl = 0;
  {
    torch::NoGradGuard no_grad;
    model->eval();
    contract::LogProbWriter writer(path("logprobs.h5"), header);
    auto state = model->zero_state(1);
    const int64_t bptt = config_.bptt, segments = (T + bptt - 1) / bptt;
    const auto progress = runkit::timed_progress("test");
    int64_t done = 0;
    for (int64_t i = 0; i < T; i += bptt) {
      auto [x, y] = data::get_batch(stream, i, bptt);  // (len, 1)
      auto [out, next] = model->forward(x, state);
      runkit::write_rows(writer, model->log_probs(out), y.reshape({-1}));  // (len, M)
      state = next;
      progress(++done, segments, i + x.size(0));
    }
    dump_ppl = writer.finish();
  }
  result_.test_loss = std::log(dump_ppl);
  result_.dump_rows = T;
  result_.dump_ppl = dump_ppl;
  std::printf("| best model %s | valid bpc %6.3f | test bpc %6.3f | %lld rows written to %s\n",
              path("best.pt").c_str(), bpc(result_.valid_loss), bpc(result_.test_loss),
              static_cast<long long>(T), path("logprobs.h5").c_str());
  runkit::FinalCommon common = final_common();
  common.dataset = config_.dataset + "_char";
  common.valid_loss = result_.valid_loss;
  common.dump_rows = T;
  common.dump_ppl = dump_ppl;
  write_final(common, {{"valid_bpc", bpc(result_.valid_loss)},
                       {"test_loss", result_.test_loss},
                       {"test_bpc", bpc(result_.test_loss)},
                       {"d", model->d()},
                       {"M", corpus_.vocab.size()},
                       {"epochs", state_.epoch - 1}});
}

int train(const CharConfig& config, const runkit::TrainerRun& run) {
  const auto dir = data::find_corpus_dir(config.dataset, config.data);
  auto chars = char_corpus(data::load_corpus(dir));
  runkit::truncate_splits(chars, config.train_chars, config.valid_chars, config.test_chars);
  const int64_t d = config.latent > 0 ? config.latent : config.nhid;
  const std::string what =
      config.dataset + " characters: " + dir + ", " + runkit::split_sizes(chars, "symbols") +
      ", M = " + std::to_string(chars.vocab.size()) + "; LSTM " + std::to_string(config.nlayers) +
      " x " + std::to_string(config.nhid) + " (d = " + std::to_string(d) + ")";
  return runkit::train_with<CharTrainer>(config, run, std::move(chars), what);
}

int cli_main(int argc, char** argv) {
  return runkit::trainer_main(argc, argv, descriptor(), train);
}

}  // namespace sb::charlm
