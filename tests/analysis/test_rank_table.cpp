// The printed table (analysis/rank_table.cpp) states a rank that is not certified as its window
// rank_min..rank_max, in the rank_NR column and in the Theorem 2 warning, never the nominal count
// inside the window; a certified rank is printed as the count.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "analysis/rank_table.h"

namespace {

// print_table's stdout, captured through a temporary file.
std::string printed(const std::vector<sb::contract::RankResult>& results) {
  std::fflush(stdout);
  char path[] = "/tmp/rank_table_XXXXXX";
  const int fd = ::mkstemp(path);
  const int saved = ::dup(STDOUT_FILENO);
  ::dup2(fd, STDOUT_FILENO);
  sb::analysis::print_table(results);
  std::fflush(stdout);
  ::dup2(saved, STDOUT_FILENO);
  ::close(saved);
  ::close(fd);
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  std::remove(path);
  return s.str();
}

sb::contract::RankResult result(bool certified) {
  sb::contract::RankResult r;
  r.source = "lp.h5";
  r.method = "sketch";
  r.header.head = "softmax";
  r.header.M = 3000;
  r.header.T = 2000;
  r.header.d = 100;
  auto& p = r.report;
  p.bound = 102;
  p.theorem2_bounded = true;
  p.within_bound = false;
  p.has_certificate = true;
  p.certified = certified;
  p.rank = certified ? 500 : 1235;
  p.rank_min = 500;
  p.rank_max = certified ? 500 : 2000;
  return r;
}

}  // namespace

TEST_CASE("an uncertified rank is printed as its window, never as the count inside it",
          "[rank_table]") {
  const auto text = printed({result(/*certified=*/false)});
  INFO(text);
  CHECK(text.find("500..2000") != std::string::npos);
  CHECK(text.find("1235") == std::string::npos);
  CHECK(text.find("but has rank 500..2000") != std::string::npos);
}

TEST_CASE("a certified rank is printed as the count", "[rank_table]") {
  const auto text = printed({result(/*certified=*/true)});
  INFO(text);
  CHECK(text.find("but has rank 500\n") != std::string::npos);
  CHECK(text.find("500..") == std::string::npos);
}
