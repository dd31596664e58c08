#pragma once
// The order of a trainer's shuffled training rows in one epoch (train_nplm's contexts,
// train_transformer's windows): a generator of its own, seeded by (seed, epoch), so a resumed
// epoch replays the same order without the checkpoint saving it.

#include <torch/torch.h>

#include <cstdint>

namespace sb::runkit {

/// A permutation of [0, rows), the same for the same (seed, epoch).
inline torch::Tensor epoch_order(int64_t rows, int64_t seed, int64_t epoch) {
  auto gen = at::detail::createCPUGenerator(static_cast<uint64_t>(seed) * 1000003ULL +
                                            static_cast<uint64_t>(epoch));
  return torch::randperm(rows, gen, torch::kLong);  // (rows)
}

}  // namespace sb::runkit
