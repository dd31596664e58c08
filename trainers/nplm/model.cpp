#include "trainers/nplm/model.h"

#include <cmath>
#include <stdexcept>

#include "trainers/heads/unigram_bias.h"

namespace sb::nplm {

NplmImpl::NplmImpl(const NplmOptions& o, const torch::Tensor& unigram_p) : options(o) {
  const int64_t M = o.M();
  // internal: NplmTrainer passes the unigram distribution of the targets, an (M) vector.
  if (unigram_p.dim() != 1 || unigram_p.size(0) != M)
    throw std::logic_error("Nplm: the unigram distribution must be (" + std::to_string(M) +
                           "), got " + c10::str(unigram_p.sizes()));
  embedding = register_module("embedding", torch::nn::Embedding(o.vocab_size(), o.emsize()));
  int64_t in = o.context() * o.emsize();
  for (int64_t l = 0; l < o.layers(); ++l) {
    auto layer = register_module("hidden" + std::to_string(l), torch::nn::Linear(in, o.hidden()));
    torch::NoGradGuard no_grad;
    // He et al. 2015 (as de Brebisson & Vincent 2016, sec. 4): std sqrt(2 / fan_in), zero bias.
    layer->weight.normal_(0, std::sqrt(2.0 / static_cast<double>(in)));
    layer->bias.zero_();
    hidden_layers.push_back(layer);
    in = o.hidden();
  }
  decoder = register_module("decoder", torch::nn::Linear(o.hidden(), M));
  {
    // de Brebisson & Vincent 2016, sec. 4: zero output weights, bias = the prior frequencies.
    torch::NoGradGuard no_grad;
    decoder->weight.zero_();
    // Sparse top-k: softmax's bias log p, so the top k of the prior start as its support.
    const HeadSpec prior = o.head().kind == HeadKind::sparse ? HeadSpec{} : o.head();
    decoder->bias.copy_(heads::unigram_bias(prior, unigram_p).to(torch::kFloat));
  }
  head = register_module(
      "head", heads::OutputHead(heads::OutputHeadOptions(o.head(), o.hidden(), o.hidden())));
}

torch::Tensor NplmImpl::features(const torch::Tensor& contexts) {
  auto x = embedding(contexts).flatten(/*start_dim=*/1);  // (N, n * emsize)
  for (auto& layer : hidden_layers) x = torch::relu(layer(x));
  return x;  // (N, d)
}

torch::Tensor NplmImpl::log_probs(const torch::Tensor& contexts) {
  return head(features(contexts), decoder->weight, decoder->bias);  // (N, M)
}

torch::Tensor NplmImpl::loss(const torch::Tensor& contexts, const torch::Tensor& targets) {
  return head->loss(features(contexts), decoder->weight, decoder->bias, targets);
}

}  // namespace sb::nplm
