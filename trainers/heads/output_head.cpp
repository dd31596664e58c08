#include "trainers/heads/output_head.h"

#include <stdexcept>

#include "common/errors.h"
#include "trainers/heads/check.h"
#include "trainers/heads/g_relu.h"
#include "trainers/heads/g_sigmoid.h"
#include "trainers/heads/linear_row_nll_function.h"
#include "trainers/heads/row_nll_function.h"
#include "trainers/heads/softmax.h"
#include "trainers/heads/sparse_softmax.h"
#include "trainers/heads/spherical_family.h"

namespace sb::heads {

torch::Tensor log_output(const HeadSpec& spec, const torch::Tensor& logits) {
  switch (spec.kind) {
    case HeadKind::softmax:
      return log_softmax(logits);
    case HeadKind::sigsoftmax:
      if (spec.learnable_bias)
        throw OptionError::described("head",
                                     "log_output: sigsoftmax with b=1 owns a parameter; use "
                                     "OutputHead");
      return log_sigsoftmax(logits);
    case HeadKind::relu:
      return log_g_relu(logits, spec.eps);
    case HeadKind::sigmoid:
      return log_g_sigmoid(logits);
    case HeadKind::softmax_abs:
      return log_softmax_abs(logits);
    case HeadKind::spherical:
      return log_spherical_softmax(logits, spec.eps);
    case HeadKind::taylor:
      return log_taylor_softmax(logits);
    case HeadKind::sparse:
      return log_sparse_softmax(logits, spec.k);
    case HeadKind::mos:
    case HeadKind::moss:
    case HeadKind::adaptive:
    case HeadKind::adaptive_sigsoftmax:
      break;
  }
  throw OptionError::described("head",
                               "log_output: head '" + spec.name() +
                                   "' has parameters of its own (a mixture or an adaptive head); "
                                   "use OutputHead");
}

OutputHeadImpl::OutputHeadImpl(const OutputHeadOptions& options_) : options(options_) { reset(); }

void OutputHeadImpl::reset() {
  const auto& spec = options.spec();
  const bool mixture_head = is_mixture(spec);
  if (!mixture_head && options.input_size() != options.embedding_size())
    throw OptionError::described(
        "head", "OutputHead '" + spec.to_string() + "': input_size (" +
                    std::to_string(options.input_size()) + ") must equal embedding_size (" +
                    std::to_string(options.embedding_size()) + ") for a single head");
  mixture = nullptr;
  sigsoftmax = nullptr;
  adaptive = nullptr;
  if (is_adaptive(spec)) {
    if (options.vocab_size() < 1)
      throw OptionError::described(
          "vocab_size", "OutputHead '" + spec.to_string() +
                            "': an adaptive head needs the vocabulary size (vocab_size)");
    check_head_fits(spec, options.vocab_size(), "words of the vocabulary");
    adaptive = register_module(
        "adaptive",
        Adaptive(AdaptiveOptions(options.input_size(), options.vocab_size(), spec.cutoffs)
                     .div(spec.div)
                     .sigsoftmax(spec.kind == HeadKind::adaptive_sigsoftmax)
                     .cluster_bias(options.decoder_bias())));
  } else if (mixture_head) {
    mixture = register_module(
        "mixture",
        Mixture(MixtureOptions(options.input_size(), options.embedding_size(), spec.experts)
                    .sigsoftmax(spec.kind == HeadKind::moss)
                    .latent_bias(options.latent_bias())));
  } else if (spec.kind == HeadKind::sigsoftmax && spec.learnable_bias) {
    sigsoftmax =
        register_module("sigsoftmax", Sigsoftmax(SigsoftmaxOptions().learnable_bias(true)));
  }
}

std::pair<torch::Tensor, torch::Tensor> OutputHeadImpl::mixture_inputs(
    const torch::Tensor& hidden, const ContextDropout& dropout) {
  auto contexts = mixture->contexts(hidden);  // (N, K d)
  if (dropout) contexts = dropout(contexts);
  return {contexts, mixture->prior_logits(hidden)};  // (N, K d), (N, K)
}

torch::Tensor OutputHeadImpl::forward(const torch::Tensor& hidden, const torch::Tensor& weight,
                                      const torch::Tensor& bias, const ContextDropout& dropout) {
  if (mixture) {
    const auto [contexts, prior_logits] = mixture_inputs(hidden, dropout);
    return mixture->mix(contexts, prior_logits, weight, bias);
  }
  if (adaptive) return adaptive(hidden, weight, bias);
  const auto logits = torch::nn::functional::linear(hidden, weight, bias);  // (N, M)
  if (sigsoftmax) return sigsoftmax(logits);
  return log_output(options.spec(), logits);
}

torch::Tensor OutputHeadImpl::loss(const torch::Tensor& hidden, const torch::Tensor& weight,
                                   const torch::Tensor& bias, const torch::Tensor& targets,
                                   const ContextDropout& dropout) {
  const auto& spec = options.spec();
  if (mixture) {
    const auto [contexts, prior_logits] = mixture_inputs(hidden, dropout);
    return mixture->nll(contexts, prior_logits, weight, bias, targets);
  }
  // Only each row's target cluster (Grave et al. 2017): the adaptive heads' speed-up.
  if (adaptive) return adaptive->nll(hidden, weight, bias, targets);
  if (spec.kind == HeadKind::sparse)
    return sparse_softmax_loss(torch::nn::functional::linear(hidden, weight, bias), targets,
                               spec.k);
  // Softmax, and sigsoftmax without a learnable b, on CPU float: the decoder and the NLL as one
  // node (linear_row_nll_function.h): no (N, M) log-probabilities, one pass over the logits
  // forward, a backward of GEMMs only.
  const bool one_node =
      spec.kind == HeadKind::softmax || (spec.kind == HeadKind::sigsoftmax && !sigsoftmax);
  if (one_node && hidden.dim() == 2 && fused_row_nll_supports(hidden)) {
    check_targets(targets, hidden.size(0), weight.size(0), "OutputHead::loss");
    return fused_linear_row_nll(hidden, weight, bias, targets,
                                /*sigsoftmax=*/spec.kind == HeadKind::sigsoftmax)
        .mean();
  }
  // The fused head + NLL kernels: no (N, M) log-probabilities during training.
  if (spec.kind == HeadKind::sigmoid)
    return g_sigmoid_nll_loss(torch::nn::functional::linear(hidden, weight, bias), targets);
  if (spec.kind == HeadKind::sigsoftmax && !sigsoftmax)
    return sigsoftmax_nll_loss(torch::nn::functional::linear(hidden, weight, bias), targets);
  const auto log_p = forward(hidden, weight, bias);
  check_targets(targets, log_p, "OutputHead::loss");
  return torch::nll_loss(log_p, targets);
}

std::pair<torch::Tensor, torch::Tensor> OutputHeadImpl::components(const torch::Tensor& hidden,
                                                                   const torch::Tensor& weight,
                                                                   const torch::Tensor& bias,
                                                                   const ContextDropout& dropout) {
  // internal: the callers ask a mixture only (the word LM's mixture statistics need is_mixture).
  if (!mixture)
    throw std::logic_error("OutputHead::components: head " + options.spec().name() +
                           " is not a mixture");
  const auto [contexts, prior_logits] = mixture_inputs(hidden, dropout);
  return mixture->components(contexts, prior_logits, weight, bias);
}

}  // namespace sb::heads
