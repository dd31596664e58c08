#pragma once
// The train / validation / test images of a classification run (de Brebisson & Vincent 2016,
// sec. 4.1): Table 1 draws every run's three splits at random from all the images, Table 2 keeps
// the official training and test files (the validation images are drawn from the training file).

#include <torch/torch.h>

#include "datasets/image_dataset.h"
#include "trainers/classifier/config.h"

namespace sb::classifier {

struct Split {
  torch::Tensor images;  ///< (N, 1, 28, 28) float32 in [0, 1]
  torch::Tensor labels;  ///< (N,) int64
  int64_t size() const { return labels.size(0); }
};

struct Splits {
  Split train, valid, test;
};

/// A seeded generator for one purpose (`salt`) of a run: the split, the shuffle of an epoch.
/// Independent of the global generator, so checkpoints need not carry it.
at::Generator seeded_generator(int64_t seed, uint64_t salt);

/// split = random: one permutation of train + t10k (70000 images, seeded by cfg.seed) gives
/// test_size test, valid_size validation and the rest (at most train_size) training images.
/// split = official: valid_size images drawn from the training file, the rest (at most
/// train_size) for training, the first test_size images of t10k for testing.
/// Throws sb::InputError (file: the data directory; field: valid_size or test_size) when the
/// sizes do not fit the data.
Splits make_splits(const data::ImageDataset& data, const ClassifierConfig& cfg);

}  // namespace sb::classifier
