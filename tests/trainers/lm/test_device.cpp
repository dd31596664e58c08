// --device: auto picks CUDA exactly when it is there, asking for CUDA without it is a one-line
// error (exit 2 from the binaries), and weights/checkpoints are written from CPU copies in
// torch::nn::Module::save's layout and read onto the model's device. This machine has no GPU:
// the CUDA side of these paths (a CUDA checkpoint resuming on the CPU) is not exercised here.

#include <sys/wait.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/fixtures/file_bytes.h"
#include "tests/fixtures/run_command.h"
#include "tests/fixtures/temp_dir.h"
#include "trainers/lm/model.h"
#include "trainers/runkit/checkpoint.h"
#include "trainers/runkit/device.h"

using namespace sb;
using namespace sb::lm;
using namespace sb::runkit;
namespace fs = std::filesystem;
using sb::test::read_bytes;
using sb::test::TempDir;

namespace {

AwdLstm tiny_mos(uint64_t seed) {
  torch::manual_seed(seed);
  return AwdLstm(AwdLstmOptions(/*vocab_size=*/40, HeadSpec::parse("mos:K=3"))
                     .emsize(6)
                     .nhid(10)
                     .nhidlast(9)
                     .nlayers(2));
}

using sb::test::run;

}  // namespace

TEST_CASE("device: auto is cuda exactly when CUDA is available, cpu is the CPU") {
  CHECK(resolve_device("auto").is_cuda() == torch::cuda::is_available());
  CHECK(resolve_device("cpu") == torch::Device(torch::kCPU));
  CHECK(describe_device(torch::Device(torch::kCPU)) == "cpu");
  CHECK_THROWS_WITH(resolve_device("gpu"), "device must be auto, cpu, cuda or cuda:N, got \"gpu\"");
}

TEST_CASE("device: asking for cuda without CUDA is a one-line error naming the flag") {
  if (torch::cuda::is_available()) {
    WARN("CUDA is available here: the error path is not reachable, nothing to check");
    return;
  }
  for (const std::string name : {"cuda", "cuda:1"}) {
    std::string what;
    try {
      resolve_device(name);
    } catch (const std::runtime_error& e) {
      what = e.what();
    }
    CHECK(what.rfind("--device " + name + ": ", 0) == 0);
    CHECK(what.find('\n') == std::string::npos);
    // Which of the two reasons: this LibTorch has no CUDA, or it has but sees no GPU.
    CHECK(what.find(at::hasCUDA() ? "no CUDA GPU is visible" : "has no CUDA support") !=
          std::string::npos);
  }
}

TEST_CASE("device: train_wordlm and dyneval exit 2 with one line when --device cuda is missing") {
  if (torch::cuda::is_available()) {
    WARN("CUDA is available here: --device cuda is not an error, nothing to check");
    return;
  }
  const TempDir dir("device_cli");
  int status = 0;
  const auto train =
      run(std::string(SB_TRAIN_WORDLM) + " --device cuda --out " + (dir / "run").string() + " 2>&1",
          &status);
  CHECK(status == 2);
  CHECK(train.rfind("error: --device cuda: ", 0) == 0);
  CHECK(std::count(train.begin(), train.end(), '\n') == 1);
  CHECK_FALSE(fs::exists(dir / "run"));  // nothing written before the check

  std::ofstream(dir / "config.toml") << key_table().to_toml(WordLmConfig{});
  std::ofstream(dir / "best.pt") << "x";
  const auto dyn =
      run(std::string(SB_DYNEVAL) + " --run " + dir.string() + " --device cuda 2>&1", &status);
  CHECK(status == 2);
  CHECK(dyn.rfind("error: --device cuda: ", 0) == 0);
  const auto bad = run(std::string(SB_TRAIN_WORDLM) + " --device gpu 2>&1", &status);
  CHECK(status == 2);
  CHECK(bad.find("device must be auto, cpu, cuda or cuda:N, got \"gpu\"") != std::string::npos);
}

TEST_CASE(
    "checkpoint: weights are written in Module::save's layout, byte for byte, and load back") {
  const TempDir dir("device_weights");
  auto model = tiny_mos(/*seed=*/1);
  runkit::save_weights((dir / "ours.pt").string(), *model);  // from CPU copies
  torch::serialize::OutputArchive reference;
  model->save(reference);  // LibTorch's own writer
  // The zip names its records after the file's stem; save_weights writes "ours.pt.tmp.<pid>"
  // and renames it, so the reference gets the same stem, in another directory.
  fs::create_directories(dir / "ref");
  const auto ref = dir / "ref" / "ours.pt.tmp.0";
  reference.save_to(ref.string());
  CHECK(read_bytes(dir / "ours.pt") == read_bytes(ref));

  auto other = tiny_mos(/*seed=*/2);  // different initial weights
  runkit::load_weights((dir / "ours.pt").string(), *other);
  const auto a = model->named_parameters(), b = other->named_parameters();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].key() == b[i].key());
    CHECK(torch::equal(a[i].value(), b[i].value()));
    CHECK(b[i].value().device() == device_of(*other));  // read onto the model's device
  }
}
