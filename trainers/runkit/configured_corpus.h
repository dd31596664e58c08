#pragma once
// The word corpus a trainer's corpus keys name (epoch_keys.h, corpus_keys: dataset, data,
// train_tokens, valid_tokens, test_tokens), loaded the one way the word-level trainers load it:
// found (datasets/data_location.h), read, each split cut to its *_tokens, and described in the
// words that open the trainer's first line.

#include <cstdint>
#include <string>

#include "datasets/corpus.h"

namespace sb::runkit {

struct ConfiguredCorpus {
  data::Corpus corpus;  ///< every split cut to its *_tokens (0 = the whole split)
  /// "ptb: DIR, 929589 train / 73760 valid / 82430 test tokens, vocabulary 10000"
  std::string line;
};

ConfiguredCorpus load_configured_corpus(const std::string& dataset, const std::string& data,
                                        int64_t train_tokens, int64_t valid_tokens,
                                        int64_t test_tokens);

/// The same, from a config with the corpus keys.
template <class Config>
ConfiguredCorpus load_configured_corpus(const Config& c) {
  return load_configured_corpus(c.dataset, c.data, c.train_tokens, c.valid_tokens, c.test_tokens);
}

}  // namespace sb::runkit
