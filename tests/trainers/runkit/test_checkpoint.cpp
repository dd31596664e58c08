// The one checkpoint format (trainers/runkit/checkpoint.h): a round trip, every way a file can be
// damaged or foreign refused in one line that names it (truncated, empty, random bytes, a bare
// LibTorch archive, a flipped payload byte caught by the checksum, another trainer's), weights of
// a model of another size refused by name and shape before loading, and the non-finite-loss
// message of the epoch loop pointing at the last good checkpoint.

#include <unistd.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "common/errors.h"
#include "tests/fixtures/error_of.h"
#include "tests/fixtures/file_bytes.h"
#include "tests/fixtures/temp_dir.h"
#include "trainers/runkit/checkpoint.h"
#include "trainers/runkit/epoch_trainer.h"
#include "trainers/runkit/interrupt.h"

using namespace sb;
using namespace sb::test;  // tests/fixtures/
namespace fs = std::filesystem;

namespace {

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void write_checkpoint(const fs::path& p, torch::nn::Module& model) {
  runkit::CheckpointWriter w("nplm", "lr = 0.1\n");
  w.module(model);
  w.put("epoch", int64_t{3});
  w.put("lr", 0.25);
  w.put("phase", std::string("main"));
  w.put("history", std::vector<double>{1.5, 2.5});
  w.put_tensors("carried", {torch::ones({2, 3})});
  w.save(p.string(), torch::kCPU);
}

/// The message of opening `p` as an nplm checkpoint (and reading the model and RNG).
std::string open_error(const fs::path& p, torch::nn::Module& model) {
  return what_of([&] {
    runkit::CheckpointReader r(p.string(), "nplm", torch::kCPU);
    r.load_module(model);
    r.restore_rng(torch::kCPU);
  });
}

/// What `f` prints on stderr.
template <class F>
std::string stderr_of(F&& f) {
  std::fflush(stderr);
  const int saved = dup(2);
  FILE* tmp = std::tmpfile();
  dup2(fileno(tmp), 2);
  f();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::rewind(tmp);
  std::string out;
  for (int c = std::fgetc(tmp); c != EOF; c = std::fgetc(tmp)) out.push_back(static_cast<char>(c));
  std::fclose(tmp);
  return out;
}

/// An epoch loop over a linear model whose loss turns NaN in epoch `bad_epoch`.
class NanTrainer : public runkit::EpochTrainer {
 public:
  NanTrainer(const std::string& dir, int64_t bad_epoch)
      : EpochTrainer("nplm", dir), bad_epoch_(bad_epoch) {
    state_.config = "x = 1\n";
  }
  torch::nn::Linear model{2, 2};

 private:
  torch::nn::Module& module() override { return *model; }
  torch::optim::Optimizer* optimizer() override { return nullptr; }
  int64_t epochs() const override { return 3; }
  std::string config_toml() const override { return "x = 1\n"; }
  std::string normalise_saved_config(const std::string& saved) const override { return saved; }
  EpochEnd train_epoch() override {
    if (state_.epoch == bad_epoch_) return non_finite(std::nan(""));
    count_batch(1.0, 1);
    return EpochEnd::completed;
  }
  double validate() override { return 1.0; }
  void report_epoch(double, double, double) override {}
  void finish() override {}
  int64_t bad_epoch_;
};

}  // namespace

TEST_CASE("checkpoint: every field written is read back as written") {
  const TempDir dir("checkpoint_round_trip");
  torch::manual_seed(1);
  torch::nn::Linear a(4, 3), b(4, 3);
  write_checkpoint(dir / "c.pt", *a);
  runkit::CheckpointReader r((dir / "c.pt").string(), "nplm", torch::kCPU);
  CHECK(r.config() == "lr = 0.1\n");
  r.load_module(*b);
  CHECK(torch::equal(a->weight, b->weight));
  CHECK(r.get_int("epoch") == 3);
  CHECK(r.get_double("lr") == 0.25);
  CHECK(r.get_string("phase") == "main");
  CHECK(r.get_doubles("history") == std::vector<double>{1.5, 2.5});
  CHECK(torch::equal(r.get_tensors("carried").at(0), torch::ones({2, 3})));
  CHECK(contains(what_of([&] { r.get_int("lr"); }), "field 'state.lr': expected an integer"));
  CHECK(contains(what_of([&] { r.get_int("nothing"); }), "field 'state.nothing' is missing"));
  CHECK_THROWS_AS(r.get_int("lr"), InputError);
  CHECK_THROWS_AS(r.get_int("nothing"), InputError);
}

