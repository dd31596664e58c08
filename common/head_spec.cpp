#include "common/head_spec.h"

#include <array>
#include <atomic>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/errors.h"

namespace sb {
namespace {

struct Entry {
  HeadKind kind;
  const char* name;
};
constexpr std::array<Entry, 12> kHeads{{
    {HeadKind::softmax, "softmax"},
    {HeadKind::sigsoftmax, "sigsoftmax"},
    {HeadKind::relu, "relu"},
    {HeadKind::sigmoid, "sigmoid"},
    {HeadKind::softmax_abs, "softmax_abs"},
    {HeadKind::spherical, "spherical"},
    {HeadKind::taylor, "taylor"},
    {HeadKind::sparse, "sparse"},
    {HeadKind::mos, "mos"},
    {HeadKind::moss, "moss"},
    {HeadKind::adaptive, "adaptive"},
    {HeadKind::adaptive_sigsoftmax, "adaptive_sigsoftmax"},
}};

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

int64_t parse_int(const std::string& text, const std::string& key, const std::string& spec) {
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty())
    throw OptionError::described(
        "head", "head '" + spec + "': " + key + "='" + text + "' is not an integer");
  return value;
}

double parse_double(const std::string& text, const std::string& key, const std::string& spec) {
  const auto value = parse_finite_number(text);
  if (!value)
    throw OptionError::described(
        "head", "head '" + spec + "': " + key + "='" + text + "' is not a finite number");
  return *value;
}

}  // namespace

const std::vector<std::string>& head_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto& e : kHeads) n.emplace_back(e.name);
    return n;
  }();
  return names;
}

std::string head_name(HeadKind kind) {
  for (const auto& e : kHeads)
    if (e.kind == kind) return e.name;
  // internal: kHeads lists every HeadKind; a kind is only made from that table or a literal.
  throw std::logic_error("head_name: unregistered HeadKind");
}

HeadKind head_kind_from_name(const std::string& name) {
  for (const auto& e : kHeads)
    if (name == e.name) return e.kind;
  throw OptionError::described("head",
                               "unknown head '" + name + "'; valid heads: " + join(head_names()));
}

std::optional<double> parse_finite_number(const std::string& text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != text.size() || !std::isfinite(value)) return std::nullopt;
  return value;
}

bool is_mixture(HeadKind kind) { return kind == HeadKind::mos || kind == HeadKind::moss; }

bool theorem2_bounded(HeadKind kind) { return kind == HeadKind::softmax; }

bool is_adaptive(HeadKind kind) {
  return kind == HeadKind::adaptive || kind == HeadKind::adaptive_sigsoftmax;
}

bool rank_bounded(HeadKind kind) { return kind == HeadKind::softmax || kind == HeadKind::adaptive; }

int64_t head_rank_bound(const HeadSpec& spec, int64_t d, bool bias, bool normaliser) {
  if (!normaliser) return d + (bias ? 1 : 0);
  // The derivation is in head_spec.h: Theorem 2's bound, plus one per tail cluster.
  const int64_t tails = is_adaptive(spec) ? static_cast<int64_t>(spec.cutoffs.size()) : 0;
  return theorem2_rank_bound(d, bias) + tails;
}

namespace {
constexpr std::pair<FinalNorm, const char*> kFinalNorms[] = {{FinalNorm::none, "none"},
                                                             {FinalNorm::layernorm, "layernorm"},
                                                             {FinalNorm::rmsnorm, "rmsnorm"}};
}  // namespace

std::string final_norm_name(FinalNorm norm) {
  for (const auto& [n, name] : kFinalNorms)
    if (n == norm) return name;
  return "none";
}

FinalNorm final_norm_from_name(const std::string& name) {
  for (const auto& [n, text] : kFinalNorms)
    if (name == text) return n;
  throw OptionError("final_norm", "none, layernorm or rmsnorm", name);
}

int64_t head_rank_bound(const HeadSpec& spec, int64_t d, bool bias, bool normaliser,
                        FinalNorm norm) {
  // LayerNorm (head_spec.h): the centred input spans d - 1 directions and beta adds a constant.
  if (norm == FinalNorm::layernorm) return head_rank_bound(spec, d - 1, /*bias=*/true, normaliser);
  return head_rank_bound(spec, d, bias, normaliser);
}

bool may_output_neg_inf(HeadKind kind) { return kind == HeadKind::sparse; }

bool rank_defined(HeadKind kind) { return !may_output_neg_inf(kind); }

HeadSpec HeadSpec::of(HeadKind kind) {
  HeadSpec spec;
  spec.kind = kind;
  // spherical: eps must be tuned; 0.0198 is de Brebisson & Vincent's value for their feed-forward
  // PTB language model (Table 5; docs/protocol.md, "spherical softmax").
  if (kind == HeadKind::spherical) spec.eps = 0.0198;
  return spec;
}

std::string HeadSpec::name() const { return head_name(kind); }

namespace {
std::atomic<std::size_t> parses{0};
}  // namespace

