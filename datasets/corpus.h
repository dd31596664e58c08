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

/// Renumbers the vocabulary by descending count in the training split (ties keep first-seen
/// order, so the ids stay deterministic) and rewrites every split's ids: the order the adaptive
/// heads' clusters are cut from (Grave et al. 2017: the head cluster holds the most frequent
/// words). Called on the whole training split, before any truncation.
void sort_by_frequency(Corpus& corpus);

}  // namespace sb::data
