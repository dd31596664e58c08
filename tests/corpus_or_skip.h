#pragma once
// Tests that need a corpus find it as the trainers do (datasets/data_location.h: datasets/, then
// ../shared/datasets, from the working directory and the source tree). Without it they print one
// line and return: ctest reports them as skipped (SKIP_REGULAR_EXPRESSION "SKIPPED: corpus" in
// tests/CMakeLists.txt), so a checkout without data and without internet still passes.

#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>

#include "datasets/data_location.h"

namespace sb::test {

/// The corpus directory, or nullopt after printing the skip line.
inline std::optional<std::string> corpus_or_skip(const std::string& name) {
  try {
    return sb::data::find_corpus_dir(name);
  } catch (const std::runtime_error&) {
    std::printf(
        "SKIPPED: corpus '%s' not found in datasets/ or ../shared/datasets: run `make data` "
        "(downloads it into datasets/ and checks its md5)\n",
        name.c_str());
    return std::nullopt;
  }
}

}  // namespace sb::test

/// Declares `const std::string var` = the corpus directory, or returns from the test (skipped).
#define SB_CORPUS_OR_SKIP(var, name)                       \
  const auto var##_found = sb::test::corpus_or_skip(name); \
  if (!var##_found) return;                                \
  const std::string var = *var##_found