TEST_CASE(
    "checkpoint: a damaged or foreign file is refused in one line naming it and what is wrong") {
  const TempDir dir("checkpoint_damaged");
  torch::nn::Linear model(4, 3);
  write_checkpoint(dir / "good.pt", *model);
  const std::string good = read_bytes(dir / "good.pt");
  REQUIRE(good.size() > 200);

  struct Case {
    const char* name;
    std::string bytes;
    const char* expected;
  };
  std::string flipped = good;
  flipped[good.size() / 2] = static_cast<char>(flipped[good.size() / 2] ^ 0x10);  // a payload byte
  std::string random(1000, '\0');
  for (size_t i = 0; i < random.size(); ++i) random[i] = static_cast<char>((i * 7919 + 13) % 251);
  const Case cases[] = {
      {"empty.pt", "", "not a checkpoint of this project"},
      {"random.pt", random, "not a checkpoint of this project"},
      {"header_only.pt", good.substr(0, 12), "truncated: 12 bytes"},
      {"truncated.pt", good.substr(0, good.size() - 100), "truncated: the header announces"},
      {"trailing.pt", good + "xyz", "trailing bytes"},
      {"flipped.pt", flipped, "checksum mismatch"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    write_bytes(dir / c.name, c.bytes);
    const auto msg = open_error(dir / c.name, *model);
    CHECK(one_line(msg));
    CHECK(contains(msg, (dir / c.name).string() + ": "));
    CHECK(contains(msg, c.expected));
    CHECK_THROWS_AS(runkit::CheckpointReader((dir / c.name).string(), "nplm", torch::kCPU),
                    FormatError);
  }
  // A bare LibTorch archive (a weights file, or a checkpoint of the older format 1).
  runkit::save_weights((dir / "weights.pt").string(), *model);
  CHECK(contains(open_error(dir / "weights.pt", *model),
                 "a zip archive without the SBCKPT02 header"));
  // Another trainer's checkpoint.
  CHECK(contains(
      what_of([&] { runkit::CheckpointReader((dir / "good.pt").string(), "charlm", torch::kCPU); }),
      "written by train_nplm, not train_charlm"));
  // The good file still opens (the cases above did not touch it).
  CHECK(open_error(dir / "good.pt", *model) == "(no exception)");
}

TEST_CASE(
    "checkpoint: weights of a model of another size are refused by parameter name and shape "
    "before anything is loaded") {
  const TempDir dir("checkpoint_shapes");
  torch::nn::Linear small(16, 24), large(16, 32);
  const auto before = large->weight.clone();
  runkit::save_weights((dir / "best.pt").string(), *small);
  const auto msg = what_of([&] { runkit::load_weights((dir / "best.pt").string(), *large); });
  CHECK(one_line(msg));
  CHECK(contains(msg, (dir / "best.pt").string() +
                          ": parameter 'weight' has shape [24, 16] in the file, [32, 16] in "
                          "this model"));
  CHECK(torch::equal(large->weight, before));  // nothing loaded
  // A parameter the file lacks: a Linear without bias wrote no 'bias'.
  torch::nn::Linear no_bias(torch::nn::LinearOptions(16, 24).bias(false));
  runkit::save_weights((dir / "no_bias.pt").string(), *no_bias);
  CHECK(contains(what_of([&] { runkit::load_weights((dir / "no_bias.pt").string(), *small); }),
                 "parameter 'bias' is missing"));
  // A file that is no archive at all.
  write_bytes(dir / "junk.pt", "not an archive");
  const auto junk = what_of([&] { runkit::load_weights((dir / "junk.pt").string(), *small); });
  CHECK(one_line(junk));
  CHECK(contains(junk, "junk.pt: not a weights file of this project"));
  CHECK_THROWS_AS(runkit::load_weights((dir / "junk.pt").string(), *small), FormatError);
  CHECK_THROWS_AS(runkit::load_weights((dir / "best.pt").string(), *large), InputError);
}

TEST_CASE(
    "epoch loop: a non-finite loss names the last good checkpoint, or says there is none, and "
    "keeps it") {
  const TempDir dir("checkpoint_nan");
  {
    NanTrainer first((dir / "early").string(), /*bad_epoch=*/1);
    const auto err = stderr_of([&] { CHECK(first.run() == runkit::kNonFinite); });
    CHECK(contains(err, "No checkpoint was written before it in this run"));
    CHECK_FALSE(fs::exists(dir / "early" / "checkpoint.pt"));
  }
  NanTrainer late((dir / "late").string(), /*bad_epoch=*/3);
  const auto err = stderr_of([&] { CHECK(late.run() == runkit::kNonFinite); });
  INFO(err);
  CHECK(one_line(err.substr(0, err.size() - 1)));
  // Saved after epoch 2 (the counters already advanced to epoch 3, batch 0).
  CHECK(contains(err, "The last good checkpoint is " + (dir / "late" / "checkpoint.pt").string() +
                          " (epoch 3, batch 0"));
  CHECK(contains(err, "Start a new run"));
  runkit::CheckpointReader r((dir / "late" / "checkpoint.pt").string(), "nplm", torch::kCPU);
  CHECK(r.get_int("epoch") == 3);
}

TEST_CASE("checkpoint: FNV-1a 64 matches its published test vectors") {
  // From the FNV reference (Fowler, Noll, Vo): "" and "a".
  CHECK(runkit::fnv1a64("", 0) == 0xcbf29ce484222325ULL);
  CHECK(runkit::fnv1a64("a", 1) == 0xaf63dc4c8601ec8cULL);
  CHECK(runkit::fnv1a64("foobar", 6) == 0x85944171f73967e8ULL);
}
