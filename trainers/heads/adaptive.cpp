#include "trainers/heads/adaptive.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "common/errors.h"
#include "trainers/heads/sigsoftmax.h"
#include "trainers/heads/softmax.h"

namespace sb::heads {
namespace {

torch::Tensor log_g(const torch::Tensor& logits, bool sigsoftmax) {
  return sigsoftmax ? log_sigsoftmax(logits) : log_softmax(logits);
}

}  // namespace

torch::Tensor adaptive_log_output(const torch::Tensor& head_logits,
                                  const std::vector<torch::Tensor>& tail_logits, bool sigsoftmax) {
  const int64_t n = static_cast<int64_t>(tail_logits.size());
  const int64_t c1 = head_logits.size(1) - n;
  // internal: AdaptiveImpl makes c_1 >= 1 word logits and one per tail cluster (head_logits()).
  if (c1 < 1)
    throw std::logic_error("adaptive_log_output: " + std::to_string(head_logits.size(1)) +
                           " head logits for " + std::to_string(n) + " tail clusters");
  const auto head = log_g(head_logits, sigsoftmax);  // (N, c_1 + n)
  std::vector<torch::Tensor> parts{head.narrow(/*dim=*/1, /*start=*/0, /*length=*/c1)};
  for (int64_t i = 0; i < n; ++i)  // log p(cluster i) + log p(w | cluster i): (N, |V_i|)
    parts.push_back(head.narrow(/*dim=*/1, c1 + i, /*length=*/1) +
                    log_g(tail_logits[static_cast<size_t>(i)], sigsoftmax));
  return torch::cat(parts, /*dim=*/1);  // (N, M)
}

AdaptiveImpl::AdaptiveImpl(const AdaptiveOptions& options_) : options(options_) { reset(); }

int64_t AdaptiveImpl::tail_dim(size_t i) const {
  const double d = static_cast<double>(options.input_size());
  return std::max<int64_t>(
      1, static_cast<int64_t>(std::floor(d / std::pow(options.div(), double(i + 1)))));
}

void AdaptiveImpl::reset() {
  const auto& c = options.cutoffs();
  const int64_t d = options.input_size(), M = options.vocab_size();
  bool increasing = !c.empty() && c.front() >= 1;
  for (size_t i = 1; i < c.size(); ++i) increasing &= c[i] > c[i - 1];
  if (d < 1 || !increasing || c.back() >= M || !(options.div() >= 1))
    throw OptionError::described(
        "head", "Adaptive: need input_size >= 1, increasing cutoffs >= 1 below vocab_size = " +
                    std::to_string(M) + " and div >= 1");
  const int64_t n = static_cast<int64_t>(c.size());
  // The cluster rows start as the embedding does (U(-0.1, 0.1), the decoder's rows in the word
  // LM); projections and tail outputs as torch.nn.Linear (U(-1/sqrt(in), 1/sqrt(in))).
  cluster_weight = register_parameter("cluster_weight", torch::empty({n, d}).uniform_(-0.1, 0.1));
  cluster_bias = options.cluster_bias() ? register_parameter("cluster_bias", torch::zeros({n}))
                                        : torch::Tensor();
  projection.clear();
  output.clear();
  for (size_t i = 0; i < c.size(); ++i) {
    const int64_t di = tail_dim(i), size = (i + 1 < c.size() ? c[i + 1] : M) - c[i];
    const double a = 1.0 / std::sqrt(double(d)), b = 1.0 / std::sqrt(double(di));
    projection.push_back(register_parameter("projection" + std::to_string(i),
                                            torch::empty({di, d}).uniform_(-a, a)));
    output.push_back(
        register_parameter("output" + std::to_string(i), torch::empty({size, di}).uniform_(-b, b)));
  }
}

torch::Tensor AdaptiveImpl::head_logits(const torch::Tensor& hidden, const torch::Tensor& weight,
                                        const torch::Tensor& bias) {
  const int64_t c1 = options.cutoffs().front();
  const auto words = torch::nn::functional::linear(
      hidden, weight.narrow(/*dim=*/0, /*start=*/0, c1),
      bias.defined() ? bias.narrow(/*dim=*/0, /*start=*/0, c1) : torch::Tensor());  // (N, c_1)
  const auto clusters =
      torch::nn::functional::linear(hidden, cluster_weight, cluster_bias);  // (N, n)
  return torch::cat({words, clusters}, /*dim=*/1);                          // (N, c_1 + n)
}

torch::Tensor AdaptiveImpl::tail_logits(const torch::Tensor& hidden, const torch::Tensor& bias,
                                        size_t i) {
  const auto z = hidden.matmul(projection[i].t()).matmul(output[i].t());  // (N, d_i) -> (N, |V_i|)
  if (!bias.defined()) return z;
  const auto& c = options.cutoffs();
  const int64_t begin = c[i], end = i + 1 < c.size() ? c[i + 1] : options.vocab_size();
  return z + bias.narrow(/*dim=*/0, begin, end - begin);  // the decoder's bias of these words
}

torch::Tensor AdaptiveImpl::forward(const torch::Tensor& hidden, const torch::Tensor& weight,
                                    const torch::Tensor& bias) {
  std::vector<torch::Tensor> tails;
  for (size_t i = 0; i < output.size(); ++i) tails.push_back(tail_logits(hidden, bias, i));
  return adaptive_log_output(head_logits(hidden, weight, bias), tails, options.sigsoftmax());
}

torch::Tensor AdaptiveImpl::nll(const torch::Tensor& hidden, const torch::Tensor& weight,
                                const torch::Tensor& bias, const torch::Tensor& targets) {
  const auto& c = options.cutoffs();
  const int64_t c1 = c.front(), N = hidden.size(0), M = options.vocab_size();
  const bool sig = options.sigsoftmax();
  const bool integral = c10::isIntegralType(targets.scalar_type(), /*includeBool=*/false);
  // internal: the word LM passes its batch's int64 (N,) target ids (check_targets' reasons).
  if (targets.dim() != 1 || targets.size(0) != N || !integral)
    throw std::logic_error("Adaptive::nll: targets must be integer (N,) with N = " +
                           std::to_string(N) + ", got " + c10::str(targets.sizes()));
  // internal: the ids index the frequency-sorted vocabulary of the same corpus, M words.
  if (N > 0 && (targets.min().item<int64_t>() < 0 || targets.max().item<int64_t>() >= M))
    throw std::logic_error("Adaptive::nll: targets must lie in [0, " + std::to_string(M) + ")");
  const auto boundaries = torch::tensor(c, targets.options());
  // 0 for a head word, i for a word of tail cluster i (c_i <= w < c_(i+1)).
  const auto cluster = torch::bucketize(targets, boundaries, /*out_int32=*/false, /*right=*/true);
  const auto head_index = torch::where(cluster == 0, targets, cluster + (c1 - 1));  // (N)
  const auto head = log_g(head_logits(hidden, weight, bias), sig);                  // (N, c1 + n)
  auto total = -head.gather(/*dim=*/1, head_index.unsqueeze(1)).sum();
  for (size_t i = 0; i < output.size(); ++i) {
    const auto rows = (cluster == int64_t(i + 1)).nonzero().squeeze(1);  // (N_i)
    if (rows.numel() == 0) continue;
    const auto local = targets.index_select(/*dim=*/0, rows) - c[i];  // (N_i)
    const auto tail = log_g(tail_logits(hidden.index_select(/*dim=*/0, rows), bias, i), sig);
    total = total - tail.gather(/*dim=*/1, local.unsqueeze(1)).sum();
  }
  return total / static_cast<double>(N);
}

}  // namespace sb::heads
