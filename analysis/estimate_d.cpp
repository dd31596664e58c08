#include "analysis/estimate_d.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/errors.h"

namespace sb::analysis {

DEstimate estimate_d(const contract::RankResult& r, const std::string& bias_from) {
  DEstimate e;
  e.source = r.source;
  e.gap_index = r.report.largest_gap_index;
  e.gap = r.report.largest_gap;
  e.input = r.input;
  e.input_from = r.input_from;
  e.bias_from = bias_from;
  e.minus_normaliser = r.input == "logprobs";
  if (!r.header.final_norm.empty()) e.final_norm = r.header.final_norm;
  e.layernorm = e.final_norm == "layernorm";
  e.minus_bias = !e.layernorm && !bias_from.empty() && r.header.bias;
  if (e.gap_index < 1)
    throw InputError::described(r.source, "",
                                r.source +
                                    ": no gap to read d from: fewer than two singular values "
                                    "above the method's resolution");
  e.d = e.gap_index - (e.minus_normaliser ? 1 : 0) - (e.minus_bias ? 1 : 0);
  if (e.d < 1)
    throw InputError::described(r.source, "",
                                r.source +
                                    ": the largest gap is at i = " + std::to_string(e.gap_index) +
                                    ", which leaves no hidden size once the normaliser and bias "
                                    "directions are taken off");
  return e;
}

std::string describe(const DEstimate& e) {
  char gap[160];
  std::snprintf(gap, sizeof gap, "largest gap sigma_%lld / sigma_%lld = %.3g at i = %lld",
                static_cast<long long>(e.gap_index), static_cast<long long>(e.gap_index + 1), e.gap,
                static_cast<long long>(e.gap_index));
  std::string why = e.minus_normaliser ? "minus 1 for the log-softmax normaliser (" + e.input_from +
                                             " log-probabilities)"
                                       : "nothing for a normaliser (" + e.input_from + " logits)";
  if (e.layernorm)
    why +=
        " and nothing for a bias (final LayerNorm: its centring takes one direction and its "
        "beta adds a constant one)";
  else
    why += e.minus_bias ? " and 1 for the decoder bias (" + e.bias_from + ")"
           : e.bias_from.empty()
               ? " and nothing for a bias (none stated: --bias 1 if the decoder has one)"
               : " and nothing for a bias (" + e.bias_from + " = 0)";
  return "d = " + std::to_string(e.d) + " (" + gap + "; " + why + ")";
}

std::string estimate_json(const DEstimate& e) {
  return nlohmann::json{
      {"file", e.source},
      {"d", e.d},
      {"gap", e.gap},
      {"gap_index", e.gap_index},
      {"input", e.input},
      {"input_from", e.input_from},
      {"minus_normaliser", e.minus_normaliser ? 1 : 0},
      {"minus_bias", e.minus_bias ? 1 : 0},
      {"bias_from", e.bias_from.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.bias_from)},
      {"final_norm", e.final_norm}}
      .dump();
}

}  // namespace sb::analysis
