// The start-up settings of the LM binaries: threads and glibc's handling of freed memory.

#include <malloc.h>
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/errors.h"
#include "trainers/runkit/process_setup.h"

namespace {

void* volatile escape;  // keeps the compiler from eliding a malloc/free pair

// Allocates and touches `bytes`, returns mallinfo2() while the block is live, then frees it.
struct mallinfo2 info_while_allocated(size_t bytes) {
  void* p = std::malloc(bytes);
  REQUIRE(p != nullptr);
  std::memset(p, 1, bytes);
  escape = p;
  const auto info = mallinfo2();
  std::free(p);
  return info;
}

}  // namespace

TEST_CASE("process setup: set_threads sets the count, 0 means one per core, negative is refused") {
  CHECK(sb::runkit::set_threads(1) == 1);
  CHECK(torch::get_num_threads() == 1);
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  CHECK(sb::runkit::set_threads(0) == cores);
  CHECK(torch::get_num_threads() == cores);
  CHECK_THROWS_WITH(sb::runkit::set_threads(-2), Catch::Contains("got -2"));
  CHECK_THROWS_AS(sb::runkit::set_threads(-2), sb::OptionError);
}

TEST_CASE("process setup: after keep_freed_memory a freed 64 MiB block stays in the heap") {
  const size_t big = size_t{64} << 20;  // above glibc's largest mmap threshold (32 MiB)
  // glibc's default: the block is mmapped (hblkhd grows by it) and unmapped when freed.
  const auto before = mallinfo2();
  const auto during_default = info_while_allocated(big);
  CHECK(during_default.hblkhd >= before.hblkhd + big);
  CHECK(mallinfo2().hblkhd < before.hblkhd + big);

  sb::runkit::keep_freed_memory();
  const auto start = mallinfo2();
  const auto during = info_while_allocated(big);
  CHECK(during.hblkhd == start.hblkhd);  // not mmapped: taken from the heap
  CHECK(during.arena >= start.arena + big);
  const auto after = mallinfo2();
  CHECK(after.arena == during.arena);  // not trimmed when freed
  CHECK(after.fordblks >= big);        // kept as free heap for the next step's buffers
}
