#include "trainers/lm/model.h"

#include <stdexcept>
#include <string>

#include "common/errors.h"
#include "trainers/lm/embedding_dropout.h"
#include "trainers/lm/locked_dropout.h"

namespace sb::lm {

AwdLstmImpl::AwdLstmImpl(const AwdLstmOptions& options_) : options(options_) { reset(); }

int64_t AwdLstmImpl::last_size() const {
  return options.nhidlast() > 0 ? options.nhidlast() : options.emsize();
}

void AwdLstmImpl::reset() {
  const auto M = options.vocab_size(), E = options.emsize(), L = options.nlayers();
  if (M < 2 || E < 1 || options.nhid() < 1 || L < 1 || options.nhidlast() < 0)
    throw OptionError::described(M < 2                ? "vocab_size"
                                 : E < 1              ? "emsize"
                                 : options.nhid() < 1 ? "nhid"
                                 : L < 1              ? "nlayers"
                                                      : "nhidlast",
                                 "AwdLstm: need vocab_size >= 2, emsize, nhid, nlayers >= 1, got " +
                                     std::to_string(M) + ", " + std::to_string(E) + ", " +
                                     std::to_string(options.nhid()) + ", " + std::to_string(L));
  if (!is_mixture(options.head()) && last_size() != E)
    throw OptionError::described(
        "head", "AwdLstm: head " + options.head().name() +
                    " reads the last layer directly, so nhidlast must equal emsize " +
                    std::to_string(E) + ", got " + std::to_string(last_size()));
  embedding = register_parameter("embedding", torch::empty({M, E}).uniform_(-0.1, 0.1));
  decoder_bias = register_parameter("decoder_bias", torch::zeros({M}));
  rnns.clear();
  for (int64_t l = 0; l < L; ++l) {
    const int64_t in = l == 0 ? E : options.nhid();
    const int64_t out = l == L - 1 ? last_size() : options.nhid();
    rnns.push_back(register_module(
        "rnn" + std::to_string(l),
        WeightDropLstm(WeightDropLstmOptions(in, out)
                           .weight_drop(options.wdrop())
                           .fused(options.fused_lstm()))));
  }
  head = register_module("head",
                         heads::OutputHead(heads::OutputHeadOptions(options.head(), last_size(),
                                                                    /*embedding_size=*/E)
                                               .latent_bias(options.latent_bias())
                                               .vocab_size(M)));
}

std::vector<LstmState> AwdLstmImpl::zero_state(int64_t batch_size) const {
  std::vector<LstmState> state;
  for (const auto& rnn : rnns) state.push_back(rnn->zero_state(batch_size));
  return state;
}

AwdLstmOutput AwdLstmImpl::forward(const torch::Tensor& ids, const std::vector<LstmState>& state) {
  // internal: the callers pass batchify()'s int64 (T, B) token ids (datasets/batchify.h).
  if (ids.dim() != 2 || ids.scalar_type() != torch::kLong)
    throw std::logic_error("AwdLstm: ids must be int64 (T, B), got " +
                           std::string(c10::toString(ids.scalar_type())) + " " +
                           c10::str(ids.sizes()));
  // internal: the state is zero_state()'s or a previous forward()'s, one (h, c) per layer (a
  // resumed checkpoint's carried state is checked by WordLmTrainer::load_extra).
  if (!state.empty() && state.size() != rnns.size())
    throw std::logic_error("AwdLstm: state has " + std::to_string(state.size()) +
                           " layers, the model " + std::to_string(rnns.size()));
  const bool train = is_training();
  auto x = embedding_dropout(embedding, ids, options.dropoute(), train);  // (T, B, E)
  x = locked_dropout(x, options.dropouti(), train);
  AwdLstmOutput out;
  const auto L = static_cast<int64_t>(rnns.size());
  for (int64_t l = 0; l < L; ++l) {
    auto [y, s] = rnns[l]->forward(x, state.empty() ? LstmState{} : state[l]);  // (T, B, H_l)
    out.state.push_back(s);
    if (l < L - 1) {
      x = locked_dropout(y, options.dropouth(), train);
    } else {
      out.raw_last = y;
      out.output = locked_dropout(y, options.dropout(), train);
    }
  }
  return out;
}

heads::ContextDropout AwdLstmImpl::latent_dropout(int64_t T, int64_t B) {
  return [this, T, B](const torch::Tensor& contexts) {  // (T B, K d)
    return locked_dropout(contexts.view({T, B, -1}), options.dropoutl(), is_training())
        .view({T * B, -1});
  };
}

std::pair<torch::Tensor, torch::Tensor> AwdLstmImpl::mixture_components(
    const torch::Tensor& output) {
  const auto T = output.size(0), B = output.size(1);
  return head->components(output.reshape({T * B, output.size(2)}), embedding, decoder_bias,
                          latent_dropout(T, B));
}

torch::Tensor AwdLstmImpl::loss(const torch::Tensor& output, const torch::Tensor& targets) {
  const auto T = output.size(0), B = output.size(1);
  return head->loss(output.reshape({T * B, output.size(2)}), embedding, decoder_bias, targets,
                    latent_dropout(T, B));
}

torch::Tensor AwdLstmImpl::log_probs(const torch::Tensor& output) {
  const auto T = output.size(0), B = output.size(1);
  return head->forward(output.reshape({T * B, output.size(2)}), embedding, decoder_bias,
                       latent_dropout(T, B));
}

std::vector<LstmState> detach_state(const std::vector<LstmState>& state) {
  std::vector<LstmState> out;
  for (const auto& [h, c] : state) out.emplace_back(h.detach(), c.detach());
  return out;
}

}  // namespace sb::lm
