#include "analysis/model_facts.h"

#include <limits>
#include <vector>

#include "common/errors.h"
#include "common/head_spec.h"

namespace sb::analysis {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i];
  return s;
}

// A given fact against the file's attribute: equal, or a one-line error naming both. The option
// is --<name> with '_' spelled '-' (final_norm: --final-norm).
void agree(const std::string& path, const std::string& name, const std::string& in_file,
           const std::string& given) {
  std::string option = name;
  for (char& c : option)
    if (c == '_') c = '-';
  if (in_file != given)
    throw InputError::described(path, "attribute '" + name + "'",
                                path + ": attribute '" + name + "' is " + in_file + ", but --" +
                                    option + " gives " + given +
                                    " (--head, --d, --bias, --final-norm only fill in what a file "
                                    "lacks)");
}

}  // namespace

void check_model_facts(const ModelFacts& given) {
  if (!given.head.empty()) {
    try {
      HeadSpec::parse(given.head);  // a name, or a spelling with options (adaptive: cutoffs)
    } catch (const OptionError& e) {
      throw OptionError::described("--head", std::string("--head: ") + e.what());
    }
  }
  if (given.d && *given.d < 1)
    throw OptionError::for_setting("--d", "--d " + std::to_string(*given.d), "d >= 1");
  if (!given.final_norm.empty()) {
    try {
      final_norm_from_name(given.final_norm);
    } catch (const OptionError&) {
      throw OptionError("--final-norm", "none, layernorm or rmsnorm", given.final_norm);
    }
  }
  if (given.bias && *given.bias != 0 && *given.bias != 1)
    throw OptionError::for_setting("--bias", "--bias " + std::to_string(*given.bias),
                                   "bias 0 or 1");
}

contract::LogProbHeader resolve_header(const MatrixSource& source, const ModelFacts& given) {
  check_model_facts(given);
  const std::string& path = source.path();
  if (const contract::LogProbHeader* file = source.header()) {
    if (!given.head.empty()) {
      // The name, or the whole spelling when either side has options.
      const HeadSpec spec = HeadSpec::parse(given.head);
      if (given.head == spec.name())
        agree(path, "head", file->head, given.head);
      else
        agree(path, "head", file->head_spec.empty() ? file->head : file->head_spec,
              spec.to_string());
    }
    if (given.d) agree(path, "d", std::to_string(file->d), std::to_string(*given.d));
    if (given.bias) agree(path, "bias", file->bias ? "1" : "0", std::to_string(*given.bias));
    if (given.final_norm.empty() || file->final_norm.empty()) {
      contract::LogProbHeader h = *file;
      if (h.final_norm.empty()) h.final_norm = given.final_norm;
      return h;
    }
    agree(path, "final_norm", file->final_norm, given.final_norm);
    return *file;
  }
  std::vector<std::string> missing, options;
  if (given.head.empty()) {
    missing.push_back("head");
    options.push_back("--head NAME (e.g. softmax, or adaptive:cutoffs=2000,6000)");
  }
  if (!given.d) {
    missing.push_back("d");
    options.push_back("--d N (the size of the vector the decoder multiplies)");
  }
  if (!given.bias) {
    missing.push_back("bias");
    options.push_back("--bias 0|1 (decoder bias)");
  }
  if (!missing.empty())
    throw InputError::described(path, missing.size() == 1 ? missing.front() : "",
                                path + ": missing " + join(missing) + " (" + source.plain_kind() +
                                    " carries no attributes): pass " + join(options));
  contract::LogProbHeader h;
  const HeadSpec spec = HeadSpec::parse(given.head);
  h.head = spec.name();
  if (given.head != spec.name()) h.head_spec = spec.to_string();
  h.d = *given.d;
  h.bias = *given.bias == 1;
  h.final_norm = source.declared_final_norm();  // a plain HDF5 file may carry it
  if (!given.final_norm.empty()) {
    if (!h.final_norm.empty()) agree(path, "final_norm", h.final_norm, given.final_norm);
    h.final_norm = given.final_norm;
  }
  h.M = source.cols();
  h.T = source.rows();
  h.compute_dtype = source.float64() ? "float64" : "float32";
  h.ppl = std::numeric_limits<double>::quiet_NaN();
  return h;
}

}  // namespace sb::analysis
