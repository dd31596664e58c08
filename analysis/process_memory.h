#pragma once
// What the process may still allocate and what it has used: the facts rank_analysis's memory
// planning (analyse.h, plan_analysis) and its results (peak_rss_mib) read from the system.

#include <string>

namespace sb::analysis {

/// The memory this process can still allocate: the smallest of /proc/meminfo's MemAvailable, a
/// cgroup v2 limit (memory.max less memory.current) and RLIMIT_AS less the address space in use.
struct MemoryLimit {
  double bytes = 0;
  std::string what;  ///< names the limit in messages: "available (MemAvailable)", ...
};
MemoryLimit available_memory();

/// The process's peak resident set so far (getrusage: kilobytes on Linux), in MiB.
double peak_rss_mib();

}  // namespace sb::analysis
