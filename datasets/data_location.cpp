#include "datasets/data_location.h"

#include <filesystem>
#include <stdexcept>
#include <vector>

#include "common/errors.h"
#include "datasets/corpus.h"

namespace sb::data {
namespace {

bool holds_corpus(const std::filesystem::path& dir) {
  try {
    split_file(dir.string(), "valid");
    split_file(dir.string(), "test");
    return true;
  } catch (const std::runtime_error&) {
    return false;
  }
}

}  // namespace

std::string find_corpus_dir(const std::string& name, const std::string& explicit_dir) {
  namespace fs = std::filesystem;
  std::vector<fs::path> tried;
  if (!explicit_dir.empty()) {
    if (fs::is_directory(explicit_dir)) {
      // A directory the user named: say which split file it lacks (the training split is the
      // loader's to ask for: a proxy run trains without it, datasets/corpus.h).
      for (const char* split : {"valid", "test"}) split_file(explicit_dir, split);
      return fs::weakly_canonical(explicit_dir).string();
    }
    tried.emplace_back(explicit_dir);
  } else {
    for (const fs::path& base : {fs::current_path(), fs::path(SB_SOURCE_DIR)}) {
      tried.push_back(base / "datasets" / name);
      tried.push_back(base / ".." / "shared" / "datasets" / name);
    }
  }
  for (const auto& dir : tried)
    if (holds_corpus(dir)) return fs::weakly_canonical(dir).string();
  std::string where;
  for (const auto& dir : tried) where += (where.empty() ? "" : ", ") + dir.string();
  throw FormatError::described(explicit_dir, "",
                               "corpus '" + name + "' not found (looked in " + where +
                                   "); run `make data` (datasets/fetch.sh " + name +
                                   ": verifies or downloads it) or pass --data DIR");
}

}  // namespace sb::data
