#include "tests/trainers/bigram/model.h"

namespace sb::bigram {

BigramImpl::BigramImpl(const BigramOptions& o) : options(o) { reset(); }

void BigramImpl::reset() {
  const int64_t M = options.vocab_size(), d = options.d();
  embedding = register_module("embedding", torch::nn::Embedding(M, d));
  decoder = register_module("decoder", torch::nn::Linear(d, M));
  head = register_module("head", heads::OutputHead(heads::OutputHeadOptions(options.head(), d, d)));
}

torch::Tensor BigramImpl::log_probs(const torch::Tensor& previous) {
  return head(embedding(previous), decoder->weight, decoder->bias);  // (N, M)
}

torch::Tensor BigramImpl::loss(const torch::Tensor& previous, const torch::Tensor& targets) {
  return head->loss(embedding(previous), decoder->weight, decoder->bias, targets);
}

}  // namespace sb::bigram
