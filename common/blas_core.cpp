#include "common/blas_core.h"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace sb::blas {
namespace {

// OpenBLAS's x86-64 core names by family (driver/others/dynamic.c's corename table).
const std::vector<std::pair<std::string, int>>& families() {
  static const std::vector<std::pair<std::string, int>> table = {
      {"Prescott", 0},     {"Katmai", 0},         {"Coppermine", 0},
      {"Northwood", 0},    {"Banias", 0},         {"Atom", 0},
      {"Core2", 0},        {"Penryn", 0},         {"Dunnington", 0},
      {"Nehalem", 0},      {"Athlon", 0},         {"Opteron", 0},
      {"Opteron_SSE3", 0}, {"Barcelona", 0},      {"Nano", 0},
      {"Bobcat", 0},       {"Sandybridge", 1},    {"Bulldozer", 1},
      {"Piledriver", 1},   {"Steamroller", 1},    {"Haswell", 2},
      {"Zen", 2},          {"Excavator", 2},      {"SkylakeX", 3},
      {"Cooperlake", 4},   {"SapphireRapids", 4},
  };
  return table;
}

const char* const kFamilyCore[] = {"Prescott", "Sandybridge", "Haswell", "SkylakeX", "Cooperlake"};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

}  // namespace

CpuFlags cpu_flags() {
  CpuFlags f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return f;
  const bool osxsave = (c >> 27) & 1u;
  f.fma = (c >> 12) & 1u;
  f.avx = ((c >> 28) & 1u) && osxsave;
  // The OS must save the AVX (YMM) and AVX-512 (opmask, ZMM) state: XCR0 bits 1-2 and 5-7.
  unsigned long long xcr0 = 0;
  if (osxsave) {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
  }
  const bool ymm = (xcr0 & 0x6) == 0x6, zmm = (xcr0 & 0xe6) == 0xe6;
  f.avx = f.avx && ymm;
  f.fma = f.fma && ymm;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) != 0) {
    f.avx2 = ((b >> 5) & 1u) && ymm;
    f.avx512f = ((b >> 16) & 1u) && zmm;
    f.avx512dq = ((b >> 17) & 1u) && zmm;
    f.avx512cd = ((b >> 28) & 1u) && zmm;
    f.avx512bw = ((b >> 30) & 1u) && zmm;
    f.avx512vl = ((b >> 31) & 1u) && zmm;
  }
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d) != 0) f.avx512_bf16 = ((a >> 5) & 1u) && zmm;
#endif
  return f;
}

CpuFlags parse_flags(const std::string& list) {
  CpuFlags f;
  std::stringstream in(list);
  std::string name;
  while (std::getline(in, name, ',')) {
    name = lower(name);
    if (name == "avx") f.avx = true;
    if (name == "avx2") f.avx2 = true;
    if (name == "fma") f.fma = true;
    if (name == "avx512f") f.avx512f = true;
    if (name == "avx512cd") f.avx512cd = true;
    if (name == "avx512bw") f.avx512bw = true;
    if (name == "avx512dq") f.avx512dq = true;
    if (name == "avx512vl") f.avx512vl = true;
    if (name == "avx512_bf16") f.avx512_bf16 = true;
  }
  return f;
}

int core_family(const std::string& core) {
  const std::string key = lower(core);
  for (const auto& [name, family] : families())
    if (lower(name) == key) return family;
  return -1;
}

int best_family(const CpuFlags& f) {
  const bool avx512 = f.avx512f && f.avx512cd && f.avx512bw && f.avx512dq && f.avx512vl;
  if (avx512 && f.avx512_bf16) return 4;
  if (avx512) return 3;
  if (f.avx2 && f.fma) return 2;
  if (f.avx) return 1;
  return 0;
}

std::optional<std::string> better_core(const std::string& chosen, const CpuFlags& flags) {
  const int have = core_family(chosen);
  const int best = best_family(flags);
  if (have < 0 || have >= best) return std::nullopt;
  return std::string(kFamilyCore[best]);
}

std::string BlasInfo::summary() const {
  return library + ", core " + core + ", " + std::to_string(threads) + " thread" +
         (threads == 1 ? "" : "s");
}

BlasInfo blas_info() {
  BlasInfo info;
  const char* config = openblas_get_config();
  const char* core = openblas_get_corename();
  info.library = config ? config : "unknown BLAS";
  while (!info.library.empty() && info.library.back() == ' ') info.library.pop_back();
  info.core = core ? core : "unknown";
  info.threads = openblas_get_num_threads();
  return info;
}

std::optional<Upgrade> pending_upgrade() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr) return std::nullopt;  // the user's choice wins
  std::string core;
  CpuFlags flags;
  if (const char* fake = std::getenv("SB_BLAS_FAKE")) {
    const std::string spec = fake;
    const auto colon = spec.find(':');
    core = spec.substr(0, colon);
    flags = parse_flags(colon == std::string::npos ? "" : spec.substr(colon + 1));
  } else {
    const char* name = openblas_get_corename();
    core = name ? name : "";
    flags = cpu_flags();
  }
  const auto better = better_core(core, flags);
  if (!better) return std::nullopt;
  return Upgrade{core, *better};
}

void use_best_core(char** argv) {
  if (std::getenv("SB_BLAS_RESTARTED") != nullptr) return;  // we are the restarted process
  const auto upgrade = pending_upgrade();
  if (!upgrade) return;
  const std::string& core = upgrade->core;
  const std::string& better = upgrade->better;
  const char* program = argv && argv[0] ? argv[0] : "program";
  const char* base = std::strrchr(program, '/');
  base = base ? base + 1 : program;
  bool quiet = false;
  for (char** a = argv ? argv + 1 : nullptr; a && *a; ++a)
    quiet = quiet || std::strcmp(*a, "--quiet") == 0;
  if (!quiet)
    std::fprintf(stderr,
                 "%s: OpenBLAS chose its generic '%s' kernels on a CPU that runs '%s' ones; "
                 "restarting with OPENBLAS_CORETYPE=%s (set OPENBLAS_CORETYPE to choose "
                 "yourself)\n",
                 base, core.c_str(), better.c_str(), better.c_str());
  std::fflush(stderr);
  setenv("OPENBLAS_CORETYPE", better.c_str(), 1);
  setenv("SB_BLAS_RESTARTED", "1", 1);
  execv("/proc/self/exe", argv);
  std::fprintf(stderr, "%s: could not restart (%s); going on with the '%s' kernels\n", base,
               std::strerror(errno), core.c_str());
  unsetenv("OPENBLAS_CORETYPE");
}

}  // namespace sb::blas
