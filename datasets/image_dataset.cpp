#include "datasets/image_dataset.h"

#include <cstring>
#include <filesystem>

#include "common/errors.h"
#include "datasets/idx_file.h"

namespace sb::data {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kSide = 28;  // MNIST and Fashion-MNIST images are 28 x 28
constexpr int64_t kClasses = 10;

const char* const kStems[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                              "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

LabelledImages load_pair(const std::string& dir, const std::string& images_stem,
                         const std::string& labels_stem) {
  const auto images_path = idx_path(dir, images_stem);
  const auto labels_path = idx_path(dir, labels_stem);
  auto images = read_idx(images_path, /*expected_ndims=*/3);
  auto labels = read_idx(labels_path, /*expected_ndims=*/1);
  if (images.dims[1] != kSide || images.dims[2] != kSide)
    throw InputError(images_path, "dims", "28 x 28 images",
                     std::to_string(images.dims[1]) + " x " + std::to_string(images.dims[2]));
  if (labels.dims[0] != images.dims[0])
    throw InputError(
        labels_path, "dims[0]",
        std::to_string(images.dims[0]) + " labels (one per image of " + images_path + ")",
        std::to_string(labels.dims[0]));
  for (size_t i = 0; i < labels.data.size(); ++i)
    if (labels.data[i] >= kClasses)
      throw InputError(labels_path, "labels", "values in [0, 10)",
                       std::to_string(labels.data[i]) + " at item " + std::to_string(i));
  const int64_t n = images.dims[0];
  LabelledImages out;
  out.images = torch::empty({n, kSide, kSide}, torch::kUInt8);  // (N, 28, 28)
  std::memcpy(out.images.data_ptr<uint8_t>(), images.data.data(), images.data.size());
  out.labels = torch::empty({n}, torch::kUInt8);
  std::memcpy(out.labels.data_ptr<uint8_t>(), labels.data.data(), labels.data.size());
  out.labels = out.labels.to(torch::kLong);  // (N,)
  return out;
}

}  // namespace

std::string idx_path(const std::string& dir, const std::string& stem) {
  const auto gz = (fs::path(dir) / (stem + ".gz")).string();
  const auto plain = (fs::path(dir) / stem).string();
  std::error_code ec;
  if (fs::exists(gz, ec)) return gz;
  if (fs::exists(plain, ec)) return plain;
  throw FormatError::described(gz, "", gz + ": cannot open (no such file, nor " + plain + ")");
}

std::string find_image_dataset_dir(const std::string& dataset, const std::string& explicit_dir,
                                   const std::string& package_dir) {
  if (dataset != "fashion-mnist" && dataset != "mnist")
    throw OptionError("dataset", "fashion-mnist or mnist", "'" + dataset + "'");
  std::error_code ec;
  if (!explicit_dir.empty()) {
    if (!fs::is_directory(explicit_dir, ec))
      throw FormatError(explicit_dir, "data",
                        "a directory holding the four " + dataset +
                            " IDX files (train-images-idx3-ubyte[.gz], ...)",
                        fs::exists(explicit_dir, ec) ? "a file" : "no such path");
    return explicit_dir;
  }
  if (dataset == "mnist")
    throw OptionError::described(
        "--data",
        "dataset mnist: MNIST is not packaged; pass --data DIR, a directory holding its four IDX "
        "files (train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], "
        "t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz])");
  for (const char* stem : kStems) {
    const auto gz = (fs::path(package_dir) / (std::string(stem) + ".gz")).string();
    if (!fs::exists(gz, ec) && !fs::exists((fs::path(package_dir) / stem), ec))
      throw FormatError::described(gz, "",
                                   std::string("Fashion-MNIST not found: ") + gz +
                                       " is missing; install the Debian package " +
                                       kFashionMnistPackage + " (apt-get install " +
                                       kFashionMnistPackage +
                                       ", or `make deps`), or pass --data DIR");
  }
  return package_dir;
}

ImageDataset load_image_dataset(const std::string& dataset, const std::string& dir) {
  ImageDataset out;
  out.name = dataset;
  out.dir = dir;
  out.train = load_pair(dir, kStems[0], kStems[1]);
  out.test = load_pair(dir, kStems[2], kStems[3]);
  out.classes = class_names(dataset);
  return out;
}

std::vector<std::string> class_names(const std::string& dataset) {
  if (dataset == "fashion-mnist")
    return {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
            "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  std::vector<std::string> digits;
  for (int i = 0; i < 10; ++i) digits.push_back(std::to_string(i));
  return digits;
}

}  // namespace sb::data
