#pragma once
// The tensor side of the HDF5 log-output contract (contract/logprob_file.h), shared by every
// trainer that dumps a test set: (len, M) log-probability tensors streamed into a LogProbWriter.
// The header comes from ConfiguredTrainer::test_dump_header (configured_trainer.h), the one
// place a trainer's dump header is built: the trainer says what its output layer is.

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <utility>

#include "common/head_spec.h"
#include "contract/logprob_file.h"

namespace sb::runkit {

/// What a dump's header says of the model that made it: its output layer.
struct OutputLayer {
  OutputLayer(HeadSpec head_, int64_t d_, bool bias_ = true, std::string final_norm_ = "")
      : head(std::move(head_)), d(d_), bias(bias_), final_norm(std::move(final_norm_)) {}

  HeadSpec head;           ///< the head as the run spelled it (header `head`, `head_spec`)
  int64_t d = 0;           ///< size of the vector the decoder multiplies
  bool bias = true;        ///< a decoder bias (Theorem 2's bound is d + 1 + bias)
  std::string final_norm;  ///< the decoder input's normalisation; "" = not stated
};

/// log_p (len, M) on any device, any floating dtype; targets (len) int64 -> `len` rows of the
/// file, as float32 (the contract's dtype).
void write_rows(contract::LogProbWriter& writer, const torch::Tensor& log_p,
                const torch::Tensor& targets);

}  // namespace sb::runkit
