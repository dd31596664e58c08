#include "trainers/classifier/splits.h"

#include <ATen/CPUGeneratorImpl.h>

#include "common/errors.h"

namespace sb::classifier {

namespace {

constexpr uint64_t kSplitSalt = 0x5eed5b1;

Split take(const data::LabelledImages& from, const torch::Tensor& index) {
  return {from.images.index_select(/*dim=*/0, index).unsqueeze(/*dim=*/1).to(torch::kFloat) / 255,
          from.labels.index_select(/*dim=*/0, index)};
}

}  // namespace

at::Generator seeded_generator(int64_t seed, uint64_t salt) {
  // splitmix64 of (seed, salt): distinct, well-mixed seeds for each purpose.
  uint64_t z = static_cast<uint64_t>(seed) * 0x9E3779B97F4A7C15ull + salt;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return at::detail::createCPUGenerator(z ^ (z >> 31));
}

Splits make_splits(const data::ImageDataset& data, const ClassifierConfig& cfg) {
  auto gen = seeded_generator(cfg.seed, kSplitSalt);
  Splits s;
  const auto need = [&](int64_t have, const std::string& what) {
    const int64_t want = cfg.valid_size + (cfg.split == "random" ? cfg.test_size : 0) + 1;
    if (have < want)
      throw InputError::described(
          data.dir, "valid_size",
          what + " holds " + std::to_string(have) +
              " images: too few for valid_size = " + std::to_string(cfg.valid_size) +
              (cfg.split == "random" ? " + test_size = " + std::to_string(cfg.test_size)
                                     : std::string()) +
              " + at least one training image");
  };
  const auto rest = [&](const torch::Tensor& perm, int64_t from) {
    const int64_t n = perm.size(0) - from;
    const int64_t count = cfg.train_size > 0 ? std::min(cfg.train_size, n) : n;
    return perm.slice(/*dim=*/0, from, from + count);
  };
  if (cfg.split == "random") {
    const data::LabelledImages all{torch::cat({data.train.images, data.test.images}),
                                   torch::cat({data.train.labels, data.test.labels})};
    const int64_t n = all.labels.size(0);
    need(n, data.dir + " (train + t10k)");
    const auto perm = torch::randperm(n, gen, torch::kLong);
    s.test = take(all, perm.slice(/*dim=*/0, 0, cfg.test_size));
    s.valid = take(all, perm.slice(/*dim=*/0, cfg.test_size, cfg.test_size + cfg.valid_size));
    s.train = take(all, rest(perm, cfg.test_size + cfg.valid_size));
  } else {
    const int64_t n = data.train.labels.size(0);
    need(n, data.dir + " (train)");
    const int64_t n_test = data.test.labels.size(0);
    if (cfg.test_size > n_test)
      throw InputError::described(data.dir, "test_size",
                                  "test_size = " + std::to_string(cfg.test_size) + " exceeds the " +
                                      std::to_string(n_test) +
                                      " images of the official test file (split = official)");
    const auto perm = torch::randperm(n, gen, torch::kLong);
    s.valid = take(data.train, perm.slice(/*dim=*/0, 0, cfg.valid_size));
    s.train = take(data.train, rest(perm, cfg.valid_size));
    s.test = take(data.test, torch::arange(cfg.test_size, torch::kLong));
  }
  return s;
}

}  // namespace sb::classifier