std::size_t HeadSpec::parse_count() { return parses.load(); }

HeadSpec HeadSpec::parse(const std::string& text) {
  ++parses;
  const auto colon = text.find(':');
  HeadSpec spec = of(head_kind_from_name(text.substr(0, colon)));
  if (colon == std::string::npos) return spec;

  std::stringstream options(text.substr(colon + 1));
  std::string item;
  bool in_cutoffs = false;  // "cutoffs=2000,6000": the items after cutoffs= without '=' extend it
  while (std::getline(options, item, ',')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos && in_cutoffs) {
      spec.cutoffs.push_back(parse_int(item, "cutoffs", text));
      continue;
    }
    in_cutoffs = false;
    if (eq == std::string::npos)
      throw OptionError::described("head",
                                   "head '" + text + "': option '" + item + "' is not key=value");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    const auto kind = spec.kind;
    if (key == "cutoffs" && is_adaptive(kind)) {
      spec.cutoffs = {parse_int(value, key, text)};
      in_cutoffs = true;
    } else if (key == "div" && is_adaptive(kind)) {
      spec.div = parse_double(value, key, text);
    } else if (key == "k" && kind == HeadKind::sparse) {
      spec.k = parse_int(value, key, text);
    } else if (key == "K" && is_mixture(kind)) {
      spec.experts = parse_int(value, key, text);
    } else if (key == "eps" && (kind == HeadKind::relu || kind == HeadKind::spherical)) {
      spec.eps = parse_double(value, key, text);
    } else if (key == "b" && kind == HeadKind::sigsoftmax) {
      spec.learnable_bias = parse_int(value, key, text) != 0;
    } else {
      throw OptionError::described("head", "head '" + text + "': unknown option '" + key +
                                               "' for " + spec.name() +
                                               " (valid: sparse k, mos/moss K, relu/spherical "
                                               "eps, sigsoftmax b=0|1, adaptive "
                                               "cutoffs=c1,c2,... and div)");
    }
  }
  for (size_t i = 0; i < spec.cutoffs.size(); ++i)
    if (spec.cutoffs[i] < 1 || (i > 0 && spec.cutoffs[i] <= spec.cutoffs[i - 1]))
      throw OptionError::described("head", "head '" + text +
                                               "': cutoffs must be increasing integers >= 1, "
                                               "e.g. cutoffs=2000,6000");
  if (!(spec.div >= 1))
    throw OptionError::described("head", "head '" + text + "': div must be >= 1");
  if (spec.k < 1) throw OptionError::described("head", "head '" + text + "': k must be >= 1");
  if (spec.experts < 1) throw OptionError::described("head", "head '" + text + "': K must be >= 1");
  if (!(spec.eps > 0)) throw OptionError::described("head", "head '" + text + "': eps must be > 0");
  return spec;
}

std::string HeadSpec::to_string() const {
  std::ostringstream out;
  out << name();
  switch (kind) {
    case HeadKind::sparse:
      out << ":k=" << k;
      break;
    case HeadKind::mos:
    case HeadKind::moss:
      out << ":K=" << experts;
      break;
    case HeadKind::relu:
    case HeadKind::spherical:
      out.precision(17);
      out << ":eps=" << eps;
      break;
    case HeadKind::sigsoftmax:
      if (learnable_bias) out << ":b=1";
      break;
    case HeadKind::adaptive:
    case HeadKind::adaptive_sigsoftmax: {
      out << ":cutoffs=";
      for (size_t i = 0; i < cutoffs.size(); ++i) out << (i ? "," : "") << cutoffs[i];
      if (div != 4.0) {
        out.precision(17);
        out << ",div=" << div;
      }
      break;
    }
    default:
      break;
  }
  return out.str();
}

HeadSpec parse_head_setting(const std::string& text, const std::string& hint) {
  try {
    return HeadSpec::parse(text);
  } catch (const OptionError& e) {
    throw OptionError::described("head", "head = \"" + text + "\": " + e.what() + hint);
  }
}

void check_head_fits(const HeadSpec& spec, int64_t M, const std::string& what) {
  if (is_adaptive(spec) && !spec.cutoffs.empty() && spec.cutoffs.back() >= M)
    throw OptionError::described(
        "head", "head = \"" + spec.to_string() + "\": the last cutoff " +
                    std::to_string(spec.cutoffs.back()) +
                    " is not below the M = " + std::to_string(M) + " " + what +
                    " (every tail cluster needs a word); set cutoffs below " + std::to_string(M));
  if (spec.kind == HeadKind::sparse && spec.k > M)
    throw OptionError::described("head", "head = \"" + spec.to_string() +
                                             "\": k = " + std::to_string(spec.k) +
                                             " exceeds the M = " + std::to_string(M) + " " + what +
                                             "; set k <= " + std::to_string(M));
}

std::string head_file_name(const std::string& text) {
  std::string name = text;
  for (char& c : name)
    if (c == ':' || c == '=' || c == ',') c = '_';
  return name;
}

}  // namespace sb
