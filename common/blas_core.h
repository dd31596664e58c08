#pragma once
// Which OpenBLAS kernels this process runs, and the start-up step that gets the fast ones.
//
// A DYNAMIC_ARCH OpenBLAS picks its kernel family ("core") once, when the library is loaded,
// from the CPU's cpuid; OPENBLAS_CORETYPE, read at that moment, overrides the choice. An OpenBLAS
// older than the CPU does not know it and falls back to a generic SSE3 core: Debian 12's 0.3.21
// on Sapphire-Rapids-class Xeons reports `Core: Prescott` (OPENBLAS_VERBOSE=2), no AVX at all.
// Since the choice is made before main, the only remedy inside the program is to start again:
// use_best_core() compares the chosen core's family with the best family the CPU's flags allow
// and, when the CPU allows a better one, re-executes the same binary with OPENBLAS_CORETYPE set.
// A user's own OPENBLAS_CORETYPE always wins (nothing is checked or changed then).
//
// Families, lowest first (OpenBLAS's core names for x86-64; the kernels each family uses need
// the flags listed, so a family is allowed when the CPU has all of them):
//   0 generic  Prescott, Core2, Penryn, Dunnington, Nehalem, Atom, Opteron, Barcelona, Bobcat, ...
//   1 AVX      Sandybridge, Bulldozer, Piledriver, Steamroller      (avx)
//   2 AVX2     Haswell, Zen, Excavator                             (avx2, fma)
//   3 AVX-512  SkylakeX                                            (avx512 f, cd, bw, dq, vl)
//   4 BF16     Cooperlake, SapphireRapids                          (the above + avx512_bf16)
// The best allowed family is spelled by its first name (Prescott is never chosen by us).

#include <optional>
#include <string>

namespace sb::blas {

/// The cpuid flags that decide the kernel family.
struct CpuFlags {
  bool avx = false, avx2 = false, fma = false;
  bool avx512f = false, avx512cd = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512_bf16 = false;
};

/// The running CPU's flags (cpuid; an all-false set on other architectures).
CpuFlags cpu_flags();

/// Parses a comma-separated flag list as written in /proc/cpuinfo ("avx2,fma,avx512f,...");
/// unknown names are ignored. Used by the test hook below and by tests.
CpuFlags parse_flags(const std::string& list);

/// The family (0-4 above) of an OpenBLAS core name, or -1 for a name not listed (an unknown or
/// non-x86 core: left alone).
int core_family(const std::string& core);

/// The best family `flags` allow (0-4).
int best_family(const CpuFlags& flags);

/// The decision: the OPENBLAS_CORETYPE to restart with when `chosen` is a known core whose
/// family is below best_family(flags); nullopt otherwise.
std::optional<std::string> better_core(const std::string& chosen, const CpuFlags& flags);

/// What this process's BLAS is: the library and its build ("OpenBLAS 0.3.21 DYNAMIC_ARCH ..."),
/// the core it runs and its thread count. For every result's metadata and benchmark header.
struct BlasInfo {
  std::string library;
  std::string core;
  int threads = 0;
  std::string summary() const;  ///< "OpenBLAS 0.3.21 ..., core Haswell, 2 threads"
};
BlasInfo blas_info();

/// The decision for this process: nullopt when OPENBLAS_CORETYPE is set (the user's choice) or
/// when the loaded core is already the CPU's best family; else {loaded core, better core}.
/// Test hook: SB_BLAS_FAKE="CORE:FLAG,FLAG,..." replaces the detected core and flags.
struct Upgrade {
  std::string core, better;
};
std::optional<Upgrade> pending_upgrade();

/// At the top of every main, before any other work: when OPENBLAS_CORETYPE is unset and
/// better_core(the loaded core, cpu_flags()) names a core, says so in one line on stderr (not
/// when an argument is --quiet: the programs that take it promise silence) and re-executes
/// /proc/self/exe with the same arguments and OPENBLAS_CORETYPE set (and SB_BLAS_RESTARTED=1, so
/// that a second start never loops). Returns normally otherwise, or when the re-execution fails
/// (said in one line; the program goes on with the generic core).
void use_best_core(char** argv);

}  // namespace sb::blas
