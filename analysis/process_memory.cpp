#include "analysis/process_memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

namespace sb::analysis {

namespace {

// Reads "Key: value kB" lines (/proc/meminfo, /proc/self/status): the value in bytes, or -1.
double kib_field(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0)
      return 1024.0 * std::strtod(line.c_str() + key.size() + 1, nullptr);
  return -1;
}

// A number in a one-line file (cgroup's memory.max, memory.current), or -1 ("max", absent).
double number_file(const std::string& file) {
  std::ifstream in(file);
  std::string word;
  if (!(in >> word) || word.empty() || !std::isdigit(static_cast<unsigned char>(word[0])))
    return -1;
  return std::strtod(word.c_str(), nullptr);
}

}  // namespace

MemoryLimit available_memory() {
  MemoryLimit limit;
  auto consider = [&limit](double bytes, const std::string& what) {
    if (bytes < 0) return;
    if (limit.what.empty() || bytes < limit.bytes) limit = {std::max(0.0, bytes), what};
  };
  consider(kib_field("/proc/meminfo", "MemAvailable"), "available (MemAvailable)");
  if (limit.what.empty())
    consider(
        static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE)),
        "of physical memory");
  // cgroup v2: this process's group ("0::/path" in /proc/self/cgroup) caps it below the machine.
  std::ifstream groups("/proc/self/cgroup");
  for (std::string line; std::getline(groups, line);)
    if (line.rfind("0::", 0) == 0) {
      const std::string dir = "/sys/fs/cgroup" + line.substr(3);
      const double max = number_file(dir + "/memory.max");
      if (max >= 0)
        consider(max - std::max(0.0, number_file(dir + "/memory.current")),
                 "left under the cgroup's memory.max");
    }
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
    consider(
        static_cast<double>(as.rlim_cur) - std::max(0.0, kib_field("/proc/self/status", "VmSize")),
        "left under the address-space limit (ulimit -v)");
  return limit;
}

double peak_rss_mib() {
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<double>(usage.ru_maxrss) / 1024;
}

}  // namespace sb::analysis
