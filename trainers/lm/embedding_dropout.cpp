#include "trainers/lm/embedding_dropout.h"

#include <string>

#include "common/errors.h"

namespace sb::lm {

torch::Tensor embedding_dropout(const torch::Tensor& weight, const torch::Tensor& ids, double p,
                                bool training) {
  if (!(p >= 0 && p < 1))
    throw OptionError::described(
        "p", "embedding_dropout: p must satisfy 0 <= p < 1, got " + std::to_string(p));
  if (!training || p == 0) return torch::embedding(weight, ids);
  const auto mask = torch::empty({weight.size(0), 1}, weight.options())
                        .bernoulli_(1 - p)
                        .div_(1 - p);           // (V, 1): one draw per word
  return torch::embedding(weight * mask, ids);  // (T, B, E)
}

}  // namespace sb::lm
