#pragma once
// Argument checks shared by the output functions: one place, one message format.

#include <torch/torch.h>

namespace sb::heads {

/// Throws std::logic_error unless `logits` is a defined floating-point tensor of shape (N, M)
/// with M >= 1. `fn` names the caller in the message, which also states the actual shape/dtype.
void check_logits(const torch::Tensor& logits, const char* fn);

/// Throws std::logic_error unless `targets` is an integer (N,) tensor with values in [0, M).
void check_targets(const torch::Tensor& targets, const torch::Tensor& logits, const char* fn);

/// The same for logits of shape (rows, cols) that are never formed (a fused decoder + NLL).
void check_targets(const torch::Tensor& targets, int64_t rows, int64_t cols, const char* fn);

}  // namespace sb::heads
