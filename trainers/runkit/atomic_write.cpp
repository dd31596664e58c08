#include "trainers/runkit/atomic_write.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/errors.h"

namespace sb::runkit {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& shown, const std::string& what, int err) {
  throw sb::WriteError(
      shown, shown + ": not written: " + what + " (" + std::strerror(err) + "); is the disk full?");
}

// fsync through a descriptor of its own: the writer (torch's serializer, an ofstream) has closed
// its file; the kernel reports a writeback error to the next fsync of the file.
void sync_file(const std::string& tmp, const std::string& shown) {
  const int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(shown, "cannot reopen " + tmp, errno);
  const int synced = ::fsync(fd), err = errno;
  if (::close(fd) != 0 && synced == 0) fail(shown, "close after fsync failed", errno);
  if (synced != 0) fail(shown, "fsync failed", err);
}

}  // namespace

void write_atomically(const std::string& path,
                      const std::function<void(const std::string&)>& write) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  try {
    write(tmp);
    sync_file(tmp, path);
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec)
      throw sb::WriteError(
          path, path + ": not written: cannot rename " + tmp + " (" + ec.message() + ")");
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
}

void write_bytes(const std::string& tmp, const std::string& shown,
                 std::initializer_list<std::string_view> parts) {
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(shown, "cannot create " + tmp, errno);
  for (std::string_view part : parts) {
    while (!part.empty()) {
      const ssize_t n = ::write(fd, part.data(), part.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : EIO;
        ::close(fd);
        fail(shown, "write failed", err);
      }
      part.remove_prefix(static_cast<size_t>(n));
    }
  }
  if (::close(fd) != 0) fail(shown, "close failed", errno);
}

void write_text_atomically(const std::string& path, const std::string& text) {
  write_atomically(path, [&](const std::string& tmp) { write_bytes(tmp, path, {text}); });
}

}  // namespace sb::runkit
