#include "trainers/nplm/trainer.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "common/errors.h"
#include "trainers/heads/unigram_bias.h"
#include "trainers/runkit/configured_corpus.h"
#include "trainers/runkit/dump_rows.h"
#include "trainers/runkit/epoch_order.h"

namespace sb::nplm {

double mean_nll(Nplm& model, const Contexts& data, int64_t batch,
                const runkit::ProgressFn& progress) {
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

double error_pct(Nplm& model, const Contexts& data, int64_t batch) {
  torch::NoGradGuard no_grad;
  model->eval();
  const int64_t T = data.targets.size(0);
  int64_t wrong = 0;
  for (int64_t begin = 0; begin < T; begin += batch) {
    const int64_t end = std::min(T, begin + batch);
    const auto lp = model->log_probs(data.inputs.slice(/*dim=*/0, begin, end));  // (n, M)
    wrong +=
        lp.argmax(/*dim=*/1).ne(data.targets.slice(/*dim=*/0, begin, end)).sum().item<int64_t>();
  }
  return 100.0 * static_cast<double>(wrong) / static_cast<double>(std::max<int64_t>(1, T));
}

NplmTrainer::NplmTrainer(NplmConfig config, data::Corpus corpus, std::string run_dir)
    : ConfiguredTrainer(descriptor(), std::move(config), std::move(run_dir)),
      corpus_(std::move(corpus)) {
  const int64_t eos = corpus_.vocab.find(data::kEos);
  // internal: load_corpus ends every line with <eos> and refuses a train split without a line.
  if (eos < 0) throw std::logic_error("the vocabulary has no " + std::string(data::kEos));
  if (static_cast<int64_t>(corpus_.train.size()) < config_.batch_size)
    throw InputError::described("", "train",
                                "train: " + std::to_string(corpus_.train.size()) +
                                    " training tokens, fewer than batch_size " +
                                    std::to_string(config_.batch_size));
  train_ = make_contexts(corpus_.train, config_.context, eos);
  valid_ = make_contexts(corpus_.valid, config_.context, eos);
  test_ = make_contexts(corpus_.test, config_.context, eos);
  int64_t M = corpus_.vocab.size();
  std::vector<int64_t> targets = corpus_.train;  // what the untrained model's prior is over
  if (config_.classes > 0) {
    classes_ = top_classes(corpus_.train, M, config_.classes);
    train_ = restrict_to_classes(train_, classes_);
    valid_ = restrict_to_classes(valid_, classes_);
    test_ = restrict_to_classes(test_, classes_);
    M = config_.classes;
    targets.assign(train_.targets.data_ptr<int64_t>(),
                   train_.targets.data_ptr<int64_t>() + train_.targets.size(0));
  }
  const HeadSpec& head = config_.head.spec();
  check_head_fits(head, M, config_.classes > 0 ? "classes" : "words of the vocabulary");
  model = Nplm(NplmOptions(corpus_.vocab.size(), head)
                   .context(config_.context)
                   .emsize(config_.emsize)
                   .layers(config_.layers)
                   .hidden(config_.hidden)
                   .outputs(config_.classes),
               heads::unigram(targets, M));
  optimizer_ = std::make_unique<torch::optim::SGD>(model->parameters(),
                                                   torch::optim::SGDOptions(config_.lr));
}

double NplmTrainer::validate() {
  return mean_nll(model, valid_, 1000, runkit::timed_progress("valid"));
}

NplmTrainer::EpochEnd NplmTrainer::train_epoch() {
  const int64_t T = train_.targets.size(0), B = config_.batch_size;
  const int64_t full = (T + B - 1) / B;
  const int64_t batches = config_.max_batches > 0 ? std::min(full, config_.max_batches) : full;
  const auto order = runkit::epoch_order(T, config_.seed, state_.epoch);  // (T)
  for (auto& group : optimizer_->param_groups()) group.options().set_lr(state_.lr);
  model->train();
  runkit::IntervalMeter meter(state_.batch);
  while (state_.batch < batches) {
    const int64_t begin = state_.batch * B, end = std::min(T, begin + B);
    const auto rows = order.slice(/*dim=*/0, begin, end);
    const auto x = train_.inputs.index_select(/*dim=*/0, rows);   // (B, n)
    const auto y = train_.targets.index_select(/*dim=*/0, rows);  // (B)
    optimizer_->zero_grad();
    const auto loss = model->loss(x, y);
    const double value = loss.item<double>();
    if (!std::isfinite(value)) return non_finite(value);
    loss.backward();
    if (config_.clip > 0) torch::nn::utils::clip_grad_norm_(model->parameters(), config_.clip);
    optimizer_->step();
    const bool stop = count_batch(value, end - begin);
    meter.add(value, end - begin);
    if (state_.batch % config_.log_interval == 0) {
      const auto p =
          meter.take("nplm", state_.epoch, config_.epochs, state_.batch, batches, state_.lr);
      std::printf("%s\n", runkit::format_progress(p).c_str());
      std::fflush(stdout);
      metrics_.write(runkit::train_record(p));
    }
    if (stop) return EpochEnd::interrupted;
  }
  return EpochEnd::completed;
}

void NplmTrainer::report_epoch(double train_loss, double valid_loss, double seconds) {
  std::printf(
      "| end of epoch %3lld | time %s | lr %.4g | train loss %6.3f | valid loss %6.3f | valid ppl "
      "%9.2f\n",
      static_cast<long long>(state_.epoch), sb::format_duration(seconds).c_str(), state_.lr,
      train_loss, valid_loss, std::exp(valid_loss));
  write_epoch_record(train_loss, valid_loss, seconds,
                     {{"lr", state_.lr}, {"valid_ppl", std::exp(valid_loss)}});
}

void NplmTrainer::finish() {
  runkit::load_weights(path("best.pt"), *model);
  result_.valid_loss = mean_nll(model, valid_, 1000, runkit::timed_progress("valid"));
  result_.test_loss = mean_nll(model, test_, 1000, runkit::timed_progress("test"));
  result_.valid_error_pct = error_pct(model, valid_);
  result_.test_error_pct = error_pct(model, test_);
  // Sparse top-k's loss (eq. 5) is no likelihood: no perplexity for it.
  const bool has_ppl = model->options.head().kind != HeadKind::sparse;
  const double none = std::numeric_limits<double>::quiet_NaN();
  std::printf("| best model %s | valid ppl %9.2f | test ppl %9.2f | test error %.2f%%\n",
              path("best.pt").c_str(), has_ppl ? std::exp(result_.valid_loss) : none,
              has_ppl ? std::exp(result_.test_loss) : none, result_.test_error_pct);
  // The dump: the first dump_rows test tokens (0 = all), each from its 6-word context.
  const int64_t T = test_.targets.size(0);
  const int64_t rows = config_.dump_rows > 0 ? std::min(T, config_.dump_rows) : T;
  std::vector<std::string> words = corpus_.vocab.words();
  if (config_.classes > 0) {
    words.clear();
    for (const auto w : classes_.words) words.push_back(corpus_.vocab.word(w));
  }
  const auto header = test_dump_header({model->options.head(), model->d()}, model->options.M(),
                                       rows, std::move(words));
  {
    torch::NoGradGuard no_grad;
    model->eval();
    contract::LogProbWriter writer(path("logprobs.h5"), header);
    const int64_t block = 500;
    const auto progress = runkit::timed_progress("dump");
    for (int64_t begin = 0; begin < rows; begin += block) {
      const int64_t end = std::min(rows, begin + block);
      runkit::write_rows(writer, model->log_probs(test_.inputs.slice(/*dim=*/0, begin, end)),
                         test_.targets.slice(/*dim=*/0, begin, end));
      progress((end + block - 1) / block, (rows + block - 1) / block, end);
    }
    result_.dump_ppl = writer.finish();
  }
  result_.dump_rows = rows;
  std::printf("| dump ppl %9.2f | %lld test rows written to %s\n", result_.dump_ppl,
              static_cast<long long>(rows), path("logprobs.h5").c_str());
  runkit::FinalCommon common = final_common();
  common.valid_loss = result_.valid_loss;
  common.dump_rows = rows;
  common.dump_ppl = result_.dump_ppl;  // sparse: not finite, written null
  write_final(common,
              {{"valid_ppl", has_ppl ? nlohmann::json(std::exp(result_.valid_loss)) : nullptr},
               {"test_loss", result_.test_loss},
               {"test_ppl", has_ppl ? nlohmann::json(std::exp(result_.test_loss)) : nullptr},
               {"valid_error_pct", result_.valid_error_pct},
               {"test_error_pct", result_.test_error_pct},
               {"classes", config_.classes},
               {"test_rows", test_.targets.size(0)},
               {"d", model->d()},
               {"epochs", state_.epoch - 1}});
}

int train(const NplmConfig& config, const runkit::TrainerRun& run) {
  auto loaded = runkit::load_configured_corpus(config);
  loaded.line += "; nplm, context " + std::to_string(config.context) + ", " +
                 std::to_string(config.layers) + " x " + std::to_string(config.hidden) + " ReLU";
  return runkit::train_with<NplmTrainer>(config, run, std::move(loaded.corpus), loaded.line);
}

int cli_main(int argc, char** argv) {
  return runkit::trainer_main(argc, argv, descriptor(), train);
}

}  // namespace sb::nplm
