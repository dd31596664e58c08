// One trainer per run directory (trainers/runkit/run_lock.h): a second holder is refused with the
// first one's pid, program and host in the message; a SIGKILLed holder leaves no stale lock; a
// run directory whose parent does not exist yet takes no lock and creates nothing.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "common/errors.h"
#include "trainers/runkit/run_lock.h"

namespace fs = std::filesystem;
using sb::runkit::RunDirLock;

namespace {

// A child process that holds the lock of `run` until killed; returns its pid once it holds it.
pid_t holder(const std::string& run) {
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    try {
      const RunDirLock lock(run, "first_trainer");
      char ok = 1;
      if (::write(ready[1], &ok, 1) != 1) ::_exit(3);
      for (;;) ::pause();
    } catch (...) {
      ::_exit(2);
    }
  }
  ::close(ready[1]);
  char ok = 0;
  REQUIRE(::read(ready[0], &ok, 1) == 1);
  ::close(ready[0]);
  return pid;
}

}  // namespace

TEST_CASE("a run directory in use refuses a second trainer, naming the holder, until it dies",
          "[runkit][run_lock]") {
  const fs::path root = fs::temp_directory_path() / ("sb_run_lock" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  const std::string run = (root / "softmax_s141").string();
  const pid_t pid = holder(run);
  std::string message;
  try {
    const RunDirLock second(run, "second_trainer");
  } catch (const sb::WriteError& e) {
    message = e.what();
    CHECK(e.file() == run);
  }
  INFO(message);
  CHECK(message.rfind(run + " is in use by pid " + std::to_string(pid) + " on ", 0) == 0);
  CHECK(message.find("(first_trainer, since ") != std::string::npos);
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK_NOTHROW(RunDirLock(run, "third_trainer"));  // never stale
  CHECK(RunDirLock::path_of(run) == (root / ".softmax_s141.lock").string());
  CHECK(!fs::exists(run));  // the lock lives beside the run directory, which it does not create
  fs::remove_all(root);
}

TEST_CASE("a run directory without a parent yet takes no lock and creates nothing",
          "[runkit][run_lock]") {
  const fs::path missing = fs::temp_directory_path() / "sb_no_such_parent_dir" / "run";
  fs::remove_all(missing.parent_path());
  CHECK_NOTHROW(RunDirLock(missing.string(), "trainer"));
  CHECK(!fs::exists(missing.parent_path()));
}
