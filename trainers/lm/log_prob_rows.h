#pragma once
// The tensor side of the HDF5 log-output contract (analysis/logprob_file.h), shared by every
// trainer that dumps a test set (train_wordlm, train_nplm, train_charlm): the header's vocabulary
// from a corpus, and (len, M) log-probability tensors streamed into a LogProbWriter.

#include <torch/torch.h>

#include <string>

#include "analysis/logprob_file.h"
#include "datasets/corpus.h"

namespace sb::lm {

/// A header with dataset, split, seed, config and /vocab (the word of each id, in id order);
/// the producer sets head, d, bias, vocab_size and num_tokens.
analysis::LogProbHeader vocab_header(const data::Vocabulary& vocab, const std::string& dataset,
                                     const std::string& split, int64_t seed,
                                     const std::string& config);

/// log_p (len, M) on any device, any floating dtype; targets (len) int64 -> `len` rows of the
/// file, as float32 (the contract's dtype).
void write_rows(analysis::LogProbWriter& writer, const torch::Tensor& log_p,
                const torch::Tensor& targets);

}  // namespace sb::lm
