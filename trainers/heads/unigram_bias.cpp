#include "trainers/heads/unigram_bias.h"

#include <string>

#include "common/errors.h"

namespace sb::heads {

torch::Tensor unigram(const std::vector<int64_t>& ids, int64_t vocab_size) {
  std::vector<double> counts(static_cast<size_t>(vocab_size), 1.0);  // add-one
  for (const auto id : ids) {
    if (id < 0 || id >= vocab_size)
      throw OptionError::described("ids", "unigram: id " + std::to_string(id) + " outside [0, " +
                                              std::to_string(vocab_size) + ")");
    counts[static_cast<size_t>(id)] += 1;
  }
  const auto c = torch::tensor(counts, torch::kDouble);
  return c / c.sum();
}

torch::Tensor unigram_bias(const HeadSpec& spec, const torch::Tensor& p_in) {
  const auto p = p_in.to(torch::kDouble);  // (M)
  const auto p_min = p.min(), p_max = p.max();
  switch (spec.kind) {
    case HeadKind::softmax:  // exp(b) ~ p
      return p.log();
    case HeadKind::softmax_abs:  // exp(|b|) ~ p with b = log(p / p_min) >= 0
      return (p / p_min).log();
    case HeadKind::spherical:  // b^2 + eps = eps p / p_min (>= eps)
      return (spec.eps * (p / p_min - 1)).clamp_min(0).sqrt();
    case HeadKind::taylor:  // 1 + b + b^2/2 = ((b + 1)^2 + 1) / 2 = p / (2 p_min) (>= 1/2)
      return (p / p_min - 1).clamp_min(0).sqrt() - 1;
    case HeadKind::sigmoid: {  // sigmoid(b) = p / (2 p_max) in (0, 1/2]
      const auto q = p / (2 * p_max);
      return q.log() - (-q).log1p();
    }
    case HeadKind::relu:  // relu(b) + eps = p / p_max when p / p_max > eps
      return (p / p_max - spec.eps).clamp_min(0);
    case HeadKind::sigsoftmax: {
      // w(b) = b + log sigmoid(b) = log p: w is increasing with 1 < w' = 1 + sigmoid(-b) < 2, so
      // Newton's method from b = log p / 2 (w ~ 2b for b << 0) converges; 60 steps is far more
      // than double precision needs.
      const auto target = p.log();
      auto b = target / 2;
      for (int i = 0; i < 60; ++i) {
        const auto w = b + torch::log_sigmoid(b);
        b = b - (w - target) / (1 + torch::sigmoid(-b));
      }
      return b;
    }
    case HeadKind::sparse:
    case HeadKind::mos:
    case HeadKind::moss:
    case HeadKind::adaptive:
    case HeadKind::adaptive_sigsoftmax:
      break;
  }
  throw OptionError::described("head", "unigram_bias: head '" + spec.to_string() +
                                           "' has no unigram bias (mixture, adaptive or sparse)");
}

}  // namespace sb::heads
