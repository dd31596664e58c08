// common/blas_core.h: the decision to restart with a better OpenBLAS core (pure, on faked flags),
// the cpuid reading against /proc/cpuinfo (an independent source), and the restart itself through
// rank_analysis with a faked detection (SB_BLAS_FAKE), which must end on the named core and must
// never override a user's OPENBLAS_CORETYPE.
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "common/blas_core.h"

using sb::blas::best_family;
using sb::blas::better_core;
using sb::blas::core_family;
using sb::blas::parse_flags;

namespace {

const char* const kAvx512 = "avx,avx2,fma,avx512f,avx512cd,avx512bw,avx512dq,avx512vl";

struct Ran {
  int status = -1;
  std::string out;  // stdout and stderr together
};

Ran run(const std::string& command) {
  Ran r;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen((command + " 2>&1").c_str(), "r"), pclose);
  REQUIRE(pipe);
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0) r.out.append(buf.data(), n);
  r.status = pclose(pipe.release());
  return r;
}

// The JSON line rank_analysis --json prints last.
nlohmann::json last_json(const std::string& out) {
  std::istringstream in(out);
  std::string line, json;
  while (std::getline(in, line))
    if (!line.empty() && line.front() == '{') json = line;
  REQUIRE_FALSE(json.empty());
  return nlohmann::json::parse(json);
}

}  // namespace

TEST_CASE("blas core: a generic core on a CPU with a better family is upgraded to that family") {
  CHECK(better_core("Prescott", parse_flags("avx")) == "Sandybridge");
  CHECK(better_core("Prescott", parse_flags("avx,avx2,fma")) == "Haswell");
  CHECK(better_core("Prescott", parse_flags(kAvx512)) == "SkylakeX");
  CHECK(better_core("Prescott", parse_flags(std::string(kAvx512) + ",avx512_bf16")) ==
        "Cooperlake");
  CHECK(better_core("Nehalem", parse_flags("avx,avx2,fma")) == "Haswell");
  CHECK(better_core("Zen", parse_flags(kAvx512)) == "SkylakeX");  // family 2 < 3
}

TEST_CASE("blas core: a core already at the CPU's best family, or unknown, is left alone") {
  CHECK_FALSE(better_core("Haswell", parse_flags("avx,avx2,fma")));
  CHECK_FALSE(better_core("Zen", parse_flags("avx,avx2,fma")));
  CHECK_FALSE(better_core("Cooperlake", parse_flags(kAvx512)));  // better than the flags say
  CHECK_FALSE(better_core("Prescott", parse_flags("sse3,ssse3")));
  CHECK_FALSE(better_core("NeoverseN1", parse_flags(kAvx512)));  // not an x86 core: -1
  CHECK(core_family("neoversen1") == -1);
  CHECK(core_family("HASWELL") == 2);  // names compare without case
}

TEST_CASE("blas core: every AVX-512 flag is needed for the AVX-512 family, FMA for AVX2") {
  CHECK(best_family(parse_flags("avx,avx2")) == 1);  // no FMA: Haswell's kernels use it
  CHECK(best_family(parse_flags("avx,avx2,fma,avx512f,avx512cd,avx512bw,avx512dq")) == 2);
  CHECK(best_family(parse_flags(std::string(kAvx512) + ",avx512_bf16")) == 4);
  CHECK(best_family(parse_flags("avx512_bf16")) == 0);
}

TEST_CASE("blas core: cpuid gives the family that /proc/cpuinfo's flags give") {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(cpuinfo, line))
    if (line.rfind("flags", 0) == 0) {
      flags = line.substr(line.find(':') + 1);
      break;
    }
  if (flags.empty()) {
    WARN("no flags line in /proc/cpuinfo: nothing to compare");
    return;
  }
  std::istringstream words(flags);
  std::string word, list;
  while (words >> word) list += word + ",";
  CHECK(best_family(sb::blas::cpu_flags()) == best_family(parse_flags(list)));
}

TEST_CASE("blas core: a faked generic detection restarts rank_analysis on the better core, once") {
  const std::string file = "/tmp/sb_test_blas_core_" + std::to_string(::getpid()) + ".npy";
  {  // a 3 x 4 float64 .npy: any matrix does, the test is about the start-up
    std::ofstream out(file, std::ios::binary);
    std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }";
    header.append(128 - 10 - header.size() - 1, ' ');  // magic + length + header: 128 bytes
    header += '\n';
    out.write("\x93NUMPY\x01\x00", 8);
    const char len[2] = {static_cast<char>(header.size()), 0};
    out.write(len, 2);
    out << header;
    for (int i = 0; i < 12; ++i) {
      const double v = -1.0 - 0.25 * i * i;
      out.write(reinterpret_cast<const char*>(&v), sizeof v);
    }
  }
  const std::string bin = SB_RANK_ANALYSIS;
  // Haswell is this test's target: every x86-64 CI machine with AVX2 runs it safely.
  const std::string fake = "SB_BLAS_FAKE=Prescott:avx,avx2,fma";
  const auto restarted = run("env -u OPENBLAS_CORETYPE -u SB_BLAS_RESTARTED " + fake + " " + bin +
                             " --head softmax --d 2 --bias 1 --json " + file);
  CHECK(restarted.status == 0);
  const std::string said =
      "OpenBLAS chose its generic 'Prescott' kernels on a CPU that runs "
      "'Haswell' ones; restarting with OPENBLAS_CORETYPE=Haswell";
  CHECK(restarted.out.find(said) != std::string::npos);
  CHECK(restarted.out.find(said) == restarted.out.rfind(said));  // said once: no second restart
  const auto j = last_json(restarted.out);
  CHECK(j["blas_core"] == "Haswell");
  // --quiet: restarted all the same, without the line.
  const auto quiet = run("env -u OPENBLAS_CORETYPE -u SB_BLAS_RESTARTED " + fake + " " + bin +
                         " --quiet --head softmax --d 2 --bias 1 --json " + file);
  CHECK(quiet.status == 0);
  CHECK(quiet.out.find("restarting") == std::string::npos);
  CHECK(last_json(quiet.out)["blas_core"] == "Haswell");
  CHECK(j["blas_library"].get<std::string>().rfind("OpenBLAS", 0) == 0);

  const auto user = run("env -u SB_BLAS_RESTARTED OPENBLAS_CORETYPE=Prescott " + fake + " " + bin +
                        " --head softmax --d 2 --bias 1 --json " + file);
  CHECK(user.status == 0);
  CHECK(user.out.find("restarting") == std::string::npos);  // the user's variable wins
  CHECK(last_json(user.out)["blas_core"] == "Prescott");
  std::remove(file.c_str());
}
