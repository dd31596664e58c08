#include "trainers/transformer/trainer.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <utility>

#include "common/errors.h"
#include "trainers/runkit/configured_corpus.h"
#include "trainers/runkit/dump_rows.h"
#include "trainers/runkit/epoch_order.h"

namespace sb::transformer {

namespace {

constexpr int64_t kEvalBatch = 16;  // windows per evaluation batch

}  // namespace

std::unique_ptr<torch::optim::AdamW> make_optimizer(TransformerLm& model, double lr,
                                                    double weight_decay) {
  std::vector<torch::Tensor> decay, no_decay;
  for (const auto& p : model->parameters()) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  const auto options = [&](double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(lr).betas({0.9, 0.95}).eps(1e-8).weight_decay(wd));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, options(weight_decay));
  groups.emplace_back(no_decay, options(0.0));
  return std::make_unique<torch::optim::AdamW>(std::move(groups), *options(weight_decay));
}

double lr_at(int64_t step, int64_t total, int64_t warmup, double lr, double final_ratio) {
  if (step < warmup) return lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
  const int64_t span = std::max<int64_t>(1, total - 1 - warmup);
  const double progress = std::min(1.0, static_cast<double>(step - warmup) / span);
  const double floor = final_ratio * lr;
  return floor + 0.5 * (lr - floor) * (1.0 + std::cos(M_PI * progress));
}

std::pair<double, double> train_step(TransformerLm& model, torch::optim::AdamW& optimizer,
                                     const torch::Tensor& x, const torch::Tensor& y, double clip,
                                     double lr) {
  optimizer.zero_grad();
  const auto loss = model->loss(model->forward(x), y.reshape({-1}));  // x, y (B, T)
  const double value = loss.item<double>();
  if (!std::isfinite(value)) return {value, 0.0};
  loss.backward();
  const double norm = clip > 0 ? torch::nn::utils::clip_grad_norm_(model->parameters(), clip)
                               : torch::nn::utils::clip_grad_norm_(model->parameters(),
                                                                   /*max_norm=*/INFINITY);
  for (auto& group : optimizer.param_groups())
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  optimizer.step();
  return {value, norm};
}

void for_each_window(TransformerLm& model, const torch::Tensor& ids, int64_t context, int64_t batch,
                     const std::function<void(const torch::Tensor&, const torch::Tensor&)>& fn,
                     const runkit::ProgressFn& progress) {
  torch::NoGradGuard no_grad;
  model->eval();
  const int64_t n = ids.size(0) - 1;  // tokens predicted
  const int64_t full = n / context;
  const int64_t steps = (full + batch - 1) / batch + (n % context ? 1 : 0);
  int64_t done = 0, step = 0;
  if (full > 0) {
    const auto windows = ids.narrow(0, 0, full * context + 1).unfold(0, context + 1, context);
    for (int64_t w = 0; w < full; w += batch) {
      const auto rows = windows.narrow(0, w, std::min(batch, full - w));  // (b, context + 1)
      const auto x = rows.narrow(1, 0, context), y = rows.narrow(1, 1, context);
      fn(model->forward(x), y.reshape({-1}));
      done += y.numel();
      if (progress) progress(++step, steps, done);
    }
  }
  if (n % context) {  // the last, shorter window
    const auto rest = ids.narrow(0, full * context, n % context + 1).unsqueeze(0);
    const auto x = rest.narrow(1, 0, n % context), y = rest.narrow(1, 1, n % context);
    fn(model->forward(x), y.reshape({-1}));
    if (progress) progress(++step, steps, n);
  }
}

