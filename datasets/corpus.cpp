#include "datasets/corpus.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "common/errors.h"

namespace sb::data {

int64_t Vocabulary::add(const std::string& word) {
  const auto [it, inserted] = ids_.emplace(word, size());
  if (inserted) words_.push_back(word);
  return it->second;
}

int64_t Vocabulary::find(const std::string& word) const {
  const auto it = ids_.find(word);
  return it == ids_.end() ? -1 : it->second;
}

std::vector<int64_t> tokenize_file(const std::string& path, Vocabulary& vocab, bool grow) {
  std::ifstream in(path);
  if (!in) throw FormatError::described(path, "", path + ": cannot open");
  std::vector<int64_t> ids;
  std::string line, word;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    std::istringstream words(line);
    auto push = [&](const std::string& w) {
      const int64_t id = grow ? vocab.add(w) : vocab.find(w);
      if (id < 0)
        throw InputError::described(path, "line " + std::to_string(line_no),
                                    path + ":" + std::to_string(line_no) + ": word '" + w +
                                        "' is not in the training vocabulary");
      ids.push_back(id);
    };
    while (words >> word) push(word);
    push(kEos);
  }
  return ids;
}

std::string split_file(const std::string& dir, const std::string& split) {
  const std::vector<std::string> names = {"ptb." + split + ".txt", split + ".txt",
                                          "wiki." + split + ".tokens"};
  for (const auto& n : names) {
    const auto p = std::filesystem::path(dir) / n;
    if (std::filesystem::exists(p)) return p.string();
  }
  std::string tried;
  for (const auto& n : names) tried += (tried.empty() ? "" : ", ") + n;
  throw FormatError::described(dir, split,
                               dir + ": no " + split + " split (looked for " + tried + ")");
}

void sort_by_frequency(Corpus& corpus) {
  const int64_t m = corpus.vocab.size();
  std::vector<int64_t> count(static_cast<size_t>(m), 0);
  for (const int64_t id : corpus.train) ++count[static_cast<size_t>(id)];
  std::vector<int64_t> order(static_cast<size_t>(m));  // new id -> old id
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return count[static_cast<size_t>(a)] > count[static_cast<size_t>(b)];
  });
  std::vector<int64_t> new_id(static_cast<size_t>(m));
  Vocabulary sorted;
  for (int64_t i = 0; i < m; ++i) {
    new_id[static_cast<size_t>(order[static_cast<size_t>(i)])] = i;
    sorted.add(corpus.vocab.word(order[static_cast<size_t>(i)]));
  }
  for (auto* split : {&corpus.train, &corpus.valid, &corpus.test})
    for (auto& id : *split) id = new_id[static_cast<size_t>(id)];
  corpus.vocab = std::move(sorted);
}

Corpus load_corpus(const std::string& dir) {
  Corpus c;
  const auto train = split_file(dir, "train");
  c.train = tokenize_file(train, c.vocab, /*grow=*/true);
  // Every line ends with <eos>: a split without a line holds no token at all.
  if (c.vocab.size() < 2)
    throw InputError::described(
        train, "",
        train + ": " + std::to_string(c.train.size()) + " tokens of " +
            std::to_string(c.vocab.size()) +
            " distinct words (<eos> counted); a language model needs at least one word besides "
            "<eos>");
  for (auto [split, ids] : {std::pair{"valid", &c.valid}, std::pair{"test", &c.test}}) {
    const auto path = split_file(dir, split);
    *ids = tokenize_file(path, c.vocab, /*grow=*/false);
    if (ids->empty())
      throw InputError::described(
          path, "", path + ": no tokens; expected a non-empty " + std::string(split) + " split",
          "a non-empty " + std::string(split) + " split");
  }
  return c;
}

Corpus load_proxy_corpus(const std::string& dir) {
  Corpus c;
  const auto valid = split_file(dir, "valid");
  std::vector<int64_t> ids = tokenize_file(valid, c.vocab, /*grow=*/true);
  c.test = tokenize_file(split_file(dir, "test"), c.vocab, /*grow=*/true);
  const auto n = static_cast<int64_t>(ids.size());
  const auto held = static_cast<int64_t>(std::llround(kProxyHoldout * static_cast<double>(n)));
  if (held < 2 || n - held < 2)
    throw InputError::described(
        valid, "",
        valid + ": " + std::to_string(n) +
            " tokens; the proxy trains on the first nine tenths and validates on the last "
            "tenth, which needs at least 20 tokens");
  c.train.assign(ids.begin(), ids.end() - held);
  c.valid.assign(ids.end() - held, ids.end());
  return c;
}

void pad_vocabulary(Corpus& corpus, int64_t size, const std::string& option) {
  if (size == 0) return;
  const int64_t have = corpus.vocab.size();
  if (size < have)
    throw OptionError::described(
        option,
        option + " = " + std::to_string(size) + " is below the corpus' " + std::to_string(have) +
            " words; expected 0 (the corpus' own) or >= " + std::to_string(have),
        "0 (the corpus' own) or >= " + std::to_string(have));
  for (int64_t i = 0; corpus.vocab.size() < size; ++i)
    corpus.vocab.add("<unseen_" + std::to_string(i) + ">");
}

}  // namespace sb::data
