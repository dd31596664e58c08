#pragma once
// PTB as characters (the control case of Kanai et al. 2018, supplementary D: M < d), derived from
// the word files so that it needs no other download: each word is spelled as its characters (one
// symbol per byte), words of a line are separated by the word-boundary symbol <sp>, and the line
// ends with <eos> (in place of a boundary). <unk> is spelled like any word: '<' 'u' 'n' 'k' '>'.
// On PTB: 48 characters + <sp> + <eos> = 50 symbols; 5017482 / 393042 / 442423 symbols in
// train / valid / test. The symbols are whole strings of a Vocabulary, so <sp> and <eos> never
// collide with a character, and the spelling round-trips to the word stream exactly (unspell).

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/corpus.h"

namespace sb::charlm {

inline constexpr const char* kWordBoundary = "<sp>";

struct CharCorpus {
  data::Vocabulary vocab;  ///< characters in first-seen order over train, then <sp>, <eos> as met
  std::vector<int64_t> train, valid, test;
};

/// The symbols of a word-id stream (with its <eos> tokens). With `grow`, new characters join
/// `chars`; without, a character not in it throws sb::InputError "<split>: character 'x'
/// (byte 0x..) of word 'w' is not in the training characters".
std::vector<int64_t> spell(const std::vector<int64_t>& word_ids, const data::Vocabulary& words,
                           data::Vocabulary& chars, bool grow, const std::string& split);

/// Train builds the character vocabulary; valid and test must use only its characters.
CharCorpus char_corpus(const data::Corpus& words);

/// The word strings (with "<eos>") a symbol stream spells: the inverse of spell(). Throws
/// sb::OptionError for an empty word (two boundaries in a row, a boundary before <eos> or
/// at the start) or a stream that ends inside a word.
std::vector<std::string> unspell(const std::vector<int64_t>& symbols,
                                 const data::Vocabulary& chars);

}  // namespace sb::charlm
