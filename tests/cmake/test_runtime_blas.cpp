// Every binary must run on the OpenMP OpenBLAS: the pthread build, Debian's default, runs its own
// thread pool beside LibTorch's OpenMP one and oversubscribes the cores (bench_blas_threads).

#include <fstream>
#include <string>

#include <torch/torch.h>
#include <catch2/catch.hpp>

TEST_CASE("runtime: the OpenBLAS loaded into a test binary is the OpenMP build") {
#ifndef SB_OPENBLAS_OPENMP_DIR
  WARN("built without the OpenMP OpenBLAS (SB_OPENBLAS_OPENMP_DIR empty): nothing to check");
#else
  const auto a = torch::randn({64, 64});
  REQUIRE(torch::mm(a, a).isfinite().all().item<bool>());  // BLAS is loaded and used
  std::ifstream maps("/proc/self/maps");
  std::string line, blas;
  while (std::getline(maps, line))
    if (line.find("libopenblas") != std::string::npos ||
        line.find("libblas.so") != std::string::npos)
      blas += line.substr(line.find('/')) + "\n";
  INFO("loaded BLAS objects:\n" << blas);
  REQUIRE_FALSE(blas.empty());
  CHECK(blas.find(SB_OPENBLAS_OPENMP_DIR) != std::string::npos);
  CHECK(blas.find("openblas-pthread") == std::string::npos);
#endif
}
