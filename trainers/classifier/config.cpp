#include "trainers/classifier/config.h"

#include <toml++/toml.h>
#include <CLI/CLI.hpp>

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/head_spec.h"
#include "trainers/runkit/flat_config.h"

namespace sb::classifier {

namespace {

using C = ClassifierConfig;
using IntField = int64_t C::*;
using NumberField = double C::*;
using StringField = std::string C::*;
using BoolField = bool C::*;

ConfigKey key(const char* name, const char* group, ConfigField field, const char* description,
              double min = 0, bool min_open = false) {
  return ConfigKey{name, group, description, min, min_open, field};
}

std::vector<ConfigKey> make_table() {
  return {
      key("dataset", "data", &C::dataset,
          "fashion-mnist (Debian package dataset-fashion-mnist) | mnist (needs data = DIR)"),
      key("data", "data", &C::data,
          "directory of the four IDX files (plain or .gz); \"\" = the package's directory"),
      key("split", "data", &C::split,
          "random: a seeded draw of train/valid/test from all 70000 images (paper Table 1); "
          "official: the train/t10k files, valid drawn from train (Table 2)"),
      key("train_size", "data", &C::train_size, "training images (0 = every image left)"),
      key("valid_size", "data", &C::valid_size, "validation images", 1),
      key("test_size", "data", &C::test_size, "test images (official split: the first N of t10k)",
          1),
      key("head", "model", &C::head,
          "output head, registry spelling (softmax, taylor, sparse:k=3, ...) or mse (squared "
          "error on the one-hot target)"),
      key("conv1", "model", &C::conv1, "feature maps of the first 5x5 conv-pool layer", 1),
      key("conv2", "model", &C::conv2, "feature maps of the second 5x5 conv-pool layer", 1),
      key("fc", "model", &C::fc, "units of the fully connected layer = d of the output layer", 1),
      key("output_init_std", "model", &C::output_init_std,
          "std of the output layer's initial weights; 0 = zeros, as the paper"),
      key("lr", "training", &C::lr, "initial learning rate", 0, true),
      key("momentum", "training", &C::momentum, "Nesterov momentum"),
      key("batch_size", "training", &C::batch_size, "training batch size", 1),
      key("eval_batch_size", "training", &C::eval_batch_size, "evaluation batch size", 1),
      key("epochs", "training", &C::epochs, "maximum number of epochs", 1),
      key("patience", "training", &C::patience,
          "halve lr after this many epochs without validation improvement", 1),
      key("early_stop", "training", &C::early_stop,
          "stop after this many epochs without validation improvement (0 = never)"),
      key("seed", "training", &C::seed, "seed of the initial weights, shuffling and the split"),
      key("threads", "training", &C::threads, "threads (0 = number of cores)"),
      key("log_interval", "training", &C::log_interval, "progress line every N batches", 1),
      key("out", "outputs", &C::out, "run directory; \"\" = results/<dataset>_<head>"),
      key("dump_test", "outputs", &C::dump_test,
          "write the test set's log-outputs to <out>/logprobs.h5 (not for mse)"),
  };
}

const ConfigKey* find_key(const std::string& name) {
  for (const auto& k : config_keys())
    if (k.name == name) return &k;
  return nullptr;
}

std::string key_list() {
  std::string out;
  for (const auto& k : config_keys()) out += (out.empty() ? "" : ", ") + k.name;
  return out;
}

std::string override_error(const ConfigKey& k, const std::string& value) {
  const std::string expected = "expected " + std::string(k.type() == "integer" ? "an " : "a ") +
                               k.type() + ", got '" + value + "'";
  switch (k.field.index()) {
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
      return (value == "true" || value == "false" || value == "1" || value == "0") ? "" : expected;
  }
}

}  // namespace

std::string ConfigKey::type() const {
  static const char* const names[] = {"integer", "number", "string", "boolean"};
  return names[field.index()];
}

std::string ConfigKey::value_text(const ClassifierConfig& cfg) const {
  if (const auto* f = std::get_if<IntField>(&field)) return std::to_string(cfg.*(*f));
  if (const auto* n = std::get_if<NumberField>(&field)) return runkit::flat_double(cfg.*(*n));
  if (const auto* s = std::get_if<StringField>(&field)) return runkit::flat_string(cfg.*(*s));
  return cfg.*std::get<BoolField>(field) ? "true" : "false";
}

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> table = make_table();
  return table;
}

ClassifierConfig load_config_file(const std::string& path, ClassifierConfig base) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read the config file");
  std::ostringstream text;
  text << in.rdbuf();
  return load_config_text(text.str(), path, std::move(base));
}

ClassifierConfig load_config_text(const std::string& text, const std::string& source,
                                  ClassifierConfig cfg) {
  const auto where = [&](const toml::source_region& r) {
    return source + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
  };
  toml::table table;
  try {
    table = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    std::string msg(e.description());
    for (char& c : msg)
      if (c == '\n') c = ' ';
    throw std::runtime_error(where(e.source()) + ": " + msg);
  }
  for (const auto& [name, node] : table) {
    const ConfigKey* k = find_key(std::string(name.str()));
    if (!k)
      throw std::runtime_error(where(name.source()) + ": unknown key '" + std::string(name.str()) +
                               "' (valid keys: " + key_list() + ")");
    const auto mismatch = [&] {
      return std::runtime_error(where(name.source()) + ": key '" + k->name + "': expected " +
                                (k->type() == "integer" ? "an " : "a ") + k->type());
    };
    if (const auto* f = std::get_if<IntField>(&k->field)) {
      if (!node.is_integer()) throw mismatch();
      cfg.*(*f) = node.as_integer()->get();
    } else if (const auto* n = std::get_if<NumberField>(&k->field)) {
      if (node.is_floating_point())
        cfg.*(*n) = node.as_floating_point()->get();
      else if (node.is_integer())
        cfg.*(*n) = static_cast<double>(node.as_integer()->get());
      else
        throw mismatch();
    } else if (const auto* s = std::get_if<StringField>(&k->field)) {
      if (!node.is_string()) throw mismatch();
      cfg.*(*s) = node.as_string()->get();
    } else {
      if (!node.is_boolean()) throw mismatch();
      cfg.*std::get<BoolField>(k->field) = node.as_boolean()->get();
    }
  }
  return cfg;
}