TransformerTrainer::TransformerTrainer(TransformerConfig config, data::Corpus corpus,
                                       std::string run_dir)
    : ConfiguredTrainer(descriptor(), std::move(config), std::move(run_dir)),
      corpus_(std::move(corpus)) {
  const HeadSpec& head = config_.head.spec();
  const int64_t M = corpus_.vocab.size();
  check_head_fits(head, M, "words of the vocabulary");
  model = TransformerLm(TransformerLmOptions(M, head, config_.d_model)
                            .layers(config_.layers)
                            .heads(config_.heads)
                            .d_ff(config_.d_ff)
                            .context(config_.context)
                            .dropout(config_.dropout)
                            .final_norm(final_norm_from_name(config_.final_norm))
                            .decoder_bias(config_.decoder_bias));
  const int64_t n = static_cast<int64_t>(corpus_.train.size()) - 1;
  if (n / config_.context < config_.batch_size)
    throw InputError("", "batch_size",
                     "at most " + std::to_string(std::max<int64_t>(0, n / config_.context)) +
                         " (the training split's " + std::to_string(n + 1) + " tokens give " +
                         std::to_string(std::max<int64_t>(0, n / config_.context)) +
                         " windows of context = " + std::to_string(config_.context) + ")",
                     std::to_string(config_.batch_size));
  const auto stream = torch::tensor(corpus_.train, torch::kLong);  // (n + 1)
  windows_ = stream.narrow(0, 0, (n / config_.context) * config_.context + 1)
                 .unfold(0, config_.context + 1, config_.context)
                 .contiguous();  // (n_windows, context + 1)
  if (corpus_.valid.empty() || corpus_.test.empty())
    throw InputError("", "valid_tokens, test_tokens", "at least one token in each split", "0");
  optimizer_ = make_optimizer(model, config_.lr, config_.weight_decay);
}

int64_t TransformerTrainer::batches() const {
  const int64_t full = windows_.size(0) / config_.batch_size;
  return config_.max_batches > 0 ? std::min(full, config_.max_batches) : full;
}

torch::Tensor TransformerTrainer::with_eos(const std::vector<int64_t>& split) const {
  std::vector<int64_t> ids{corpus_.vocab.find(data::kEos)};
  // internal: load_corpus gives every line an <eos>, so the vocabulary has it.
  if (ids.front() < 0) throw std::logic_error("the word vocabulary has no <eos>");
  ids.insert(ids.end(), split.begin(), split.end());
  return torch::tensor(ids, torch::kLong);
}

double TransformerTrainer::mean_nll(const torch::Tensor& ids, const std::string& label) {
  double total = 0;
  int64_t count = 0;
  for_each_window(
      model, ids, config_.context, kEvalBatch,
      [&](const torch::Tensor& h, const torch::Tensor& y) {
        total += model->loss(h, y).item<double>() * static_cast<double>(y.numel());
        count += y.numel();
      },
      runkit::timed_progress(label));
  return total / static_cast<double>(count);
}

double TransformerTrainer::validate() { return mean_nll(with_eos(corpus_.valid), "valid"); }

TransformerTrainer::EpochEnd TransformerTrainer::train_epoch() {
  const int64_t n_batches = batches(), B = config_.batch_size;
  const int64_t total = n_batches * config_.epochs;
  const auto order = runkit::epoch_order(windows_.size(0), config_.seed, state_.epoch);
  model->train();
  runkit::IntervalMeter meter(state_.batch);
  while (state_.batch < n_batches) {
    const auto rows = windows_.index_select(0, order.narrow(0, state_.batch * B, B));  // (B, c+1)
    const auto x = rows.narrow(1, 0, config_.context), y = rows.narrow(1, 1, config_.context);
    const int64_t step = (state_.epoch - 1) * n_batches + state_.batch;
    state_.lr = lr_at(step, total, config_.warmup, config_.lr, config_.final_lr_ratio);
    const auto [value, norm] = train_step(
        model, *static_cast<torch::optim::AdamW*>(optimizer_.get()), x, y, config_.clip, state_.lr);
    if (!std::isfinite(value)) return non_finite(value);
    const bool stop = count_batch(value, y.numel());
    meter.add(value, y.numel());
    if (state_.batch % config_.log_interval == 0) {
      const auto p =
          meter.take("main", state_.epoch, config_.epochs, state_.batch, n_batches, state_.lr);
      std::printf("%s\n", runkit::format_progress(p).c_str());
      std::fflush(stdout);
      auto record = runkit::train_record(p);
      record["grad_norm"] = norm;
      record["eta_seconds"] = p.eta_seconds;
      metrics_.write(record);
    }
    if (stop) return EpochEnd::interrupted;
  }
  return EpochEnd::completed;
}

