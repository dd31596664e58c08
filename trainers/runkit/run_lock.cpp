#include "trainers/runkit/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "common/errors.h"

namespace sb::runkit {

namespace fs = std::filesystem;

std::string RunDirLock::path_of(const std::string& run_dir) {
  fs::path dir = fs::path(run_dir).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();  // "results/x/" -> "results/x"
  const fs::path parent = dir.parent_path().empty() ? fs::path(".") : dir.parent_path();
  return (parent / ("." + dir.filename().string() + ".lock")).string();
}

RunDirLock::RunDirLock(const std::string& run_dir, const std::string& program) {
  const std::string path = path_of(run_dir);
  if (!fs::is_directory(fs::path(path).parent_path())) return;  // nothing there to protect
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw WriteError(
        path, path + ": cannot open the run directory's lock (" + std::strerror(errno) + ")");
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    char holder[512] = {0};
    const ssize_t n = ::pread(fd_, holder, sizeof holder - 1, 0);
    std::string who = n > 0 ? std::string(holder, static_cast<size_t>(n)) : "another process";
    while (!who.empty() && (who.back() == '\n' || who.back() == ' ')) who.pop_back();
    ::close(fd_);
    fd_ = -1;
    throw WriteError(run_dir, run_dir + " is in use by " + who +
                                  ": two trainers would mix their files; wait for it to finish "
                                  "or stop it (a killed holder's lock is released with it)");
  }
  char host[256] = "?";
  ::gethostname(host, sizeof host - 1);
  char since[32] = "?";
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  if (::gmtime_r(&now, &utc)) std::strftime(since, sizeof since, "%Y-%m-%d %H:%M:%S UTC", &utc);
  const std::string text = "pid " + std::to_string(::getpid()) + " on " + host + " (" + program +
                           ", since " + since + ")\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, text.data(), text.size(), 0) < 0) {
    // The holder's name is for the refusal's message only; the lock itself is held.
  }
}

RunDirLock::~RunDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace sb::runkit
