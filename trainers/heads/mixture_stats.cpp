#include "trainers/heads/mixture_stats.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace sb::heads {

void MixtureStatsAccumulator::add(const torch::Tensor& log_pi_in, const torch::Tensor& log_f_in) {
  // internal: the parts are MixtureImpl::components()'s, (N, K) and (N, K, M) of one batch.
  if (log_pi_in.dim() != 2 || log_f_in.dim() != 3 || log_f_in.size(0) != log_pi_in.size(0) ||
      log_f_in.size(1) != log_pi_in.size(1))
    throw std::logic_error("MixtureStats: log_pi " + c10::str(log_pi_in.sizes()) + " and log_f " +
                           c10::str(log_f_in.sizes()) + " must be (N, K) and (N, K, M)");
  const int64_t k = log_pi_in.size(1);
  // internal: one accumulator sums the batches of one model, whose K is fixed.
  if (experts_ != 0 && k != experts_)
    throw std::logic_error("MixtureStats: K = " + std::to_string(k) +
                           " after batches with K = " + std::to_string(experts_));
  torch::NoGradGuard no_grad;
  const auto log_pi = log_pi_in.to(torch::kFloat64);  // (N, K)
  const auto log_f = log_f_in.to(torch::kFloat64);    // (N, K, M)
  const auto pi = log_pi.exp();                       // (N, K)
  // H(pi_t) = -sum_k pi log pi; pi = 0 contributes 0 (its log is -inf: mask it, no NaN).
  const auto plogp = torch::where(pi > 0, pi * log_pi, torch::zeros_like(pi));
  entropy_sum_ -= plogp.sum().item<double>();
  // log P_t = logsumexp_k(log pi_k + log f_k): (N, M).
  const auto log_p = (log_f + log_pi.unsqueeze(-1)).logsumexp(/*dim=*/1);
  // KL(f_k || P) = sum_m f_km (log f_km - log P_m): (N, K); f = 0 contributes 0.
  const auto f = log_f.exp();
  const auto terms = torch::where(f > 0, f * (log_f - log_p.unsqueeze(1)), torch::zeros_like(f));
  disagreement_sum_ += (pi * terms.sum(/*dim=*/-1)).sum().item<double>();
  const auto prior_sum = pi.sum(/*dim=*/0);  // (K)
  prior_sum_ = prior_sum_.defined() ? prior_sum_ + prior_sum : prior_sum;
  contexts_ += log_pi.size(0);
  experts_ = k;
}

MixtureStats MixtureStatsAccumulator::result() const {
  MixtureStats s;
  s.contexts = contexts_;
  s.experts = experts_;
  if (contexts_ == 0) return s;
  const double n = static_cast<double>(contexts_);
  s.prior_entropy = entropy_sum_ / n;
  s.disagreement = disagreement_sum_ / n;
  const auto mean_pi = prior_sum_ / n;  // (K)
  const auto plogp = torch::where(mean_pi > 0, mean_pi * mean_pi.log(), torch::zeros_like(mean_pi));
  s.mean_prior_entropy = -plogp.sum().item<double>();
  s.max_prior_entropy = std::log(static_cast<double>(experts_));
  return s;
}

}  // namespace sb::heads
