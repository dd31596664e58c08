#include "trainers/nplm/contexts.h"

#include <string>

#include "common/errors.h"

namespace sb::nplm {

Contexts make_contexts(const std::vector<int64_t>& ids, int64_t n, int64_t pad) {
  if (n < 1 || ids.empty() || pad < 0)
    throw OptionError::described(n < 1         ? "n"
                                 : ids.empty() ? "ids"
                                               : "pad",
                                 "make_contexts: context " + std::to_string(n) + ", " +
                                     std::to_string(ids.size()) + " tokens, pad id " +
                                     std::to_string(pad));
  const auto T = static_cast<int64_t>(ids.size());
  std::vector<int64_t> padded(static_cast<size_t>(n), pad);  // [pad x n, ids...]
  padded.insert(padded.end(), ids.begin(), ids.end());
  const auto stream = torch::tensor(padded, torch::kLong);  // (n + T)
  Contexts c;
  // Window t = padded[t .. t + n) = the n tokens before ids[t].
  c.inputs = stream.unfold(/*dimension=*/0, /*size=*/n, /*step=*/1)
                 .slice(/*dim=*/0, 0, T)
                 .contiguous();                           // (T, n)
  c.targets = stream.slice(/*dim=*/0, n, n + T).clone();  // (T)
  return c;
}

}  // namespace sb::nplm
