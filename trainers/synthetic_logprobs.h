#pragma once
// Synthetic log-output files for checking Theorem 2 without training: random H (T x d),
// decoder W (M x d) and optional bias b (M), logits H W^T + b through any head of the registry
// (mos/moss through a randomly initialised mixture on H), written with the HDF5 contract.

#include <cstdint>
#include <string>

#include "common/head_spec.h"

namespace sb {

struct SyntheticOptions {
  HeadSpec spec;
  int64_t tokens = 6000;  ///< T
  int64_t vocab = 2000;   ///< M
  int64_t d = 64;         ///< decoder input size
  bool bias = true;
  int64_t seed = 0;
  std::string dtype = "float32";  ///< compute dtype of the log-probabilities
  double logit_scale = 2.0;       ///< std of the logits (before the head)
  int64_t block_rows = 1024;      ///< rows generated and written at a time
  /// Write the logits H W^T + b themselves (attribute input = "logits": rank d + bias) instead
  /// of the head's log-probabilities.
  bool logits = false;
};

/// Writes the file (atomically) and returns its perplexity attribute. Targets are each row's
/// arg-max. Deterministic for a seed: the logits file of a seed holds the logits its
/// log-probabilities file was computed from.
double write_synthetic_logprobs(const std::string& path, const SyntheticOptions& options);

/// The synthetic_logprobs binary's whole program (synthetic_logprobs_cli.cpp: the options, then
/// write_synthetic_logprobs); trainers/synthetic_logprobs_main.cpp calls it.
int synthetic_logprobs_main(int argc, char** argv);

}  // namespace sb
