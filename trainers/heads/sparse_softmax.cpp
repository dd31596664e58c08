#include "trainers/heads/sparse_softmax.h"

#include <limits>

#include "common/errors.h"
#include "trainers/heads/check.h"

namespace sb::heads {
namespace {

void check_k(int64_t k, const torch::Tensor& logits, const char* fn) {
  if (k < 1 || k > logits.size(1))
    throw OptionError::described(
        "k", std::string(fn) + ": k must satisfy 1 <= k <= M = " + std::to_string(logits.size(1)) +
                 ", got k = " + std::to_string(k));
}

}  // namespace

torch::Tensor log_sparse_softmax(const torch::Tensor& logits, int64_t k) {
  check_logits(logits, "log_sparse_softmax");
  check_k(k, logits, "log_sparse_softmax");
  const auto top = logits.topk(k, /*dim=*/-1);  // values, indices: (N, k)
  const auto log_top = torch::log_softmax(std::get<0>(top), /*dim=*/-1);
  const auto neg_inf = torch::full_like(logits, -std::numeric_limits<double>::infinity());
  return neg_inf.scatter(/*dim=*/-1, std::get<1>(top), log_top);
}

torch::Tensor sparse_softmax_loss(const torch::Tensor& logits, const torch::Tensor& targets,
                                  int64_t k) {
  check_logits(logits, "sparse_softmax_loss");
  check_k(k, logits, "sparse_softmax_loss");
  check_targets(targets, logits, "sparse_softmax_loss");
  const auto top = std::get<0>(logits.topk(k, /*dim=*/-1));                       // (N, k)
  const auto z_t = logits.gather(/*dim=*/-1, targets.unsqueeze(-1)).squeeze(-1);  // (N,)
  return (top.logsumexp(/*dim=*/-1) - z_t).mean();
}

}  // namespace sb::heads
