#pragma once
// The Gram path of the rank analysis on a LibTorch device (a CUDA GPU, or the CPU to test the
// same code): row blocks of the source are read on the host into one (pinned, on CUDA) buffer,
// copied to the device and accumulated as G += B^T B in float64 (addmm: the device BLAS);
// eigenvalues by torch::linalg::eigvalsh on the device. While the device multiplies block k the
// host reads block k + 1 (the copy is stream-ordered, the matmul asynchronous).

#include <cstdint>
#include <string>

#include "analysis/analyse.h"

namespace sb::analysis {

/// A GramBackend on `device` ("cuda", "cuda:1", "cpu"). Throws sb::OptionError when the
/// device cannot be used (no CUDA in this LibTorch, no GPU visible, a malformed name).
GramBackend torch_gram_backend(const std::string& device);

}  // namespace sb::analysis
