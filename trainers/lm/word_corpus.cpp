#include "trainers/lm/word_corpus.h"

#include "common/errors.h"
#include "common/head_spec.h"
#include "datasets/data_location.h"
#include "trainers/runkit/trainer_cli.h"

namespace sb::lm {

WordCorpus load_word_corpus(const WordLmConfig& config, bool truncate_eval) {
  WordCorpus w;
  w.dir = data::find_corpus_dir(config.dataset, config.data);
  if (config.train_split == "valid") {
    w.corpus = data::load_proxy_corpus(w.dir);
  } else {
    try {
      data::split_file(w.dir, "train");
    } catch (const FormatError& e) {
      // WikiText-2 is often at hand without its training split: say what else can run.
      throw FormatError::described(
          e.file(), "train",
          std::string(e.what()) +
              "; `make data` fetches it, or train_split = \"valid\" trains on the proxy cut "
              "from the validation split (make reproduce PROFILE=wt2-proxy)");
    }
    w.corpus = data::load_corpus(w.dir);
  }
  data::pad_vocabulary(w.corpus, config.vocab_size, "vocab_size");
  // The adaptive heads cut their clusters from a frequency-sorted vocabulary; the sort comes
  // before any truncation (it counts the whole training split).
  if (is_adaptive(config.head.spec())) data::sort_by_frequency(w.corpus);
  runkit::truncate(w.corpus.train, config.train_tokens);
  if (truncate_eval) {
    runkit::truncate(w.corpus.valid, config.valid_tokens);
    runkit::truncate(w.corpus.test, config.test_tokens);
  }
  return w;
}

}  // namespace sb::lm
