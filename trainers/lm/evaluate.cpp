#include "trainers/lm/evaluate.h"

#include <stdexcept>

#include "common/errors.h"
#include "datasets/batchify.h"
#include "trainers/runkit/device.h"
#include "trainers/runkit/dump_rows.h"

namespace sb::lm {

double evaluate(AwdLstm& model, const torch::Tensor& ids, int64_t bptt,
                const runkit::ProgressFn& progress) {
  const auto data = ids.to(runkit::device_of(*model));  // no copy when it is there already
  decltype(model->zero_state(1)) state;
  return runkit::mean_segment_loss(
      *model, data, bptt, [&](int64_t columns) { state = model->zero_state(columns); },
      [&](const torch::Tensor& input, const torch::Tensor& target) {
        auto out = model->forward(input, state);
        state = std::move(out.state);
        return model->loss(out.output, target);
      },
      progress);
}

heads::MixtureStats mixture_stats(AwdLstm& model, const torch::Tensor& data, int64_t bptt) {
  // internal: WordLmTrainer batchifies at least 2 B validation tokens into B columns for it.
  if (data.dim() != 2 || data.size(0) < 2)
    throw std::logic_error("mixture_stats: data must be (N >= 2, B), got " +
                           c10::str(data.sizes()));
  torch::NoGradGuard no_grad;
  model->eval();
  const int64_t n = data.size(0), B = data.size(1);
  auto state = model->zero_state(B);
  heads::MixtureStatsAccumulator acc;
  for (int64_t i = 0; i < n - 1; i += bptt) {
    const int64_t len = std::min(bptt, n - 1 - i);
    auto out = model->forward(data.slice(/*dim=*/0, i, i + len), state);  // input (len, B)
    const auto [log_pi, log_f] = model->mixture_components(out.output);   // (len B, K), (., K, M)
    acc.add(log_pi, log_f);
    state = std::move(out.state);
  }
  return acc.result();
}

double dump_log_probs(AwdLstm& model, const std::vector<int64_t>& ids, int64_t bptt,
                      const std::string& path, const contract::LogProbHeader& header,
                      const runkit::ProgressFn& progress) {
  if (ids.size() < 2)
    throw OptionError::described(
        "ids", "dump_log_probs: need at least 2 tokens, got " + std::to_string(ids.size()));
  torch::NoGradGuard no_grad;
  model->eval();
  const auto data = data::batchify(ids, /*batch_size=*/1);  // (N, 1), on the CPU: the targets
  const auto inputs = data.to(runkit::device_of(*model));   // (N, 1), on the model's device
  const int64_t n = data.size(0);
  // internal: WordLmTrainer::dump_header counts T from the same ids and M from the same model.
  if (header.T != n - 1 || header.M != model->options.vocab_size())
    throw std::logic_error("dump_log_probs: the header's T x M is not the dump's");
  contract::LogProbWriter writer(path, header);
  const int64_t segments = (n - 1 + bptt - 1) / bptt;
  auto state = model->zero_state(1);
  int64_t done = 0;
  for (int64_t i = 0; i < n - 1; i += bptt) {
    const int64_t len = std::min(bptt, n - 1 - i);
    const auto input = inputs.slice(/*dim=*/0, i, i + len);                       // (len, 1)
    const auto target = data.slice(/*dim=*/0, i + 1, i + 1 + len).reshape({-1});  // (len)
    auto out = model->forward(input, state);
    runkit::write_rows(writer, model->log_probs(out.output), target);  // (len, M) rows
    state = std::move(out.state);
    if (progress) progress(++done, segments, i + len);
  }
  return writer.finish();
}

}  // namespace sb::lm
