#include "trainers/nplm/contexts.h"

#include <algorithm>
#include <numeric>
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

Classes top_classes(const std::vector<int64_t>& train, int64_t vocab, int64_t C) {
  std::vector<int64_t> count(static_cast<size_t>(vocab), 0);
  for (const auto id : train) ++count[static_cast<size_t>(id)];
  const auto seen = std::count_if(count.begin(), count.end(), [](int64_t n) { return n > 0; });
  if (C < 1 || C > seen)
    throw OptionError::for_setting(
        "classes", "classes = " + std::to_string(C),
        "1 .. " + std::to_string(seen) + " (the words seen in training)");
  std::vector<int64_t> order(static_cast<size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return count[static_cast<size_t>(a)] > count[static_cast<size_t>(b)];
  });
  Classes c;
  c.words.assign(order.begin(), order.begin() + C);
  c.class_of.assign(static_cast<size_t>(vocab), -1);
  for (int64_t k = 0; k < C; ++k) c.class_of[static_cast<size_t>(c.words[k])] = k;
  return c;
}

Contexts restrict_to_classes(const Contexts& c, const Classes& classes) {
  const auto map = torch::tensor(classes.class_of, torch::kLong);  // (vocab)
  const auto labels = map.index_select(/*dim=*/0, c.targets);      // (T): class or -1
  const auto keep = (labels >= 0).nonzero().squeeze(/*dim=*/1);    // (T')
  return {c.inputs.index_select(/*dim=*/0, keep).contiguous(),
          labels.index_select(/*dim=*/0, keep).contiguous()};
}

}  // namespace sb::nplm
