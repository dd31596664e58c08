#include "trainers/heads/mixture.h"

#include "common/errors.h"
#include "trainers/heads/linear_row_nll_function.h"
#include "trainers/heads/row_nll_function.h"
#include "trainers/heads/sigsoftmax.h"

namespace sb::heads {

MixtureImpl::MixtureImpl(const MixtureOptions& options_) : options(options_) { reset(); }

void MixtureImpl::reset() {
  const auto& o = options;
  if (o.input_size() < 1 || o.embedding_size() < 1 || o.experts() < 1)
    throw OptionError::described(
        o.input_size() < 1       ? "input_size"
        : o.embedding_size() < 1 ? "embedding_size"
                                 : "experts",
        "Mixture: input_size, embedding_size and experts must be >= 1, got " +
            std::to_string(o.input_size()) + ", " + std::to_string(o.embedding_size()) + ", " +
            std::to_string(o.experts()));
  latent = register_module(
      "latent",
      torch::nn::Linear(torch::nn::LinearOptions(o.input_size(), o.experts() * o.embedding_size())
                            .bias(o.latent_bias())));
  prior = register_module(
      "prior",
      torch::nn::Linear(torch::nn::LinearOptions(o.input_size(), o.experts()).bias(false)));
}

torch::Tensor MixtureImpl::contexts(const torch::Tensor& h) { return torch::tanh(latent(h)); }

torch::Tensor MixtureImpl::prior_logits(const torch::Tensor& h) { return prior(h); }

void MixtureImpl::expert_logits_check(const torch::Tensor& contexts,
                                      const torch::Tensor& prior_logits,
                                      const torch::Tensor& weight) const {
  const int64_t n = contexts.size(0), k = options.experts(), d = options.embedding_size();
  TORCH_CHECK(contexts.dim() == 2 && contexts.size(1) == k * d, "Mixture: contexts ",
              contexts.sizes(), " expected (N, ", k * d, ")");
  TORCH_CHECK(prior_logits.sizes() == at::IntArrayRef({n, k}), "Mixture: prior logits ",
              prior_logits.sizes(), " expected (", n, ", ", k, ")");
  TORCH_CHECK(weight.dim() == 2 && weight.size(1) == d, "Mixture: decoder weight ", weight.sizes(),
              " expected (M, ", d, ")");
}

torch::Tensor MixtureImpl::expert_logits(const torch::Tensor& contexts,
                                         const torch::Tensor& prior_logits,
                                         const torch::Tensor& weight, const torch::Tensor& bias) {
  expert_logits_check(contexts, prior_logits, weight);
  const int64_t n = contexts.size(0), k = options.experts(), d = options.embedding_size();
  return torch::nn::functional::linear(contexts.reshape({n * k, d}), weight, bias);  // (N*K, M)
}

torch::Tensor MixtureImpl::log_output(const torch::Tensor& logits) {
  return options.sigsoftmax() ? log_sigsoftmax(logits) : torch::log_softmax(logits, /*dim=*/-1);
}

std::pair<torch::Tensor, torch::Tensor> MixtureImpl::components(const torch::Tensor& contexts,
                                                                const torch::Tensor& prior_logits,
                                                                const torch::Tensor& weight,
                                                                const torch::Tensor& bias) {
  const auto logits = expert_logits(contexts, prior_logits, weight, bias);  // (N*K, M)
  const int64_t n = contexts.size(0), k = options.experts(), m = logits.size(1);
  return {log_output(prior_logits), log_output(logits).view({n, k, m})};  // (N, K), (N, K, M)
}

torch::Tensor MixtureImpl::mix(const torch::Tensor& contexts, const torch::Tensor& prior_logits,
                               const torch::Tensor& weight, const torch::Tensor& bias) {
  const auto [log_pi, log_f] = components(contexts, prior_logits, weight, bias);
  return (log_f + log_pi.unsqueeze(-1)).logsumexp(/*dim=*/1);  // (N, M)
}

torch::Tensor MixtureImpl::nll(const torch::Tensor& contexts, const torch::Tensor& prior_logits,
                               const torch::Tensor& weight, const torch::Tensor& bias,
                               const torch::Tensor& targets) {
  const int64_t n = contexts.size(0), k = options.experts(), d = options.embedding_size();
  TORCH_CHECK(targets.dim() == 1 && targets.size(0) == n, "Mixture::nll: targets ", targets.sizes(),
              " expected (", n, ")");
  const auto index = targets.repeat_interleave(k);  // (N*K): row n*K+k -> y_n
  // -log f_k(y) for every expert. Fused (CPU float): the decoder and the NLL as one node whose
  // forward leaves each expert's unscaled gradient in the logits' place, and whose backward is
  // GEMMs with the rows scaled by each expert's posterior responsibility pi_k f_k(y) / P(y)
  // (the upstream gradient of its row; linear_row_nll_function.h).
  torch::Tensor neg_log_f_y;  // (N*K)
  if (fused_row_nll_supports(contexts)) {
    expert_logits_check(contexts, prior_logits, weight);
    neg_log_f_y = fused_linear_row_nll(contexts.reshape({n * k, d}), weight, bias, index,
                                       options.sigsoftmax());
  } else {
    const auto logits = expert_logits(contexts, prior_logits, weight, bias);  // (N*K, M)
    neg_log_f_y = -log_output(logits).gather(/*dim=*/1, index.unsqueeze(1)).squeeze(1);
  }
  const auto log_p_y = (log_output(prior_logits) - neg_log_f_y.view({n, k})).logsumexp(/*dim=*/1);
  return -log_p_y.mean();  // log_p_y: (N)
}

torch::Tensor MixtureImpl::forward(const torch::Tensor& h, const torch::Tensor& weight,
                                   const torch::Tensor& bias) {
  return mix(contexts(h), prior_logits(h), weight, bias);
}

}  // namespace sb::heads
