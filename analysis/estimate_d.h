#pragma once
// rank_analysis --estimate-d: the hidden size d of the model behind a matrix of logits or
// log-probabilities, read off the spectrum. A softmax model's logits Z = H W^T + 1 b^T have rank
// d + bias and its log-probabilities d + 1 + bias (input_kind.h); measured, the singular values
// beyond that rank are round-off and noise, orders of magnitude below. The largest ratio
// sigma_i / sigma_(i+1) (numerical_rank.h: over singular values above the method's resolution)
// sits at i = that rank, so d = i - 1 (log-probabilities: the normaliser) - bias. The gap test is
// the classic reading of a numerical rank from a spectrum with a clear gap (Golub and Van Loan,
// Matrix Computations, 4th ed., section 5.4.1); it assumes the model's d singular values lie above
// the noise, which a trained decoder's do unless H or W is itself nearly rank deficient.

#include <cstdint>
#include <string>

#include "contract/rank_result.h"

namespace sb::analysis {

struct DEstimate {
  std::string source;
  int64_t d = 0;
  int64_t gap_index = -1;  ///< i of the largest sigma_i / sigma_(i+1), 1-based
  double gap = 0;
  bool minus_normaliser = false;  ///< log-probabilities: the normaliser's direction taken off
  bool minus_bias = false;        ///< a decoder bias (given or recorded) taken off
  /// A final LayerNorm (given or recorded): its centring takes one direction and its beta adds a
  /// constant one whatever the bias, so the rank is d + [normaliser] and no bias is taken off
  /// (common/head_spec.h, head_rank_bound).
  bool layernorm = false;
  std::string final_norm = "none";  ///< the header's final_norm ("none" when not stated)
  std::string input, input_from, bias_from;
};

/// From a result with singular values. bias_from: "--bias", "attribute 'bias'" or "" (no bias
/// stated: none subtracted). Throws sb::InputError "<file>: ..." when there is no gap (fewer
/// than two singular values above the resolution) or it leaves d < 1.
DEstimate estimate_d(const contract::RankResult& result, const std::string& bias_from);

/// "d = 768 (largest gap sigma_770 / sigma_771 = 3.2e+05 at i = 770; minus 1 for the
/// log-softmax normaliser and 1 for the decoder bias)".
std::string describe(const DEstimate& e);
/// One JSON object: file, d, gap, gap_index, input, input_from, minus_normaliser, minus_bias,
/// bias_from, final_norm.
std::string estimate_json(const DEstimate& e);

}  // namespace sb::analysis
