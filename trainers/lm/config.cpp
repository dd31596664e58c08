#include "trainers/lm/config.h"

#include <toml++/toml.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "common/head_spec.h"

namespace sb::lm {

const WordLmConfig& paper_defaults() {
  static const WordLmConfig defaults{};
  return defaults;
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

using IntField = int64_t WordLmConfig::*;
using NumberField = double WordLmConfig::*;
using StringField = std::string WordLmConfig::*;
using BoolField = bool WordLmConfig::*;

/// Shortest text that reads back to the same double (30, 0.1, 1.2e-06), valid as a TOML value.
std::string format_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0";  // TOML's -0 is the integer 0
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string text(buf, res.ptr);
  // Shortest fixed notation of a large value may not fit TOML's 64-bit integers: use an exponent.
  if (text.find_first_not_of("-0123456789") == std::string::npos && std::fabs(v) >= 1e15) {
    res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    text.assign(buf, res.ptr);
  }
  return text;
}

/// A TOML basic string: quoted, with quotes, backslashes and control characters escaped.
std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04X", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

ConfigRange any_value() { return {-kInf, false, kInf, false, ""}; }
ConfigRange at_least(double lo) { return {lo, false, kInf, false, ">= " + format_double(lo)}; }
ConfigRange above(double lo) { return {lo, true, kInf, false, "> " + format_double(lo)}; }
ConfigRange probability() { return {0, false, 1, true, "[0, 1)"}; }

bool in_range(const ConfigRange& r, double v) {
  const bool lo_ok = r.lo_open ? v > r.lo : v >= r.lo;
  const bool hi_ok = r.hi_open ? v < r.hi : v <= r.hi;
  return lo_ok && hi_ok;
}

std::string type_of(const ConfigField& field) {
  switch (field.index()) {
    case 0:
      return "integer";
    case 1:
      return "number";
    case 2:
      return "string";
    default:
      return "boolean";
  }
}

std::string with_article(const std::string& type) {
  return (type == "integer" ? "an " : "a ") + type;
}

ConfigKey row(const char* name, const char* group, ConfigField field, ConfigRange range,
              const char* description) {
  ConfigKey key;
  key.name = name;
  key.group = group;
  key.type = type_of(field);
  key.description = description;
  key.range = std::move(range);
  key.field = field;
  key.default_text = key.value_text(WordLmConfig{});
  return key;
}

std::vector<ConfigKey> make_table() {
  using C = WordLmConfig;
  const auto any = any_value();
  return {
      // data
      row("dataset", "data", &C::dataset, any,
          "corpus name: ptb | wikitext-2 (finds the data; names the outputs)"),
      row("data", "data", &C::data, any,
          "corpus directory; \"\" = search datasets/ and ../shared/datasets"),
      row("train_tokens", "data", &C::train_tokens, at_least(0),
          "use only the first N training tokens (0 = all); scaled-down CPU runs"),
      row("valid_tokens", "data", &C::valid_tokens, at_least(0),
          "use only the first N validation tokens (0 = all)"),
      row("test_tokens", "data", &C::test_tokens, at_least(0),
          "use only the first N test tokens (0 = all)"),
      // model
      row("head", "model", &C::head, any,
          "output head, registry spelling (e.g. \"sigsoftmax\", \"mos:K=15\", \"sparse:k=20\")"),
      row("emsize", "model", &C::emsize, at_least(1),
          "embedding size = d (tied decoder input size)"),
      row("nhid", "model", &C::nhid, at_least(1), "hidden units of the inner LSTM layers"),
      row("nhidlast", "model", &C::nhidlast, at_least(0),
          "units of the last LSTM layer; 0 = emsize (single heads need emsize)"),
      row("nlayers", "model", &C::nlayers, at_least(1), "number of LSTM layers"),
      row("dropout", "model", &C::dropout, probability(),
          "locked dropout on the last layer's output"),
      row("dropouth", "model", &C::dropouth, probability(), "locked dropout between LSTM layers"),
      row("dropouti", "model", &C::dropouti, probability(), "locked dropout on the word vectors"),
      row("dropoute", "model", &C::dropoute, probability(), "embedding dropout (whole words)"),
      row("wdrop", "model", &C::wdrop, probability(),
          "DropConnect on the hidden-to-hidden weights"),
      row("dropoutl", "model", &C::dropoutl, probability(),
          "MoS/MoSS latent (context vector) dropout"),
      row("latent_bias", "model", &C::latent_bias, any,
          "MoS/MoSS: contexts tanh(W_h h + b_h) as Yang et al.'s code; false: tanh(W_h h)"),
      // training
      row("batch_size", "training", &C::batch_size, at_least(1), "training batch size"),
      row("eval_batch_size", "training", &C::eval_batch_size, at_least(1), "validation batch size"),
      row("bptt", "training", &C::bptt, at_least(1), "base sequence length of truncated BPTT"),
      row("lr", "training", &C::lr, above(0), "SGD / ASGD learning rate"),
      row("clip", "training", &C::clip, at_least(0), "gradient norm clipping (0 = no clipping)"),
      row("wdecay", "training", &C::wdecay, at_least(0), "weight decay"),
      row("alpha", "training", &C::alpha, at_least(0), "activation regularisation (AR)"),
      row("beta", "training", &C::beta, at_least(0), "temporal activation regularisation (TAR)"),
      row("nonmono", "training", &C::nonmono, at_least(1), "NT-ASGD non-monotone interval"),
      row("epochs", "training", &C::epochs, at_least(1), "max epochs of the main phase"),
      row("finetune_epochs", "training", &C::finetune_epochs, at_least(0),
          "max epochs of finetuning (0 = skip finetuning)"),
      row("max_batches", "training", &C::max_batches, at_least(0),
          "stop an epoch after N batches (0 = whole epoch); scaled-down runs"),
      row("seed", "training", &C::seed, at_least(0), "random seed"),
      row("threads", "training", &C::threads, at_least(0), "threads (0 = number of cores)"),
      row("device", "training", &C::device, any,
          "auto | cpu | cuda | cuda:N (auto = cuda when LibTorch has it and a GPU is visible)"),
      row("log_interval", "training", &C::log_interval, at_least(1),
          "progress line every N batches"),
      // outputs
      row("out", "outputs", &C::out, any, "run directory; \"\" = results/<dataset>_<head>"),
      row("dump_test", "outputs", &C::dump_test, any,
          "write the test-set log-output HDF5 file after training"),
      row("epoch_dump_rows", "outputs", &C::epoch_dump_rows, at_least(0),
          "after every epoch (main and finetuning), write the first N test rows (batch size 1, "
          "the weights just validated) to <out>/epochs/<phase>_<epoch>.h5 (0 = off)"),
      row("mixture_stats", "outputs", &C::mixture_stats, at_least(0),
          "MoS/MoSS: after every epoch, the prior's entropies and the experts' disagreement on "
          "N positions at the start of the validation split, to metrics.jsonl (0 = off)"),
  };
}

/// "" if `value` is a valid command-line value for `key`, else why not ("expected ...").
std::string override_error(const ConfigKey& key, const std::string& value) {
  const std::string expected = "expected " + with_article(key.type) + ", got '" + value + "'";
  switch (key.field.index()) {
    case 0: {
      int64_t parsed = 0;
      const char* end = value.data() + value.size();
      const auto res = std::from_chars(value.data(), end, parsed);
      return (value.empty() || res.ec != std::errc() || res.ptr != end) ? expected : "";
    }
    case 1:
      return sb::parse_finite_number(value) ? "" : expected;
    case 2:
      return "";
    default:
      return (value == "true" || value == "false" || value == "1" || value == "0")
                 ? ""
                 : "expected a boolean (true/false/1/0), got '" + value + "'";
  }
}

std::string node_type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "table";
    case toml::node_type::array:
      return "array";
    case toml::node_type::string:
      return "string";
    case toml::node_type::integer:
      return "integer";
    case toml::node_type::floating_point:
      return "float";
    case toml::node_type::boolean:
      return "boolean";
    case toml::node_type::date:
      return "date";
    case toml::node_type::time:
      return "time";
    case toml::node_type::date_time:
      return "date-time";
    default:
      return "nothing";
  }
}

