#pragma once
// What a mixture head (MoS / MoSS) does with its K experts, measured over a set of contexts t:
//   prior entropy       mean_t H(pi_t)                     in [0, log K]: 0 when each context
//                       puts all its weight on one expert (not necessarily the same one)
//   mean-prior entropy  H(mean_t pi_t)                     in [0, log K]: 0 when every context
//                       uses the same single expert, i.e. the prior has collapsed
//   disagreement        mean_t sum_k pi_tk KL(f_tk || P_t) in [0, H(pi_t)] nats: the pi-weighted
//                       (generalised) Jensen-Shannon divergence of the experts, equal to
//                       H(P_t) - sum_k pi_tk H(f_tk) and to the mutual information between the
//                       expert index and the next word given the context; 0 when the experts
//                       agree, i.e. the mixture is a single softmax (sigsoftmax) of one context
// A mixture's log-output can only leave the softmax bound (Theorem 2) through contexts where both
// the prior is spread (prior entropy > 0) and the experts disagree (disagreement > 0). All in nats.

#include <torch/torch.h>

#include <cstdint>

namespace sb::heads {

struct MixtureStats {
  int64_t contexts = 0;           ///< how many contexts (rows) the means are over
  int64_t experts = 0;            ///< K
  double prior_entropy = 0;       ///< mean_t H(pi_t)
  double mean_prior_entropy = 0;  ///< H(mean_t pi_t)
  double disagreement = 0;        ///< mean_t sum_k pi_tk KL(f_tk || P_t)
  double max_prior_entropy = 0;   ///< log K, the bound of both entropies
};

/// Sums over batches of contexts, in float64; result() gives the means.
class MixtureStatsAccumulator {
 public:
  /// log_pi (N, K) and log_f (N, K, M), as MixtureImpl::components() returns them (any float
  /// dtype; every row of exp(log_pi) and of exp(log_f) sums to 1). Throws std::logic_error on
  /// mismatched shapes or a K different from the batches before (a programming error).
  void add(const torch::Tensor& log_pi, const torch::Tensor& log_f);
  /// The means over every context added so far (all zeros before any).
  MixtureStats result() const;

 private:
  int64_t contexts_ = 0, experts_ = 0;
  double entropy_sum_ = 0, disagreement_sum_ = 0;
  torch::Tensor prior_sum_;  // (K) float64: sum_t pi_t
};

}  // namespace sb::heads
