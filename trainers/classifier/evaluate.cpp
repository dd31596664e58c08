#include "trainers/classifier/evaluate.h"

#include <limits>

namespace sb::classifier {

Evaluation evaluate(ConvNet& model, const Split& split, int64_t batch_size, const RowSink& sink) {
  torch::NoGradGuard no_grad;
  model->eval();
  const bool mse = model->options().mse;
  Evaluation e;
  e.images = split.size();
  int64_t wrong = 0;
  double loss_sum = 0, nll_sum = 0;
  for (int64_t i = 0; i < e.images; i += batch_size) {
    const int64_t end = std::min(e.images, i + batch_size);
    const auto x = split.images.slice(/*dim=*/0, i, end);  // (n, 1, 28, 28)
    const auto y = split.labels.slice(/*dim=*/0, i, end);  // (n,)
    const auto n = static_cast<double>(end - i);
    const auto h = model->hidden(x);  // (n, fc)
    loss_sum += model->loss(h, y).item<double>() * n;
    const auto scores = mse ? model->logits(h) : model->log_probs(h);  // (n, M)
    wrong += scores.argmax(/*dim=*/1).ne(y).sum().item<int64_t>();
    if (!mse) {
      const auto picked = scores.gather(/*dim=*/1, y.unsqueeze(1)).squeeze(1).to(torch::kDouble);
      const auto finite = torch::isfinite(picked);
      e.outside_support += (end - i) - finite.sum().item<int64_t>();
      nll_sum -= picked.masked_select(finite).sum().item<double>();
      if (sink) sink(scores, y);
    }
  }
  const auto n = static_cast<double>(std::max<int64_t>(1, e.images));
  e.error_pct = 100.0 * static_cast<double>(wrong) / n;
  e.loss = loss_sum / n;
  e.nll = e.outside_support > 0 ? std::numeric_limits<double>::infinity() : nll_sum / n;
  return e;
}

}  // namespace sb::classifier