/// "string \"x\"", "float 1150.5", "array": a node's type and, for scalars, its value.
std::string describe_node(const toml::node& node) {
  std::string text = node_type_name(node);
  if (const auto* s = node.as_string()) return text + " " + toml_string(s->get());
  if (const auto* i = node.as_integer()) return text + " " + std::to_string(i->get());
  if (const auto* b = node.as_boolean()) return text + (b->get() ? " true" : " false");
  if (const auto* f = node.as_floating_point()) {
    std::string value = format_double(f->get());
    if (value.find_first_of(".ein") == std::string::npos) value += ".0";
    return text + " " + value;
  }
  return text;
}

std::string location(const std::string& path, const toml::source_region& where) {
  if (where.begin.line == 0) return path;
  return path + ":" + std::to_string(where.begin.line) + ":" + std::to_string(where.begin.column);
}

std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

void set_from_node(WordLmConfig& cfg, const ConfigKey& key, const toml::node& node,
                   const std::string& where) {
  const auto mismatch = [&] {
    return std::runtime_error(where + ": key '" + key.name + "': expected " +
                              with_article(key.type) + ", got " + describe_node(node));
  };
  if (const auto* f = std::get_if<IntField>(&key.field)) {
    const auto* v = node.as_integer();
    if (!v) throw mismatch();
    cfg.*(*f) = v->get();
  } else if (const auto* n = std::get_if<NumberField>(&key.field)) {
    if (const auto* d = node.as_floating_point()) {
      cfg.*(*n) = d->get();
    } else if (const auto* i = node.as_integer()) {
      cfg.*(*n) = static_cast<double>(i->get());
    } else {
      throw mismatch();
    }
  } else if (const auto* s = std::get_if<StringField>(&key.field)) {
    const auto* v = node.as_string();
    if (!v) throw mismatch();
    cfg.*(*s) = v->get();
  } else {
    const auto* v = node.as_boolean();
    if (!v) throw mismatch();
    cfg.*std::get<BoolField>(key.field) = v->get();
  }
}

