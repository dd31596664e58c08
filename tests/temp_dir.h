#pragma once
// A fresh per-process scratch directory for tests that write files.

#include <unistd.h>

#include <filesystem>
#include <string>

namespace sb::test {

inline std::filesystem::path temp_dir(const std::string& name) {
  auto dir =
      std::filesystem::temp_directory_path() / ("sb_test_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace sb::test
