#include "trainers/charlm/model.h"

namespace sb::charlm {

CharLstmImpl::CharLstmImpl(int64_t vocab_size, HeadSpec spec, int64_t emsize, int64_t nhid,
                           int64_t nlayers, int64_t latent)
    : spec_(spec), nhid_(nhid), nlayers_(nlayers), latent_(latent) {
  embedding = register_module("embedding", torch::nn::Embedding(vocab_size, emsize));
  lstm = register_module("lstm",
                         torch::nn::LSTM(torch::nn::LSTMOptions(emsize, nhid).num_layers(nlayers)));
  // Registered only when used, so a latent = 0 model has the parameters (and the random draws,
  // hence the weights of a given seed) it had before the key existed.
  if (latent_ > 0)
    projection = register_module(
        "projection", torch::nn::Linear(torch::nn::LinearOptions(nhid, latent).bias(false)));
  decoder = register_module("decoder", torch::nn::Linear(d(), vocab_size));
  head = register_module("head", heads::OutputHead(heads::OutputHeadOptions(spec_, d(), d())));
}

CharState CharLstmImpl::zero_state(int64_t batch) const {
  const auto opts = decoder->weight.options();
  return {torch::zeros({nlayers_, batch, nhid_}, opts),
          torch::zeros({nlayers_, batch, nhid_}, opts)};
}

std::pair<torch::Tensor, CharState> CharLstmImpl::forward(const torch::Tensor& x,
                                                          const CharState& state) {
  const auto emb = embedding(x);                                           // (len, B, emsize)
  auto [out, hc] = lstm(emb, std::make_tuple(state.first, state.second));  // out (len, B, nhid)
  auto flat = out.reshape({-1, nhid_});                                    // (len * B, nhid)
  if (latent_ > 0) flat = projection(flat);                                // (len * B, latent)
  return {flat, {std::get<0>(hc), std::get<1>(hc)}};
}

torch::Tensor CharLstmImpl::log_probs(const torch::Tensor& output) {
  return head(output, decoder->weight, decoder->bias);  // (N, M)
}

torch::Tensor CharLstmImpl::loss(const torch::Tensor& output, const torch::Tensor& targets) {
  return head->loss(output, decoder->weight, decoder->bias, targets);
}

}  // namespace sb::charlm