std::string group_title(const std::string& group) {
  std::string title = group;
  if (!title.empty()) title[0] = static_cast<char>(title[0] - 'a' + 'A');
  return title + " (config keys)";
}

}  // namespace

std::string ConfigKey::value_text(const WordLmConfig& cfg) const {
  if (const auto* f = std::get_if<IntField>(&field)) return std::to_string(cfg.*(*f));
  if (const auto* n = std::get_if<NumberField>(&field)) return format_double(cfg.*(*n));
  if (const auto* s = std::get_if<StringField>(&field)) return toml_string(cfg.*(*s));
  return cfg.*std::get<BoolField>(field) ? "true" : "false";
}

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> table = make_table();
  return table;
}

const ConfigKey* find_config_key(const std::string& name) {
  for (const auto& key : config_keys())
    if (key.name == name) return &key;
  return nullptr;
}

std::string config_key_list() {
  std::string out;
  for (const auto& key : config_keys()) out += (out.empty() ? "" : ", ") + key.name;
  return out;
}

WordLmConfig load_config_file(const std::string& path, WordLmConfig base) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw std::runtime_error(path + ": cannot read (no such file)");
  if (fs::is_directory(path, ec)) throw std::runtime_error(path + ": cannot read (a directory)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw std::runtime_error(path + ": cannot read");
  return load_config_text(text.str(), path, std::move(base));
}

WordLmConfig load_config_text(const std::string& text, const std::string& source,
                              WordLmConfig base) {
  toml::table table;
  try {
    table = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    throw std::runtime_error(location(source, e.source()) + ": " +
                             one_line(std::string(e.description())));
  }
  for (const auto& [name, node] : table) {
    const std::string where = location(source, name.source());
    const ConfigKey* key = find_config_key(std::string(name.str()));
    if (!key)
      throw std::runtime_error(where + ": unknown key '" + std::string(name.str()) +
                               "' (valid keys: " + config_key_list() + ")");
    set_from_node(base, *key, node, where);
  }
  return base;
}

void apply_override(WordLmConfig& cfg, const std::string& name, const std::string& value) {
  const ConfigKey* key = find_config_key(name);
  if (!key)
    throw std::invalid_argument("unknown option '--" + name +
                                "' (valid keys: " + config_key_list() + ")");
  const std::string error = override_error(*key, value);
  if (!error.empty()) throw std::invalid_argument("--" + name + ": " + error);
  if (const auto* f = std::get_if<IntField>(&key->field)) {
    cfg.*(*f) = std::stoll(value);
  } else if (const auto* n = std::get_if<NumberField>(&key->field)) {
    cfg.*(*n) = *sb::parse_finite_number(value);
  } else if (const auto* s = std::get_if<StringField>(&key->field)) {
    cfg.*(*s) = value;
  } else {
    cfg.*std::get<BoolField>(key->field) = (value == "true" || value == "1");
  }
}

