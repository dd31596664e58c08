#pragma once
// The corpus of a word-LM run as its trainer numbered it, set up in one place for train_wordlm
// and dyneval (which must see the words as the weights were trained on them): the corpus
// directory (config.data, else searched: datasets/data_location.h), the splits (or, with
// train_split = "valid", the proxy cut from the validation split), the vocabulary padded to
// config.vocab_size, sorted by frequency for the adaptive heads (their clusters are cut from
// it), the training split truncated to config.train_tokens, and, when asked, the evaluation
// splits to theirs.

#include <string>

#include "datasets/corpus.h"
#include "trainers/lm/config.h"

namespace sb::lm {

struct WordCorpus {
  data::Corpus corpus;
  std::string dir;  ///< where it was read from
};

/// Throws sb::FormatError (no corpus, a missing split) or sb::InputError (a file's content) naming
/// the directories tried, a file and line, or the split.
/// `truncate_eval`: valid and test to config.valid_tokens / test_tokens too (train_wordlm);
/// dyneval takes its own counts of those.
WordCorpus load_word_corpus(const WordLmConfig& config, bool truncate_eval = true);

}  // namespace sb::lm
