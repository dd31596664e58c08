#pragma once
// Image classification data in the MNIST layout: four IDX files (idx_file.h),
// train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte,
// t10k-labels-idx1-ubyte, each plain or gzip-compressed (.gz).
//
// Fashion-MNIST (Xiao et al. 2017) comes from the Debian package dataset-fashion-mnist, which
// installs it in /usr/share/datasets/fashion-mnist (`make deps` installs the package). The
// original MNIST of the paper (de Brebisson & Vincent 2016, sec. 4.1) is not packaged: a user
// who has it passes its directory (--data DIR, dataset = "mnist").

#include <torch/torch.h>

#include <string>
#include <vector>

namespace sb::data {

inline constexpr const char* kFashionMnistPackage = "dataset-fashion-mnist";
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

struct LabelledImages {
  torch::Tensor images;  ///< (N, rows, cols) uint8
  torch::Tensor labels;  ///< (N,) int64 in [0, classes)
};

struct ImageDataset {
  std::string name;  ///< "fashion-mnist" or "mnist"
  std::string dir;   ///< where the files were found
  LabelledImages train, test;
  std::vector<std::string> classes;  ///< the name of each label
};

/// The path of `stem` in `dir`: dir/stem.gz or dir/stem, whichever exists; throws
/// sb::FormatError naming both when neither does.
std::string idx_path(const std::string& dir, const std::string& stem);

/// The directory to read `dataset` from: `explicit_dir` if given, else (fashion-mnist)
/// `package_dir`. Throws sb::FormatError, one line, when the files are not there: for the
/// package directory it names the package to install; "mnist" without a directory says to pass
/// --data DIR (sb::OptionError, as for an unknown dataset).
std::string find_image_dataset_dir(const std::string& dataset, const std::string& explicit_dir,
                                   const std::string& package_dir = kFashionMnistDir);

/// Reads the four files of `dir`: images (N, 28, 28) and labels (N) in [0, 10), the counts of
/// each pair equal. Throws sb::InputError naming the file and the field (idx_file.h; "labels:
/// expected values in [0, 10), got 11 at item 7"; "dims: expected 28 x 28 images, got 32 x 32").
ImageDataset load_image_dataset(const std::string& dataset, const std::string& dir);

/// The class names of a dataset: Fashion-MNIST's ten garments, MNIST's digits.
std::vector<std::string> class_names(const std::string& dataset);

}  // namespace sb::data