bool is_device_name(const std::string& name) {
  if (name == "auto" || name == "cpu" || name == "cuda") return true;
  const std::string prefix = "cuda:";
  return name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
         name.find_first_not_of("0123456789", prefix.size()) == std::string::npos;
}

void validate(const WordLmConfig& cfg) {
  for (const auto& key : config_keys()) {
    double value = 0;
    if (const auto* f = std::get_if<IntField>(&key.field)) {
      value = static_cast<double>(cfg.*(*f));
    } else if (const auto* n = std::get_if<NumberField>(&key.field)) {
      value = cfg.*(*n);
      if (!std::isfinite(value))
        throw std::invalid_argument(key.name + " must be a finite number, got " +
                                    key.value_text(cfg));
    } else {
      continue;
    }
    if (!in_range(key.range, value))
      throw std::invalid_argument(key.name + " must be " + (key.range.text[0] == '[' ? "in " : "") +
                                  key.range.text + ", got " + key.value_text(cfg));
  }
  if (cfg.dataset.empty())
    throw std::invalid_argument("dataset must not be empty (e.g. \"ptb\" or \"wikitext-2\")");
  if (!is_device_name(cfg.device))
    throw std::invalid_argument("device must be auto, cpu, cuda or cuda:N, got \"" + cfg.device +
                                "\"");

  const HeadSpec spec = parse_head_setting(cfg.head);
  const bool mixture = is_mixture(spec);
  if (!mixture && cfg.nhidlast != 0 && cfg.nhidlast != cfg.emsize)
    throw std::invalid_argument(
        "nhidlast = " + std::to_string(cfg.nhidlast) +
        " needs a mixture head (mos/moss): a single head's decoder input is emsize = " +
        std::to_string(cfg.emsize) + " (head = \"" + cfg.head + "\"; set nhidlast = 0 or " +
        std::to_string(cfg.emsize) + ")");
}

std::string to_toml(const WordLmConfig& cfg) {
  std::ostringstream out;
  out << "# Word-level LM configuration (trainers/lm/config.h). Flat `key = value` lines;\n"
      << "# on the command line, --<key> VALUE overrides this file.\n";
  std::string group;
  for (const auto& key : config_keys()) {
    if (key.group != group) {
      group = key.group;
      out << "\n# ---- " << group << " ----\n";
    }
    out << "# " << key.description << "\n" << key.name << " = " << key.value_text(cfg) << "\n";
  }
  return out.str();
}

std::string default_run_dir(const WordLmConfig& cfg) {
  if (!cfg.out.empty()) return cfg.out;
  return "results/" + cfg.dataset + "_" + head_file_name(cfg.head);
}

void add_config_options(CLI::App& app, ConfigArgs& args) {
  // Room for the longest "--finetune_epochs INTEGER=500" so every key's help stays on one line.
  auto formatter = app.get_formatter();
  formatter->column_width(std::max<std::size_t>(formatter->get_column_width(), 34));
  app.add_option("--config", args.config_path,
                 "TOML file of config keys (e.g. trainers/configs/ptb_smoke.toml); "
                 "--<key> options below override it, whatever their order")
      ->type_name("FILE");
  for (const auto& key : config_keys()) {
    std::string help = key.description;
    if (!key.range.text.empty()) help += "; range " + key.range.text;
    std::string type = key.type;
    for (char& c : type) c = static_cast<char>(c - 'a' + 'A');
    const ConfigKey* row_ptr = &key;  // config_keys() is static: the row outlives the app
    app.add_option_function<std::string>(
           "--" + key.name,
           [&args, name = key.name](const std::string& value) {
             args.overrides.emplace_back(name, value);
           },
           help)
        ->type_name(type)
        ->default_str(key.default_text)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
        ->check(CLI::Validator(
            [row_ptr](std::string& value) { return override_error(*row_ptr, value); }, ""))
        ->group(group_title(key.group));
  }
}

WordLmConfig resolve_config(const std::string& config_path,
                            const std::vector<std::pair<std::string, std::string>>& overrides) {
  WordLmConfig cfg;
  if (!config_path.empty()) cfg = load_config_file(config_path, cfg);
  for (const auto& [key, value] : overrides) apply_override(cfg, key, value);
  validate(cfg);
  return cfg;
}

WordLmConfig resolve_config(const ConfigArgs& args) {
  return resolve_config(args.config_path, args.overrides);
}

}  // namespace sb::lm