void TransformerTrainer::report_epoch(double train_loss, double valid_loss, double seconds) {
  std::printf("| end of epoch %3lld | time %s | train ppl %8.2f | valid ppl %8.2f\n",
              static_cast<long long>(state_.epoch), sb::format_duration(seconds).c_str(),
              std::exp(train_loss), std::exp(valid_loss));
  write_epoch_record(train_loss, valid_loss, seconds, {{"valid_ppl", std::exp(valid_loss)}});
}

void TransformerTrainer::finish() {
  runkit::load_weights(path("best.pt"), *model);
  result_.valid_loss = validate();
  const auto test = with_eos(corpus_.test);
  result_.test_loss = mean_nll(test, "test");  // every test token
  // The dump: the first dump_rows test tokens (0 = all), read in the same windows.
  const int64_t all = test.size(0) - 1;
  const int64_t T = config_.dump_rows > 0 ? std::min(all, config_.dump_rows) : all;
  const auto header = test_dump_header(
      {model->options.head(), model->d(), config_.decoder_bias, model->final_norm_of_dump()},
      corpus_.vocab.size(), T, corpus_.vocab.words());
  {
    contract::LogProbWriter writer(path("logprobs.h5"), header);
    for_each_window(
        model, test.narrow(0, 0, T + 1), config_.context, kEvalBatch,
        [&](const torch::Tensor& h, const torch::Tensor& y) {
          runkit::write_rows(writer, model->log_probs(h), y);  // (n, M)
        },
        runkit::timed_progress("dump"));
    result_.dump_ppl = writer.finish();
  }
  result_.dump_rows = T;
  std::printf(
      "| best model %s | valid ppl %9.2f | test ppl %9.2f | dump ppl %9.2f | %lld rows written "
      "to %s\n",
      path("best.pt").c_str(), std::exp(result_.valid_loss), std::exp(result_.test_loss),
      result_.dump_ppl, static_cast<long long>(T), path("logprobs.h5").c_str());
  runkit::FinalCommon common = final_common();
  common.valid_loss = result_.valid_loss;
  common.dump_rows = T;
  common.dump_ppl = result_.dump_ppl;
  write_final(common, {{"valid_ppl", std::exp(result_.valid_loss)},
                       {"test_loss", result_.test_loss},
                       {"test_ppl", std::exp(result_.test_loss)},
                       {"test_rows", all},
                       {"d", model->d()},
                       {"M", corpus_.vocab.size()},
                       {"final_norm", header.final_norm},
                       {"decoder_bias", config_.decoder_bias},
                       {"parameters",
                        [&] {
                          int64_t n = 0;
                          for (const auto& p : model->parameters()) n += p.numel();
                          return n;
                        }()},
                       {"epochs", state_.epoch - 1}});
}

int train(const TransformerConfig& config, const runkit::TrainerRun& run) {
  auto loaded = runkit::load_configured_corpus(config);
  loaded.line += "; transformer, " + std::to_string(config.layers) +
                 " x d = " + std::to_string(config.d_model) + ", " + std::to_string(config.heads) +
                 " heads, context " + std::to_string(config.context) + ", final " +
                 config.final_norm;
  return runkit::train_with<TransformerTrainer>(config, run, std::move(loaded.corpus), loaded.line);
}

int cli_main(int argc, char** argv) {
  return runkit::trainer_main(argc, argv, descriptor(), train);
}

}  // namespace sb::transformer
