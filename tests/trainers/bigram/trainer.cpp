#include "tests/trainers/bigram/trainer.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "contract/logprob_file.h"
#include "trainers/runkit/configured_corpus.h"
#include "trainers/runkit/dump_rows.h"

namespace sb::bigram {

namespace {

Bigrams bigrams(const std::vector<int64_t>& ids, int64_t eos) {
  const auto t = torch::tensor(ids, torch::kLong);  // (T)
  const auto first = torch::full({1}, eos, torch::kLong);
  return {torch::cat({first, t.slice(/*dim=*/0, 0, -1)}), t};
}

}  // namespace

BigramTrainer::BigramTrainer(BigramConfig config, data::Corpus corpus, std::string run_dir)
    : ConfiguredTrainer(descriptor(), std::move(config), std::move(run_dir)),
      corpus_(std::move(corpus)) {
  const int64_t eos = corpus_.vocab.find(data::kEos);
  if (eos < 0) throw std::invalid_argument("the vocabulary has no " + std::string(data::kEos));
  train_ = bigrams(corpus_.train, eos);
  valid_ = bigrams(corpus_.valid, eos);
  test_ = bigrams(corpus_.test, eos);
  const HeadSpec& head = config_.head.spec();
  check_head_fits(head, corpus_.vocab.size(), "words of the vocabulary");
  model = Bigram(BigramOptions(corpus_.vocab.size(), head).d(config_.d));
  optimizer_ = std::make_unique<torch::optim::SGD>(model->parameters(),
                                                   torch::optim::SGDOptions(config_.lr));
}

double BigramTrainer::mean_nll(const Bigrams& split) {
  torch::NoGradGuard no_grad;
  model->eval();
  return model->loss(split.previous, split.targets).item<double>();
}

double BigramTrainer::validate() { return mean_nll(valid_); }

BigramTrainer::EpochEnd BigramTrainer::train_epoch() {
  const int64_t T = train_.targets.size(0), B = config_.batch_size;
  const int64_t full = (T + B - 1) / B;
  const int64_t batches = config_.max_batches > 0 ? std::min(full, config_.max_batches) : full;
  for (auto& group : optimizer_->param_groups()) group.options().set_lr(state_.lr);
  model->train();
  while (state_.batch < batches) {
    const int64_t begin = state_.batch * B, end = std::min(T, begin + B);
    optimizer_->zero_grad();
    const auto loss = model->loss(train_.previous.slice(/*dim=*/0, begin, end),
                                  train_.targets.slice(/*dim=*/0, begin, end));
    const double value = loss.item<double>();
    if (!std::isfinite(value)) return non_finite(value);
    loss.backward();
    if (config_.clip > 0) torch::nn::utils::clip_grad_norm_(model->parameters(), config_.clip);
    optimizer_->step();
    if (count_batch(value, end - begin)) return EpochEnd::interrupted;
  }
  return EpochEnd::completed;
}

void BigramTrainer::report_epoch(double train_loss, double valid_loss, double seconds) {
  std::printf("| end of epoch %3lld | train loss %6.3f | valid ppl %9.2f\n",
              static_cast<long long>(state_.epoch), train_loss, std::exp(valid_loss));
  write_epoch_record(train_loss, valid_loss, seconds, {});
}

void BigramTrainer::finish() {
  runkit::load_weights(path("best.pt"), *model);
  const double valid_loss = mean_nll(valid_), test_loss = mean_nll(test_);
  const int64_t rows = test_.targets.size(0);
  const auto header = test_dump_header({model->options.head(), config_.d}, corpus_.vocab.size(),
                                       rows, corpus_.vocab.words());
  double dump_ppl = 0;
  {
    torch::NoGradGuard no_grad;
    model->eval();
    contract::LogProbWriter writer(path("logprobs.h5"), header);
    runkit::write_rows(writer, model->log_probs(test_.previous), test_.targets);
    dump_ppl = writer.finish();
  }
  runkit::FinalCommon common = final_common();
  common.valid_loss = valid_loss;
  common.dump_rows = rows;
  common.dump_ppl = dump_ppl;
  write_final(common, {{"valid_ppl", std::exp(valid_loss)},
                       {"test_loss", test_loss},
                       {"test_ppl", std::exp(test_loss)},
                       {"d", config_.d}});
}

int train(const BigramConfig& config, const runkit::TrainerRun& run) {
  auto loaded = runkit::load_configured_corpus(config);
  return runkit::train_with<BigramTrainer>(config, run, std::move(loaded.corpus),
                                           loaded.line + "; bigram");
}

int cli_main(int argc, char** argv) {
  return runkit::trainer_main(argc, argv, descriptor(), train);
}

}  // namespace sb::bigram
