#include "trainers/transformer/model.h"

#include <cmath>
#include <limits>

namespace sb::transformer {

namespace {

constexpr double kInitStd = 0.02;  // GPT-2's initialisation
constexpr double kNormEps = 1e-5;  // LayerNorm's and RMSNorm's epsilon (PyTorch's default)

void init_normal(torch::Tensor& w, double std) {
  torch::NoGradGuard no_grad;
  w.normal_(0.0, std);
}

void init_zero(torch::Tensor& b) {
  torch::NoGradGuard no_grad;
  b.zero_();
}

}  // namespace

BlockImpl::BlockImpl(int64_t d_model, int64_t heads, int64_t d_ff, double dropout, int64_t layers)
    : d_model_(d_model), heads_(heads), d_ff_(d_ff), layers_(layers), dropout_(dropout) {
  reset();
}

void BlockImpl::reset() {
  namespace nn = torch::nn;
  ln1 = register_module("ln1", nn::LayerNorm(nn::LayerNormOptions({d_model_}).eps(kNormEps)));
  qkv = register_module("qkv", nn::Linear(d_model_, 3 * d_model_));
  attn_out = register_module("attn_out", nn::Linear(d_model_, d_model_));
  ln2 = register_module("ln2", nn::LayerNorm(nn::LayerNormOptions({d_model_}).eps(kNormEps)));
  fc = register_module("fc", nn::Linear(d_model_, d_ff_));
  fc_out = register_module("fc_out", nn::Linear(d_ff_, d_model_));
  attn_drop = register_module("attn_drop", nn::Dropout(dropout_));
  resid_drop = register_module("resid_drop", nn::Dropout(dropout_));
  const double resid_std = kInitStd / std::sqrt(2.0 * static_cast<double>(layers_));
  init_normal(qkv->weight, kInitStd);
  init_normal(attn_out->weight, resid_std);
  init_normal(fc->weight, kInitStd);
  init_normal(fc_out->weight, resid_std);
  for (auto* b : {&qkv->bias, &attn_out->bias, &fc->bias, &fc_out->bias}) init_zero(*b);
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
  const int64_t B = x.size(0), T = x.size(1), hd = d_model_ / heads_;
  // (B, T, 3, H, hd) -> (3, B, H, T, hd)
  const auto qkv_ = qkv(ln1(x)).view({B, T, 3, heads_, hd}).permute({2, 0, 3, 1, 4});
  const auto q = qkv_[0], k = qkv_[1], v = qkv_[2];  // (B, H, T, hd) each
  auto att = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(hd));
  att = att.masked_fill(mask, -std::numeric_limits<double>::infinity());  // (B, H, T, T)
  att = attn_drop(torch::softmax(att, /*dim=*/-1));
  const auto y = torch::matmul(att, v).transpose(1, 2).reshape({B, T, d_model_});  // (B, T, d)
  auto out = x + resid_drop(attn_out(y));
  return out + resid_drop(fc_out(torch::gelu(fc(ln2(out)))));
}

TransformerLmImpl::TransformerLmImpl(const TransformerLmOptions& options_) : options(options_) {
  reset();
}

void TransformerLmImpl::reset() {
  namespace nn = torch::nn;
  const auto& o = options;
  const int64_t d = o.d_model(), ff = o.d_ff() > 0 ? o.d_ff() : 4 * d;
  tokens = register_module("tokens", nn::Embedding(o.vocab_size(), d));
  positions = register_module("positions", nn::Embedding(o.context(), d));
  init_normal(tokens->weight, kInitStd);
  init_normal(positions->weight, kInitStd);
  embed_drop = register_module("embed_drop", nn::Dropout(o.dropout()));
  blocks = register_module("blocks", nn::ModuleList());
  for (int64_t l = 0; l < o.layers(); ++l)
    blocks->push_back(Block(d, o.heads(), ff, o.dropout(), o.layers()));
  if (o.final_norm() == FinalNorm::layernorm)
    ln_f = register_module("ln_f", nn::LayerNorm(nn::LayerNormOptions({d}).eps(kNormEps)));
  if (o.final_norm() == FinalNorm::rmsnorm)
    rms_gain = register_parameter("rms_gain", torch::ones({d}));
  if (o.decoder_bias())
    decoder_bias = register_parameter("decoder_bias", torch::zeros({o.vocab_size()}));
  head = register_module("head", heads::OutputHead(heads::OutputHeadOptions(o.head(), d, d)));
}

torch::Tensor TransformerLmImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1);
  const auto pos = torch::arange(T, x.options().dtype(torch::kLong));              // (T)
  auto h = embed_drop(tokens(x) + positions(pos));                                 // (B, T, d)
  const auto mask = torch::ones({T, T}, x.options().dtype(torch::kBool)).triu(1);  // (T, T)
  for (const auto& block : *blocks) h = block->as<Block>()->forward(h, mask);
  if (ln_f) h = ln_f(h);
  if (rms_gain.defined())
    h = h * torch::rsqrt(h.pow(2).mean(/*dim=*/-1, /*keepdim=*/true) + kNormEps) * rms_gain;
  return h.reshape({B * T, d()});  // (B * T, d)
}

torch::Tensor TransformerLmImpl::log_probs(const torch::Tensor& h) {
  return head(h, tokens->weight, decoder_bias);  // (N, M)
}

torch::Tensor TransformerLmImpl::loss(const torch::Tensor& h, const torch::Tensor& targets) {
  return head->loss(h, tokens->weight, decoder_bias, targets);
}

std::string TransformerLmImpl::final_norm_of_dump() const {
  return is_mixture(options.head()) ? "none" : final_norm_name(options.final_norm());
}

}  // namespace sb::transformer
