// runkit's atomic writes (final.json, config.toml, checkpoints, dyneval.json) on a write that
// fails: a full disk, simulated by RLIMIT_FSIZE (write(2) then fails with EFBIG as it would with
// ENOSPC; SIGXFSZ ignored), leaves the previous file byte for byte, no temporary file, and an
// error naming the final path; a writer that throws is passed on, the same.

#include <signal.h>
#include <sys/resource.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "common/errors.h"
#include "tests/fixtures/file_bytes.h"
#include "tests/fixtures/temp_dir.h"
#include "trainers/runkit/atomic_write.h"

namespace fs = std::filesystem;
using sb::runkit::write_atomically;
using sb::runkit::write_text_atomically;
using sb::test::read_bytes;
using sb::test::TempDir;

namespace {

// The directory's entries: the target and nothing else is left after a failed write.
size_t entries(const fs::path& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

// A failed write left `path` holding `previous` byte for byte and nothing else in `dir`.
void check_left_as_before(const fs::path& dir, const std::string& path,
                          const std::string& previous) {
  CHECK(read_bytes(path) == previous);
  CHECK(entries(dir) == 1);
}

// Files may grow to `bytes` while alive; the soft limit only, so it can be raised back.
struct FileSizeLimit {
  rlimit old{};
  explicit FileSizeLimit(rlim_t bytes) {
    ::signal(SIGXFSZ, SIG_IGN);
    ::getrlimit(RLIMIT_FSIZE, &old);
    rlimit lim = old;
    lim.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &lim);
  }
  ~FileSizeLimit() { ::setrlimit(RLIMIT_FSIZE, &old); }
};

// Runs `write` with files limited to 4096 bytes (a full disk part-way through a larger write) and
// returns the sb::WriteError's message, checking that the error names `path`; "" if none came.
template <class Write>
std::string message_on_full_disk(const std::string& path, Write write) {
  const FileSizeLimit limit(4096);
  try {
    write();
  } catch (const sb::WriteError& e) {
    CHECK(e.file() == path);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("an atomic text write replaces the file with the whole new text",
          "[runkit][atomic_write]") {
  const TempDir dir("atomic_ok");
  const std::string path = (dir / "final.json").string();
  write_text_atomically(path, "old\n");
  write_text_atomically(path, std::string(100000, 'x'));
  CHECK(read_bytes(path) == std::string(100000, 'x'));
  CHECK(entries(dir) == 1);
}

TEST_CASE("a full disk during an atomic write leaves the previous file and names the final path",
          "[runkit][atomic_write]") {
  const TempDir dir("atomic_full");
  const std::string path = (dir / "final.json").string();
  write_text_atomically(path, "previous\n");
  // The 100 kB text fails part-way.
  std::string message =
      message_on_full_disk(path, [&] { write_text_atomically(path, std::string(100000, 'y')); });
  INFO(message);
  CHECK(message.rfind(path + ": not written: write failed", 0) == 0);
  CHECK(message.find("is the disk full?") != std::string::npos);
  check_left_as_before(dir, path, "previous\n");

  // The same through write_atomically with another writer (as the checkpoint's torch archive).
  message = message_on_full_disk(path, [&] {
    write_atomically(path, [&](const std::string& tmp) {
      sb::runkit::write_bytes(tmp, path, {std::string(3000, 'a'), std::string(3000, 'b')});
    });
  });
  CHECK(message.rfind(path + ": not written", 0) == 0);
  check_left_as_before(dir, path, "previous\n");
}

TEST_CASE("a writer's own exception leaves the previous file and no temporary file",
          "[runkit][atomic_write]") {
  const TempDir dir("atomic_throw");
  const std::string path = (dir / "checkpoint.pt").string();
  write_text_atomically(path, "previous");
  CHECK_THROWS_AS(write_atomically(path,
                                   [&](const std::string& tmp) {
                                     sb::runkit::write_bytes(tmp, path, {"half"});
                                     throw std::logic_error("the writer failed");
                                   }),
                  std::logic_error);
  check_left_as_before(dir, path, "previous");
}
