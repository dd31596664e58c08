#pragma once
// Which file of a shared library this process mapped: what a benchmark ran on, when the same
// library is at several paths (the OpenMP OpenBLAS our rpath names, or Debian's preloaded one).

#include <fstream>
#include <string>

namespace sb::bench {

/// The path of the first mapping whose file name contains `name` (/proc/self/maps), or "(none)".
inline std::string loaded_library(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(name) != std::string::npos) return line.substr(line.find('/'));
  return "(none)";
}

}  // namespace sb::bench
