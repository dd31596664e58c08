#pragma once
// The n-gram contexts of a feed-forward LM (Bengio et al. 2003): row t of the context matrix holds
// the n tokens before token t of a split, its target is token t.
//
// Sentence boundaries: contexts span the running text, as Bengio et al. trained on the
// concatenated corpus. <eos> is an ordinary token, so the first word of a sentence is predicted
// from [..., last words of the previous sentence, <eos>], and a context may cross several short
// sentences. Before the first token of a split the context is padded with <eos> (the line before
// it ended there), so every token of the split is predicted exactly once: T = the split's
// length, the row count of the word LM's dump (82430 on the PTB test set).

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace sb::nplm {

struct Contexts {
  torch::Tensor inputs;   ///< (T, n) int64: inputs[t] = ids[t - n .. t - 1], pad before index 0
  torch::Tensor targets;  ///< (T) int64: ids[t]
};

/// Throws sb::OptionError for n < 1, an empty split, or a negative pad id.
Contexts make_contexts(const std::vector<int64_t>& ids, int64_t n, int64_t pad);

/// A next-word classification task (the `classes` key: the sparse-softmax control, Sun et al.
/// 2021 test with 103-150 classes): the C words most frequent in `train` (ties: the smaller id)
/// are the classes, in that order. class_of[word] = its class, -1 for every other word.
struct Classes {
  std::vector<int64_t> words;     ///< (C) word id of each class, most frequent first
  std::vector<int64_t> class_of;  ///< (vocab) class of each word, -1 outside the C
};
/// Throws sb::OptionError when C < 1 or C exceeds the words seen in train.
Classes top_classes(const std::vector<int64_t>& train, int64_t vocab, int64_t C);

/// The rows of c whose target is a class, their targets relabelled to class indices (the
/// contexts keep their word ids). Row order is kept.
Contexts restrict_to_classes(const Contexts& c, const Classes& classes);

}  // namespace sb::nplm
