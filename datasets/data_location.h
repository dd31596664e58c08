#pragma once
// Where a corpus lives: an explicit --data DIR, else datasets/<name> or ../shared/datasets/<name>
// relative to the working directory and to the source tree. `make data` (datasets/fetch.sh)
// verifies or downloads them.

#include <string>

namespace sb::data {

/// Returns the first directory holding the corpus' valid and test splits. Throws
/// sb::FormatError listing every directory tried and how to get the data.
std::string find_corpus_dir(const std::string& name, const std::string& explicit_dir = "");

}  // namespace sb::data
