// The IDX reader (datasets/idx_file.h) and the MNIST-layout loader (datasets/image_dataset.h) on
// the files of the Debian package dataset-fashion-mnist, checked against Python's gzip module,
// and on corrupted copies: every problem is one line naming the file and the field.

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

#include "common/errors.h"
#include "datasets/idx_file.h"
#include "datasets/image_dataset.h"
#include "tests/fixtures/error_of.h"
#include "tests/fixtures/fashion_mnist_or_skip.h"
#include "tests/fixtures/run_command.h"
#include "tests/fixtures/temp_dir.h"

using namespace sb::data;
namespace fs = std::filesystem;

using namespace sb::test;  // tests/fixtures/

namespace {

std::vector<char> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& p, const std::vector<char>& bytes) {
  std::ofstream(p, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// A plain (uncompressed) IDX file of unsigned bytes.
std::vector<char> idx_bytes(std::vector<uint32_t> dims, const std::vector<uint8_t>& data,
                            uint8_t type = 0x08) {
  std::vector<char> out{0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (const auto d : dims)
    for (int shift = 24; shift >= 0; shift -= 8)
      out.push_back(static_cast<char>((d >> shift) & 0xff));
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

}  // namespace

TEST_CASE("idx reader: the package's gzip files read as Python's gzip module reads them", "[idx]") {
  SB_FASHION_MNIST_OR_SKIP(dir);
  for (const auto* stem : {"t10k-labels-idx1-ubyte", "t10k-images-idx3-ubyte"}) {
    const auto path = idx_path(dir, stem);
    const bool images = std::string(stem).find("images") != std::string::npos;
    const auto a = read_idx(path, images ? 3 : 1);
    // Independent decoding: Python's gzip module; byte count after the header and byte sum.
    int status = 0;
    const auto out = sb::test::run(
        "/usr/bin/python3 -c \"import gzip,sys; d=gzip.open(sys.argv[1]).read(); "
        "h=4+4*d[3]; print(len(d)-h, sum(d[h:]), d[h+7])\" " +
            path,
        &status);
    REQUIRE(status == 0);
    std::istringstream fields(out);
    int64_t n = 0, sum = 0, eighth = 0;
    fields >> n >> sum >> eighth;
    int64_t our_sum = 0;
    for (const auto b : a.data) our_sum += b;
    CHECK(static_cast<int64_t>(a.data.size()) == n);
    CHECK(our_sum == sum);
    CHECK(a.data[7] == eighth);
    if (images) {
      CHECK(a.dims == std::vector<int64_t>{10000, 28, 28});
    } else {
      CHECK(a.dims == std::vector<int64_t>{10000});
    }
  }
}

TEST_CASE("idx reader: the Fashion-MNIST package loads as 60000 + 10000 labelled 28x28 images",
          "[idx]") {
  SB_FASHION_MNIST_DATASET_OR_SKIP(ds);
  CHECK(ds.train.images.sizes() == torch::IntArrayRef({60000, 28, 28}));
  CHECK(ds.test.images.sizes() == torch::IntArrayRef({10000, 28, 28}));
  CHECK(ds.train.labels.size(0) == 60000);
  // Fashion-MNIST is balanced: 6000 training and 1000 test images per class (Xiao et al. 2017).
  const auto counts = torch::bincount(ds.test.labels);
  CHECK(counts.size(0) == 10);
  CHECK(counts.eq(1000).all().item<bool>());
  CHECK(ds.classes.size() == 10);
}

TEST_CASE("idx reader: truncated and corrupted copies give one line naming the file and field",
          "[idx]") {
  const TempDir tmp("idx");
  const std::vector<uint8_t> labels(100, 3);

  const auto truncated = tmp / "truncated-labels";
  auto bytes = idx_bytes({100}, labels);
  bytes.resize(bytes.size() - 40);
  write_bytes(truncated, bytes);
  auto e = what_of([&] { read_idx(truncated.string(), 1); });
  CHECK(one_line(e));
  CHECK(e == truncated.string() + ": data: expected 100 bytes (100), got 60 (truncated file)");

  const auto wrong_magic = tmp / "images-as-labels";
  write_bytes(wrong_magic, idx_bytes({10, 2, 5}, std::vector<uint8_t>(100, 1)));
  e = what_of([&] { read_idx(wrong_magic.string(), 1); });
  CHECK(e == wrong_magic.string() +
                 ": magic: expected 0x00000801 (unsigned bytes, 1 dimensions), got 0x00000803");

  const auto floats = tmp / "float-labels";
  write_bytes(floats, idx_bytes({100}, labels, /*type=*/0x0D));
  e = what_of([&] { read_idx(floats.string(), 1); });
  CHECK(e.find(floats.string() + ": magic: expected 0x00000801") == 0);
  CHECK(e.find("got 0x00000D01") != std::string::npos);

  const auto not_idx = tmp / "text";
  write_bytes(not_idx, {'h', 'e', 'l', 'l', 'o', '\n'});
  e = what_of([&] { read_idx(not_idx.string(), 1); });
  CHECK(e.find(": magic: ") != std::string::npos);
  CHECK(e.find("(not an IDX file)") != std::string::npos);

  const auto empty = tmp / "empty";
  write_bytes(empty, {});
  CHECK(what_of([&] { read_idx(empty.string(), 1); }) ==
        empty.string() + ": magic: expected 4 bytes, got 0 (empty or truncated file)");

  const auto short_dims = tmp / "short-dims";
  write_bytes(short_dims, {0, 0, 8, 3, 0, 0, 0, 10, 0, 0});
  CHECK(what_of([&] { read_idx(short_dims.string(), 3); }) ==
        short_dims.string() + ": dims[1]: expected 4 bytes, got 2 (truncated file)");

  const auto extra = tmp / "extra";
  bytes = idx_bytes({100}, labels);
  bytes.push_back(0);
  write_bytes(extra, bytes);
  CHECK(what_of([&] { read_idx(extra.string(), 1); }) ==
        extra.string() + ": data: expected the end of the file after 100 bytes (100), found more");

  const auto missing = tmp / "missing";
  CHECK(what_of([&] { read_idx(missing.string(), 1); }) ==
        missing.string() + ": cannot open (no such file)");

  // Each of these is a file not of the format (sb::FormatError), the file named in file().
  for (const auto& bad : {truncated, wrong_magic, not_idx, empty, short_dims, extra, missing})
    CHECK_THROWS_AS(read_idx(bad.string(), bad == short_dims ? 3 : 1), sb::FormatError);
  try {
    read_idx(empty.string(), 1);
    FAIL("an empty file is refused");
  } catch (const sb::FormatError& err) {
    CHECK(err.file() == empty.string());
    CHECK(err.field() == "magic");
    CHECK(err.expected() == "4 bytes");
  }
}

TEST_CASE("idx reader: a cut or damaged copy of the package's gzip file is named, not misread",
          "[idx]") {
  SB_FASHION_MNIST_OR_SKIP(dir);
  const TempDir tmp("idx_gz");
  const auto original = read_bytes(idx_path(dir, "t10k-images-idx3-ubyte"));
  REQUIRE(original.size() > 100000);

  auto cut = original;
  cut.resize(cut.size() / 2);
  const auto cut_path = tmp / "cut.gz";
  write_bytes(cut_path, cut);
  auto e = what_of([&] { read_idx(cut_path.string(), 3); });
  CHECK(one_line(e));
  CHECK(e.find(cut_path.string() + ": data: expected 7840000 bytes (10000 x 28 x 28), got ") == 0);
  CHECK(e.find("(truncated file)") != std::string::npos);

  // Flip bytes in the middle of the deflate stream: zlib reports invalid data or a bad CRC.
  auto damaged = original;
  for (size_t i = damaged.size() / 2; i < damaged.size() / 2 + 64; ++i) damaged[i] ^= 0x5a;
  const auto damaged_path = tmp / "damaged.gz";
  write_bytes(damaged_path, damaged);
  e = what_of([&] { read_idx(damaged_path.string(), 3); });
  CHECK(one_line(e));
  CHECK(e.find(damaged_path.string() + ": ") == 0);
  // Which one depends on where inflate notices: invalid codes, a bad CRC at the end, a stream
  // that ends early or runs long. Any of them, never a silent read.
  CHECK((e.find(": gzip: ") != std::string::npos ||
         e.find("(truncated file)") != std::string::npos ||
         e.find("found more") != std::string::npos));
}

TEST_CASE("image dataset: labels out of range, mismatched counts and other sizes are named",
          "[idx]") {
  const TempDir tmp("idx_set");
  const auto write_set = [&](const fs::path& d, uint32_t n_images, uint32_t n_labels, uint8_t label,
                             uint32_t side = 28) {
    fs::create_directories(d);
    const std::vector<uint8_t> pixels(size_t{n_images} * side * side, 0);
    for (const auto* split : {"train", "t10k"}) {
      write_bytes(d / (std::string(split) + "-images-idx3-ubyte"),
                  idx_bytes({n_images, side, side}, pixels));
      write_bytes(d / (std::string(split) + "-labels-idx1-ubyte"),
                  idx_bytes({n_labels}, std::vector<uint8_t>(n_labels, label)));
    }
  };
  write_set(tmp / "ok", 5, 5, 9);
  const auto ok = load_image_dataset("mnist", (tmp / "ok").string());
  CHECK(ok.train.labels.sum().item<int64_t>() == 45);
  CHECK(ok.classes.front() == "0");

  write_set(tmp / "label", 5, 5, 10);
  CHECK(what_of([&] { load_image_dataset("mnist", (tmp / "label").string()); }) ==
        (tmp / "label" / "train-labels-idx1-ubyte").string() +
            ": labels: expected values in [0, 10), got 10 at item 0");

  write_set(tmp / "count", 5, 4, 1);
  CHECK(what_of([&] { load_image_dataset("mnist", (tmp / "count").string()); }) ==
        (tmp / "count" / "train-labels-idx1-ubyte").string() + ": dims[0]: expected 5 labels " +
            "(one per image of " + (tmp / "count" / "train-images-idx3-ubyte").string() +
            "), got 4");

  write_set(tmp / "side", 2, 2, 1, 32);
  CHECK(what_of([&] { load_image_dataset("mnist", (tmp / "side").string()); }) ==
        (tmp / "side" / "train-images-idx3-ubyte").string() +
            ": dims: expected 28 x 28 images, got 32 x 32");

  // Well-formed IDX files whose content does not fit: sb::InputError, not a FormatError.
  for (const char* set : {"label", "count", "side"}) {
    INFO(set);
    try {
      load_image_dataset("mnist", (tmp / set).string());
      FAIL("refused");
    } catch (const sb::FormatError&) {
      FAIL("a content error is not a format error");
    } catch (const sb::InputError& err) {
      CHECK(contains(err.file(), "-idx"));
    }
  }
}

TEST_CASE("image dataset: without the package the error names dataset-fashion-mnist", "[idx]") {
  const TempDir tmp("idx_missing");
  const auto e = what_of([&] { find_image_dataset_dir("fashion-mnist", "", tmp.string()); });
  CHECK(one_line(e));
  CHECK(e.find("Fashion-MNIST not found: " + (tmp / "train-images-idx3-ubyte.gz").string()) == 0);
  CHECK(e.find("install the Debian package dataset-fashion-mnist") != std::string::npos);
  CHECK(what_of([&] { find_image_dataset_dir("mnist", ""); }).find("pass --data DIR") !=
        std::string::npos);
  CHECK(what_of([&] { find_image_dataset_dir("mnist", (tmp / "nope").string()); }) ==
        (tmp / "nope").string() +
            ": data: expected a directory holding the four mnist IDX files "
            "(train-images-idx3-ubyte[.gz], ...), got no such path");
  CHECK_THROWS_AS(find_image_dataset_dir("fashion-mnist", "", tmp.string()), sb::FormatError);
  CHECK_THROWS_AS(find_image_dataset_dir("mnist", (tmp / "nope").string()), sb::FormatError);
  CHECK_THROWS_AS(find_image_dataset_dir("mnist", ""), sb::OptionError);
  CHECK_THROWS_AS(find_image_dataset_dir("cifar", ""), sb::OptionError);
  CHECK(what_of([&] { find_image_dataset_dir("cifar", ""); }) ==
        "dataset: expected fashion-mnist or mnist, got 'cifar'");
}

TEST_CASE(
    "idx reader: a header claiming 2 GiB in a tiny file is refused without allocating it (a "
    "fuzzer's find)",
    "[idx]") {
  // tests/bad_inputs/fuzz/: 1024 x 1024 x 2047 bytes claimed, 2 held. Before the reader read in
  // blocks it allocated the claimed size first and ran out of memory.
  const std::string path = SB_SOURCE_DIR "/tests/bad_inputs/fuzz/fuzz_idx_huge_claimed_size.idx";
  const auto msg = what_of([&] { sb::data::read_idx(path, 3); });
  CHECK(one_line(msg));
  CHECK(contains(msg, path + ": data: expected 2146435072 bytes (1024 x 1024 x 2047), got 2 "
                             "(truncated file)"));
}