void apply_override(ClassifierConfig& cfg, const std::string& name, const std::string& value) {
  const ConfigKey* k = find_key(name);
  if (!k)
    throw std::invalid_argument("unknown option '--" + name + "' (valid keys: " + key_list() + ")");
  const auto error = override_error(*k, value);
  if (!error.empty()) throw std::invalid_argument("--" + name + ": " + error);
  if (const auto* f = std::get_if<IntField>(&k->field))
    cfg.*(*f) = std::stoll(value);
  else if (const auto* n = std::get_if<NumberField>(&k->field))
    cfg.*(*n) = *sb::parse_finite_number(value);
  else if (const auto* s = std::get_if<StringField>(&k->field))
    cfg.*(*s) = value;
  else
    cfg.*std::get<BoolField>(k->field) = value == "true" || value == "1";
}

void validate(const ClassifierConfig& cfg) {
  for (const auto& k : config_keys()) {
    double v = 0;
    if (const auto* f = std::get_if<IntField>(&k.field))
      v = static_cast<double>(cfg.*(*f));
    else if (const auto* n = std::get_if<NumberField>(&k.field))
      v = cfg.*(*n);
    else
      continue;
    if (!std::isfinite(v) || (k.min_open ? !(v > k.min) : !(v >= k.min)))
      throw std::invalid_argument(k.name + " must be " + (k.min_open ? "> " : ">= ") +
                                  std::to_string(static_cast<int64_t>(k.min)) + ", got " +
                                  k.value_text(cfg));
  }
  if (cfg.momentum >= 1)
    throw std::invalid_argument("momentum must be in [0, 1), got " +
                                runkit::flat_double(cfg.momentum));
  if (cfg.dataset != "fashion-mnist" && cfg.dataset != "mnist")
    throw std::invalid_argument("dataset must be fashion-mnist or mnist, got \"" + cfg.dataset +
                                "\"");
  if (cfg.split != "random" && cfg.split != "official")
    throw std::invalid_argument("split must be random or official, got \"" + cfg.split + "\"");
  if (is_mse(cfg)) return;
  const HeadSpec spec = parse_head_setting(cfg.head, " (or mse)");
  if (spec.kind == HeadKind::sparse && spec.k > 10)
    throw std::invalid_argument("head = \"" + cfg.head + "\": k must be <= 10 classes, got " +
                                std::to_string(spec.k));
  // At z = 0 the gradient of log spherical (z^2 + eps) and of log softmax(|z|) with respect to z
  // is zero (d z^2 / dz = 0; torch's d|z|/dz = sign(0) = 0): a zero output layer would never move.
  if ((spec.kind == HeadKind::spherical || spec.kind == HeadKind::softmax_abs) &&
      cfg.output_init_std == 0)
    throw std::invalid_argument("head = \"" + cfg.head +
                                "\" with output_init_std = 0: the head's gradient vanishes at "
                                "zero logits, so a zero output layer never trains; set "
                                "output_init_std > 0 (e.g. 0.01)");
}

std::string to_toml(const ClassifierConfig& cfg) {
  std::ostringstream out;
  out << "# Image classifier configuration (trainers/classifier/config.h). Flat `key = value`\n"
      << "# lines; on the command line, --<key> VALUE overrides this file.\n";
  std::string group;
  for (const auto& k : config_keys()) {
    if (k.group != group) out << "\n# ---- " << (group = k.group) << " ----\n";
    out << "# " << k.description << "\n" << k.name << " = " << k.value_text(cfg) << "\n";
  }
  return out.str();
}

std::string default_run_dir(const ClassifierConfig& cfg) {
  if (!cfg.out.empty()) return cfg.out;
  return "results/" + cfg.dataset + "_" + head_file_name(cfg.head);
}

void add_config_options(CLI::App& app, ConfigArgs& args) {
  auto formatter = app.get_formatter();
  formatter->column_width(std::max<std::size_t>(formatter->get_column_width(), 34));
  app.add_option("--config", args.config_path,
                 "TOML file of config keys (e.g. trainers/configs/classify_fashion.toml); "
                 "--<key> options override it, whatever their order")
      ->type_name("FILE");
  const ClassifierConfig defaults;
  for (const auto& k : config_keys()) {
    std::string type = k.type();
    for (char& c : type) c = static_cast<char>(c - 'a' + 'A');
    const ConfigKey* row = &k;  // static table: outlives the app
    app.add_option_function<std::string>(
           "--" + k.name,
           [&args, name = k.name](const std::string& v) { args.overrides.emplace_back(name, v); },
           k.description)
        ->type_name(type)
        ->default_str(k.value_text(defaults))
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
        ->check(CLI::Validator([row](std::string& v) { return override_error(*row, v); }, ""))
        ->group(std::string(1, static_cast<char>(k.group[0] - 'a' + 'A')) + k.group.substr(1) +
                " (config keys)");
  }
}

ClassifierConfig resolve_config(const ConfigArgs& args) {
  ClassifierConfig cfg;
  if (!args.config_path.empty()) cfg = load_config_file(args.config_path, cfg);
  for (const auto& [k, v] : args.overrides) apply_override(cfg, k, v);
  validate(cfg);
  return cfg;
}

}  // namespace sb::classifier
