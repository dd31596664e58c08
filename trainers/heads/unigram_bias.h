#pragma once
// The output bias of de Brebisson & Vincent (2016, sec. 4): "we set the bias values such that the
// initial network outputs matched the prior frequencies of the classes", with the output weights
// initialised to zero. For each head, the bias b with head(b) = p, the unigram distribution.
// train_nplm starts every head from it; train_wordlm on request (bias_init = "unigram":
// the cpu profile's g:sigmoid, README "Why g:sigmoid lags").

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "common/head_spec.h"

namespace sb::heads {

/// Add-one unigram distribution of `ids` over M words, float64 (M): every word gets mass, also
/// words of the vocabulary that a truncated training split does not contain.
torch::Tensor unigram(const std::vector<int64_t>& ids, int64_t vocab_size);

/// b (M), float64, with head(b) = p for a single finite head (closed forms, sigsoftmax by Newton
/// steps; relu up to its eps floor). Throws sb::OptionError (option "head") for mixtures and
/// sparse.
torch::Tensor unigram_bias(const HeadSpec& spec, const torch::Tensor& p);

}  // namespace sb::heads
