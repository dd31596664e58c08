#include "trainers/runkit/segment_loss.h"

#include "common/errors.h"

namespace sb::runkit {

double mean_segment_loss(torch::nn::Module& model, const torch::Tensor& data, int64_t bptt,
                         const SegmentStart& start, const SegmentEval& segment,
                         const ProgressFn& progress) {
  if (data.dim() != 2 || data.size(0) < 2)
    throw InputError::described(
        "", "data", "evaluate: data must be (N >= 2, B), got " + c10::str(data.sizes()));
  const int64_t n = data.size(0), B = data.size(1);
  torch::NoGradGuard no_grad;
  model.eval();
  start(B);
  const int64_t segments = (n - 1 + bptt - 1) / bptt;
  double total = 0;
  int64_t tokens = 0, done = 0;
  for (int64_t i = 0; i < n - 1; i += bptt) {
    const int64_t len = std::min(bptt, n - 1 - i);
    const auto input = data.slice(/*dim=*/0, i, i + len);                         // (len, B)
    const auto target = data.slice(/*dim=*/0, i + 1, i + 1 + len).reshape({-1});  // (len B)
    total += segment(input, target).item<double>() * static_cast<double>(len * B);
    tokens += len * B;
    if (progress) progress(++done, segments, tokens);
  }
  return total / static_cast<double>(tokens);
}

}  // namespace sb::runkit
