#pragma once
// The facts the verdict needs that only a contract file carries (head, d, bias), given on the
// command line (--head, --d, --bias) for a file without them: a .npy file or a plain HDF5 file.
// For a contract file the options must agree with its attributes: they fill gaps, they never
// overrule what the producer recorded.

#include <cstdint>
#include <optional>
#include <string>

#include "analysis/matrix_source.h"
#include "contract/logprob_file.h"

namespace sb::analysis {

struct ModelFacts {
  std::string head;          ///< registry name (head_spec.h); empty: not given
  std::optional<int64_t> d;  ///< size of the vector the decoder multiplies; empty: not given
  std::optional<int> bias;   ///< decoder bias 0 or 1; empty: not given
  /// The model's final normalisation (--final-norm: none, layernorm, rmsnorm); empty: not given
  /// (a file's attribute 'final_norm', else none). Lowers the bound (common/head_spec.h).
  std::string final_norm;
};

/// Throws sb::OptionError for a given fact out of range, naming the option and the value:
/// "--head: unknown head 'x' ..." (with the valid names), "--d 0: expected d >= 1",
/// "--bias 2: expected bias 0 or 1", "--final-norm: expected none, layernorm or rmsnorm, got x".
/// A given value is never taken for "not given".
void check_model_facts(const ModelFacts& given);

/// The header the analysis reports for `source`: the file's own, each given fact checked against
/// its attribute; or, for a plain matrix, one built from the given facts and the data (T, M,
/// compute_dtype = the data's dtype, which sets the default eps; ppl NaN; dataset, split empty).
/// --final-norm fills in a file without the attribute and must agree with one that has it.
/// A plain matrix without some of head, d, bias throws one sb::InputError line naming the
/// file, each missing fact and the option that supplies it.
contract::LogProbHeader resolve_header(const MatrixSource& source, const ModelFacts& given);

}  // namespace sb::analysis
