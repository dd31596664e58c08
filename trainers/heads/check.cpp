#include "trainers/heads/check.h"

#include <sstream>
#include <stdexcept>

namespace sb::heads {

// Every tensor checked here is one the model or the trainer made: logits from a linear layer over
// (N, d) rows, targets of the same batch from batchify() or an image reader. A failed check is a
// caller's programming error (std::logic_error); no input file or option reaches one.

void check_logits(const torch::Tensor& logits, const char* fn) {
  // internal: the logits are a linear layer's output (defined, floating-point, (N, M), M >= 1).
  if (!logits.defined()) throw std::logic_error(std::string(fn) + ": logits are undefined");
  std::ostringstream where;
  where << fn << ": logits of shape " << logits.sizes() << " and dtype " << logits.dtype();
  // internal: as above.
  if (!at::isFloatingType(logits.scalar_type()))
    throw std::logic_error(where.str() + ": expected a floating-point dtype");
  // internal: as above.
  if (logits.dim() != 2) throw std::logic_error(where.str() + ": expected rank 2, (N, M)");
  // internal: as above (M: a vocabulary of >= 2 words, 10 classes, or a checked --vocab >= 1).
  if (logits.size(1) < 1) throw std::logic_error(where.str() + ": expected M >= 1");
}

void check_targets(const torch::Tensor& targets, const torch::Tensor& logits, const char* fn) {
  check_targets(targets, logits.size(0), logits.size(1), fn);
}

void check_targets(const torch::Tensor& targets, int64_t rows, int64_t cols, const char* fn) {
  // internal: the targets are the batch's int64 (N,) ids or labels, made with the logits' rows.
  if (!targets.defined()) throw std::logic_error(std::string(fn) + ": targets are undefined");
  std::ostringstream where;
  where << fn << ": targets of shape " << targets.sizes() << " for logits [" << rows << ", " << cols
        << "]";
  // internal: as above.
  if (targets.dim() != 1 || targets.size(0) != rows)
    throw std::logic_error(where.str() + ": expected shape (N,)");
  // internal: as above.
  if (at::isFloatingType(targets.scalar_type()))
    throw std::logic_error(where.str() + ": expected an integer dtype");
  if (targets.numel() > 0) {
    const auto lo = targets.min().item<int64_t>(), hi = targets.max().item<int64_t>();
    // internal: token ids index the vocabulary built from the same corpus (load_corpus refuses
    // an unknown word), and the idx reader refuses a label outside [0, 10).
    if (lo < 0 || hi >= cols)
      throw std::logic_error(where.str() + ": values must lie in [0, " + std::to_string(cols) +
                             "), got [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
}

}  // namespace sb::heads
