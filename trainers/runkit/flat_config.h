#pragma once
// A small flat TOML configuration for the trainers of the related papers (train_nplm,
// train_charlm, train_classifier): one struct, one key table, `key = value` files and --<key> VALUE
// overrides. The same rules as the
// word-level trainer's trainers/lm/config.h, kept small: command line > --config file > defaults;
// unknown keys and wrong types are one-line errors naming file:line:col, the key and the value;
// numeric keys have a lower bound; the effective config is written back as TOML (round trip).

#include <toml++/toml.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "common/head_spec.h"

namespace sb::runkit {

/// One row of a key table over the config struct C.
template <class C>
struct FlatKey {
  using Field = std::variant<int64_t C::*, double C::*, std::string C::*, bool C::*>;
  std::string name;
  Field field;
  std::string description;
  /// Numeric keys: the smallest allowed value (inclusive, or exclusive with min_open).
  double min = -std::numeric_limits<double>::infinity();
  bool min_open = false;
  /// Section of the TOML file and of --help ("data", "model", ...); "" = none. Set by the
  /// FlatConfig constructor that takes groups.
  std::string group = "";
};

/// A named run of keys: a "# ---- name ----" section in the TOML file and a --help group.
template <class C>
struct FlatGroup {
  std::string name;
  std::vector<FlatKey<C>> keys;
};

/// The --config path and the --<key> VALUE overrides, in command-line order.
struct FlatArgs {
  std::string config_path;
  std::vector<std::pair<std::string, std::string>> overrides;
};

/// Shortest text that reads back to the same double, valid TOML (30, 0.001, 1e-08).
inline std::string flat_double(double v) {
  if (v == 0) return "0.0";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string text(buf, res.ptr);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";  // a TOML float, not an int
  return text;
}

/// A TOML basic string with quotes and backslashes escaped.
inline std::string flat_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

/// a, then b: a key table put together from shared runs of rows (epoch_loop_keys).
template <class C>
std::vector<FlatKey<C>> join(std::vector<FlatKey<C>> a, const std::vector<FlatKey<C>>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// The rows every epoch trainer's config has (train_nplm, train_charlm), with the same meaning:
/// clip, epochs, max_batches, seed, threads, log_interval.
template <class C>
std::vector<FlatKey<C>> epoch_loop_keys() {
  return {
      {"clip", &C::clip, "gradient norm clipping (0 = none)", 0},
      {"epochs", &C::epochs, "training epochs", 1},
      {"max_batches", &C::max_batches, "stop each epoch after N batches (0 = whole epoch)", 0},
      {"seed", &C::seed, "random seed", 0},
      {"threads", &C::threads, "threads (0 = number of cores)", 0},
      {"log_interval", &C::log_interval, "progress line every N batches", 1},
  };
}

/// The config with the keys that cannot change a run's trajectory blanked (epochs, log_interval,
/// out, data): what a resumed run compares with its checkpoint's.
template <class C>
C trajectory_keys(C c) {
  c.epochs = 0;
  c.log_interval = 1;
  c.out.clear();
  c.data.clear();
  return c;
}

template <class C>
class FlatConfig {
 public:
  using Key = FlatKey<C>;
  FlatConfig(std::string title, std::vector<Key> keys)
      : title_(std::move(title)), keys_(std::move(keys)) {}

  /// The keys in sections, in the order given.
  FlatConfig(std::string title, std::vector<FlatGroup<C>> groups) : title_(std::move(title)) {
    for (auto& g : groups)
      for (auto& k : g.keys) {
        k.group = g.name;
        keys_.push_back(std::move(k));
      }
  }

  const std::vector<Key>& keys() const { return keys_; }

  const Key* find(const std::string& name) const {
    for (const auto& k : keys_)
      if (k.name == name) return &k;
    return nullptr;
  }

  std::string key_list() const {
    std::string out;
    for (const auto& k : keys_) out += (out.empty() ? "" : ", ") + k.name;
    return out;
  }

  std::string value_text(const Key& k, const C& c) const {
    return std::visit(
        [&](auto field) -> std::string {
          using T = std::decay_t<decltype(c.*field)>;
          if constexpr (std::is_same_v<T, int64_t>)
            return std::to_string(c.*field);
          else if constexpr (std::is_same_v<T, double>)
            return flat_double(c.*field);
          else if constexpr (std::is_same_v<T, std::string>)
            return flat_string(c.*field);
          else
            return c.*field ? "true" : "false";
        },
        k.field);
  }

  /// Every key with its description as a comment; reads back to the same struct.
  std::string to_toml(const C& c) const {
    std::ostringstream out;
    out << "# " << title_ << ". Flat `key = value` lines; --<key> VALUE overrides them.\n";
    std::string group;
    for (const auto& k : keys_) {
      if (k.group != group) out << "\n# ---- " << (group = k.group) << " ----\n";
      out << "# " << k.description << "\n" << k.name << " = " << value_text(k, c) << "\n";
    }
    return out.str();
  }

  /// Keys of a TOML text over `base`; `source` names it in errors.
  C load_text(const std::string& text, const std::string& source, C base) const {
    toml::table table;
    try {
      table = toml::parse(text, source);
    } catch (const toml::parse_error& e) {
      std::string what(e.description());
      for (char& ch : what)
        if (ch == '\n') ch = ' ';
      throw std::runtime_error(where(source, e.source()) + ": " + what);
    }
    for (const auto& [name, node] : table) {
      const std::string at = where(source, name.source());
      const Key* k = find(std::string(name.str()));
      if (!k)
        throw std::runtime_error(at + ": unknown key '" + std::string(name.str()) +
                                 "' (valid keys: " + key_list() + ")");
      set_from_node(base, *k, node, at);
    }
    return base;
  }

  C load_file(const std::string& path, C base) const {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + ": cannot read the config file");
    std::ostringstream text;
    text << in.rdbuf();
    return load_text(text.str(), path, std::move(base));
  }

  /// --<name> VALUE: the whole text must parse as the key's type.
  void apply(C& c, const std::string& name, const std::string& value) const {
    const Key* k = find(name);
    if (!k)
      throw std::invalid_argument("unknown option '--" + name + "' (valid keys: " + key_list() +
                                  ")");
    const auto bad = [&](const char* type) {
      return std::invalid_argument("--" + name + ": expected " + type + ", got '" + value + "'");
    };
    std::visit(
        [&](auto field) {
          using T = std::decay_t<decltype(c.*field)>;
          if constexpr (std::is_same_v<T, int64_t>) {
            int64_t parsed = 0;
            const char* end = value.data() + value.size();
            const auto res = std::from_chars(value.data(), end, parsed);
            if (value.empty() || res.ec != std::errc() || res.ptr != end) throw bad("an integer");
            c.*field = parsed;
          } else if constexpr (std::is_same_v<T, double>) {
            const auto parsed = sb::parse_finite_number(value);
            if (!parsed) throw bad("a number");
            c.*field = *parsed;
          } else if constexpr (std::is_same_v<T, std::string>) {
            c.*field = value;
          } else {
            if (value != "true" && value != "false" && value != "1" && value != "0")
              throw bad("a boolean (true/false/1/0)");
            c.*field = value == "true" || value == "1";
          }
        },
        k->field);
  }

  /// Lower bounds of the numeric keys: "lr must be > 0, got -1.0".
  void check_ranges(const C& c) const {
    for (const auto& k : keys_) {
      std::optional<double> v;
      if (const auto* f = std::get_if<int64_t C::*>(&k.field)) v = static_cast<double>(c.*(*f));
      if (const auto* f = std::get_if<double C::*>(&k.field)) v = c.*(*f);
      if (!v) continue;
      if (!std::isfinite(*v) || (k.min_open ? !(*v > k.min) : !(*v >= k.min)))
        throw std::invalid_argument(k.name + " must be " + (k.min_open ? "> " : ">= ") +
                                    (k.field.index() == 0
                                         ? std::to_string(static_cast<int64_t>(k.min))
                                         : flat_double(k.min)) +
                                    ", got " + value_text(k, c));
    }
  }

  /// --config FILE and one --<key> VALUE option per key (applied later by resolve()), in --help
  /// groups "Config keys" or "<Group> (config keys)". `example` names a config file for --help.
  void add_options(CLI::App& app, FlatArgs& args, const std::string& example = "") const {
    // Room for the longest "--eval_batch_size INTEGER=1000" so each key's help stays on one line.
    auto formatter = app.get_formatter();
    formatter->column_width(std::max<std::size_t>(formatter->get_column_width(), 34));
    app.add_option("--config", args.config_path,
                   "TOML file of the keys below" +
                       (example.empty() ? std::string() : " (e.g. " + example + ")") +
                       "; --<key> options override it, whatever their order")
        ->type_name("FILE");
    const C defaults{};
    for (const auto& k : keys_) {
      std::string group = "Config keys";
      if (!k.group.empty())
        group = std::string(
                    1, static_cast<char>(std::toupper(static_cast<unsigned char>(k.group[0])))) +
                k.group.substr(1) + " (config keys)";
      app.add_option_function<std::string>(
             "--" + k.name,
             [&args, name = k.name](const std::string& v) { args.overrides.emplace_back(name, v); },
             k.description)
          ->type_name(type_name(k))
          ->default_str(value_text(k, defaults))
          ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
          ->group(group);
    }
  }

  /// Defaults, then the file, then the overrides, then check_ranges.
  C resolve(const FlatArgs& args) const {
    C c{};
    if (!args.config_path.empty()) c = load_file(args.config_path, c);
    for (const auto& [name, value] : args.overrides) apply(c, name, value);
    check_ranges(c);
    return c;
  }

 private:
  static std::string where(const std::string& source, const toml::source_region& r) {
    if (r.begin.line == 0) return source;
    return source + ":" + std::to_string(r.begin.line) + ":" + std::to_string(r.begin.column);
  }

  /// A TOML value as the error shows it: "fast" (quoted), 3, 0.5, true, or its kind.
  static std::string describe(const toml::node& node) {
    if (const auto* v = node.as_string()) return flat_string(v->get());
    if (const auto* v = node.as_integer()) return std::to_string(v->get());
    if (const auto* v = node.as_floating_point()) return flat_double(v->get());
    if (const auto* v = node.as_boolean()) return v->get() ? "true" : "false";
    if (node.is_table()) return "a table";
    if (node.is_array()) return "an array";
    return "a date or time";
  }

  static std::string type_name(const Key& k) {
    switch (k.field.index()) {
      case 0:
        return "INTEGER";
      case 1:
        return "NUMBER";
      case 2:
        return "STRING";
      default:
        return "BOOLEAN";
    }
  }

  void set_from_node(C& c, const Key& k, const toml::node& node, const std::string& at) const {
    const auto mismatch = [&](const char* type) {
      return std::runtime_error(at + ": key '" + k.name + "': expected " + type + ", got " +
                                describe(node));
    };
    std::visit(
        [&](auto field) {
          using T = std::decay_t<decltype(c.*field)>;
          if constexpr (std::is_same_v<T, int64_t>) {
            const auto* v = node.as_integer();
            if (!v) throw mismatch("an integer");
            c.*field = v->get();
          } else if constexpr (std::is_same_v<T, double>) {
            if (const auto* d = node.as_floating_point())
              c.*field = d->get();
            else if (const auto* i = node.as_integer())
              c.*field = static_cast<double>(i->get());
            else
              throw mismatch("a number");
          } else if constexpr (std::is_same_v<T, std::string>) {
            const auto* v = node.as_string();
            if (!v) throw mismatch("a string");
            c.*field = v->get();
          } else {
            const auto* v = node.as_boolean();
            if (!v) throw mismatch("a boolean");
            c.*field = v->get();
          }
        },
        k.field);
  }

  std::string title_;
  std::vector<Key> keys_;
};

}  // namespace sb::runkit
