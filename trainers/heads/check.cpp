#include "trainers/heads/check.h"

#include <sstream>
#include <stdexcept>

namespace sb::heads {

void check_logits(const torch::Tensor& logits, const char* fn) {
  if (!logits.defined()) throw std::invalid_argument(std::string(fn) + ": logits are undefined");
  std::ostringstream where;
  where << fn << ": logits of shape " << logits.sizes() << " and dtype " << logits.dtype();
  if (!at::isFloatingType(logits.scalar_type()))
    throw std::invalid_argument(where.str() + ": expected a floating-point dtype");
  if (logits.dim() != 2) throw std::invalid_argument(where.str() + ": expected rank 2, (N, M)");
  if (logits.size(1) < 1) throw std::invalid_argument(where.str() + ": expected M >= 1");
}

void check_targets(const torch::Tensor& targets, const torch::Tensor& logits, const char* fn) {
  if (!targets.defined()) throw std::invalid_argument(std::string(fn) + ": targets are undefined");
  std::ostringstream where;
  where << fn << ": targets of shape " << targets.sizes() << " for logits " << logits.sizes();
  if (targets.dim() != 1 || targets.size(0) != logits.size(0))
    throw std::invalid_argument(where.str() + ": expected shape (N,)");
  if (at::isFloatingType(targets.scalar_type()))
    throw std::invalid_argument(where.str() + ": expected an integer dtype");
  if (targets.numel() > 0) {
    const auto lo = targets.min().item<int64_t>(), hi = targets.max().item<int64_t>();
    if (lo < 0 || hi >= logits.size(1))
      throw std::invalid_argument(where.str() + ": values must lie in [0, " +
                                  std::to_string(logits.size(1)) + "), got [" + std::to_string(lo) +
                                  ", " + std::to_string(hi) + "]");
  }
}

}  // namespace sb::heads
