#pragma once
// The fuzz input as a file, for the readers that take a path (NpyMatrix, read_idx, the HDF5
// reader): one file in /dev/shm (memory; $TMPDIR or /tmp where there is none), created once per
// process, rewritten for every input through its open descriptor and removed at a normal exit. It
// has a real name: HDF5 resolves the path it is given, which rules out /proc/self/fd/<n> of a
// memfd.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace sb::fuzz {

class ScratchFile {
 public:
  /// `suffix`: the file name's end, e.g. ".h5".
  explicit ScratchFile(const std::string& suffix) {
    const char* tmp = std::getenv("TMPDIR");
    const std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : tmp ? tmp : "/tmp";
    std::string name = dir + "/sb-fuzz-XXXXXX" + suffix;
    std::vector<char> buf(name.begin(), name.end());
    buf.push_back('\0');
    fd_ = mkstemps(buf.data(), static_cast<int>(suffix.size()));
    if (fd_ < 0) fail("mkstemps");
    path_ = buf.data();
  }
  ~ScratchFile() {
    close(fd_);
    unlink(path_.c_str());
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  /// Replaces the contents with data[0, size); returns the file's path.
  const std::string& write(const uint8_t* data, size_t size) {
    if (ftruncate(fd_, 0) != 0) fail("ftruncate");
    size_t done = 0;
    while (done < size) {
      const ssize_t n = pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (n <= 0) fail("pwrite");
      done += static_cast<size_t>(n);
    }
    return path_;
  }

 private:
  [[noreturn]] static void fail(const char* what) {
    std::perror(what);
    std::abort();
  }

  int fd_ = -1;
  std::string path_;
};

}  // namespace sb::fuzz
