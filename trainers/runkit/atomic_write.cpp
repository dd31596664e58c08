#include "trainers/runkit/atomic_write.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace sb::runkit {

namespace fs = std::filesystem;

void write_atomically(const std::string& path,
                      const std::function<void(const std::string&)>& write) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  try {
    write(tmp);
    fs::rename(tmp, path);
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
}

void write_text_atomically(const std::string& path, const std::string& text) {
  write_atomically(path, [&](const std::string& tmp) {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out.flush()) throw std::runtime_error(tmp + ": cannot write");
  });
}

}  // namespace sb::runkit
