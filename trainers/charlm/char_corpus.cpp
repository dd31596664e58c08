#include "trainers/charlm/char_corpus.h"

#include <cstdio>

#include "common/errors.h"

namespace sb::charlm {

std::vector<int64_t> spell(const std::vector<int64_t>& word_ids, const data::Vocabulary& words,
                           data::Vocabulary& chars, bool grow, const std::string& split) {
  const auto symbol = [&](const std::string& s, const std::string& word) {
    const int64_t id = grow ? chars.add(s) : chars.find(s);
    if (id < 0) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02x",
                    static_cast<unsigned>(static_cast<unsigned char>(s[0])));
      throw InputError::described("", split,
                                  split + ": character '" + s + "' (byte " + byte + ") of word '" +
                                      word + "' is not in the training characters");
    }
    return id;
  };
  std::vector<int64_t> out;
  out.reserve(word_ids.size() * 6);
  bool line_start = true;
  for (const auto id : word_ids) {
    const std::string& w = words.word(id);
    if (w == data::kEos) {
      out.push_back(symbol(data::kEos, w));
      line_start = true;
      continue;
    }
    if (!line_start) out.push_back(symbol(kWordBoundary, w));
    for (const char c : w) out.push_back(symbol(std::string(1, c), w));
    line_start = false;
  }
  return out;
}

CharCorpus char_corpus(const data::Corpus& words) {
  CharCorpus c;
  c.train = spell(words.train, words.vocab, c.vocab, /*grow=*/true, "train");
  c.valid = spell(words.valid, words.vocab, c.vocab, /*grow=*/false, "valid");
  c.test = spell(words.test, words.vocab, c.vocab, /*grow=*/false, "test");
  return c;
}

std::vector<std::string> unspell(const std::vector<int64_t>& symbols,
                                 const data::Vocabulary& chars) {
  std::vector<std::string> words;
  std::string word;
  bool after_boundary = false;
  for (size_t i = 0; i < symbols.size(); ++i) {
    const std::string& s = chars.word(symbols[i]);
    if (s == kWordBoundary || s == data::kEos) {
      if (word.empty() && (s == kWordBoundary || after_boundary))
        throw OptionError::described(
            "symbols", "unspell: empty word before symbol " + std::to_string(i) + " ('" + s + "')");
      if (!word.empty()) words.push_back(word);
      word.clear();
      after_boundary = s == kWordBoundary;
      if (s == data::kEos) words.push_back(s);
      continue;
    }
    word += s;
    after_boundary = false;
  }
  if (!word.empty() || after_boundary)
    throw OptionError::described("symbols", "unspell: the stream ends inside a word");
  return words;
}

}  // namespace sb::charlm
