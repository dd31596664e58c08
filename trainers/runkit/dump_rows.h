#pragma once
// The tensor side of the HDF5 log-output contract (contract/logprob_file.h), shared by every
// trainer that dumps a test set: (len, M) log-probability tensors streamed into a LogProbWriter.
// (The header comes from contract::make_header.)

#include <torch/torch.h>

#include <string>

#include "contract/logprob_file.h"

namespace sb::runkit {

/// log_p (len, M) on any device, any floating dtype; targets (len) int64 -> `len` rows of the
/// file, as float32 (the contract's dtype).
void write_rows(contract::LogProbWriter& writer, const torch::Tensor& log_p,
                const torch::Tensor& targets);

}  // namespace sb::runkit
