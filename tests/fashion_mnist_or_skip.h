#pragma once
// Tests that need Fashion-MNIST find it where the Debian package dataset-fashion-mnist installs
// it. Without the package they print one line and return: ctest reports them as skipped
// (SKIP_REGULAR_EXPRESSION "SKIPPED: corpus" in tests/CMakeLists.txt).

#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>

#include "datasets/image_dataset.h"

namespace sb::test {

inline std::optional<std::string> fashion_mnist_or_skip() {
  try {
    return sb::data::find_image_dataset_dir("fashion-mnist", "");
  } catch (const std::runtime_error&) {
    std::printf(
        "SKIPPED: corpus 'fashion-mnist' not found in %s: install the Debian package %s "
        "(`make deps`)\n",
        sb::data::kFashionMnistDir, sb::data::kFashionMnistPackage);
    return std::nullopt;
  }
}

}  // namespace sb::test

/// Declares `const std::string var` = the Fashion-MNIST directory, or returns (skipped).
#define SB_FASHION_MNIST_OR_SKIP(var)                         \
  const auto var##_found = sb::test::fashion_mnist_or_skip(); \
  if (!var##_found) return;                                   \
  const std::string var = *var##_found
