#pragma once
// Word-level corpora in the PTB / WikiText-2 format: whitespace-separated tokens, one sentence or
// paragraph per line, <eos> appended to every line. The vocabulary is built from the training
// split in first-seen order, so ids are deterministic; valid/test words must all be in it (PTB
// and WT2 already map rare words to <unk>).

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace sb::data {

inline constexpr const char* kEos = "<eos>";

class Vocabulary {
 public:
  /// The id of `word`, adding it at the end if new.
  int64_t add(const std::string& word);
  /// The id of `word`, or -1.
  int64_t find(const std::string& word) const;
  const std::string& word(int64_t id) const { return words_.at(static_cast<size_t>(id)); }
  int64_t size() const { return static_cast<int64_t>(words_.size()); }
  /// Every word in id order (a dump's /vocab).
  const std::vector<std::string>& words() const { return words_; }

 private:
  std::unordered_map<std::string, int64_t> ids_;
  std::vector<std::string> words_;
};

/// Token ids of one file. With `grow`, unknown words are added to `vocab`; without, an unknown
/// word throws sb::InputError "<file>:<line>: word '<w>' is not in the training vocabulary".
std::vector<int64_t> tokenize_file(const std::string& path, Vocabulary& vocab, bool grow);

struct Corpus {
  Vocabulary vocab;
  std::vector<int64_t> train, valid, test;
};

/// The file names of a split in a corpus directory: PTB's ptb.<split>.txt or WT2's <split>.txt
/// (also wiki.<split>.tokens), whichever exists. Throws listing the names tried.
std::string split_file(const std::string& dir, const std::string& split);

/// Loads train (building the vocabulary), then valid and test, from `dir`.
Corpus load_corpus(const std::string& dir);

/// The proxy of a corpus whose training split is absent (WikiText-2 where only its valid and test
/// splits are at hand): the validation split is the training data except its last tenth
/// (kProxyHoldout, rounded to a token), which is the validation data; the vocabulary is built
/// from valid, then test, in first-seen order, so every test word has an id. The training split,
/// if present, is not read. Throws sb::InputError for a validation split too short to cut.
inline constexpr double kProxyHoldout = 0.1;
Corpus load_proxy_corpus(const std::string& dir);

/// Appends placeholder words "<unseen_0>", "<unseen_1>", ... until the vocabulary has `size`
/// words, so a model's log-output matrix has a larger corpus' M (the proxy above at WikiText-2's
/// 33278). No split holds them: their outputs are trained only through the normaliser. `size` 0
/// leaves the vocabulary as it is; a size below its count throws sb::OptionError naming `option`.
void pad_vocabulary(Corpus& corpus, int64_t size, const std::string& option);

/// Renumbers the vocabulary by descending count in the training split (ties keep first-seen
/// order, so the ids stay deterministic) and rewrites every split's ids: the order the adaptive
/// heads' clusters are cut from (Grave et al. 2017: the head cluster holds the most frequent
/// words). Called on the whole training split, before any truncation.
void sort_by_frequency(Corpus& corpus);

}  // namespace sb::data
