#include "trainers/runkit/configured_corpus.h"

#include <utility>

#include "datasets/data_location.h"
#include "trainers/runkit/trainer_cli.h"

namespace sb::runkit {

ConfiguredCorpus load_configured_corpus(const std::string& dataset, const std::string& data,
                                        int64_t train_tokens, int64_t valid_tokens,
                                        int64_t test_tokens) {
  const auto dir = data::find_corpus_dir(dataset, data);
  ConfiguredCorpus c{data::load_corpus(dir), {}};
  truncate_splits(c.corpus, train_tokens, valid_tokens, test_tokens);
  c.line = dataset + ": " + dir + ", " + split_sizes(c.corpus, "tokens") + ", vocabulary " +
           std::to_string(c.corpus.vocab.size());
  return c;
}

}  // namespace sb::runkit
