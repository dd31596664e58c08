#pragma once
// Runs a shell command for a test and returns what it printed on stdout (the command line may
// redirect stderr with 2>&1); *status is its exit status (-1 if it did not exit normally).

#include <sys/wait.h>
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <string>

namespace sb::test {

inline std::string run(const std::string& cmd, int* status) {
  std::array<char, 4096> buf{};
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  REQUIRE(pipe != nullptr);
  while (fgets(buf.data(), static_cast<int>(buf.size()), pipe)) out += buf.data();
  const int rc = pclose(pipe);
  *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

}  // namespace sb::test
