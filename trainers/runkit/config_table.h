#pragma once
// The one configuration engine of every trainer and of dyneval: a key table over a config struct,
// flat TOML files, --<key> VALUE overrides, ranges, --help, and the trajectory keys a resumed run
// compares. LibTorch-free (target runkit_config: common, toml++, CLI11).
//
// Rules, the same for every table:
//   - precedence: --<key> on the command line > the --config file > the struct's defaults, whatever
//     the order of the options; a repeated option: the last one wins;
//   - one number format: integers as TOML integers, doubles as TOML floats in their shortest
//     round-trip form (30.0, 0.0, -0.0, 1.2e-06, 1e+20); one string escaping (quotes, backslash,
//     \n \t \r, other control characters as \uXXXX); to_toml reads back to the same struct;
//   - reading is lenient where it is safe: an integer is accepted for a number key (`lr = 30`);
//   - errors are one line naming where, the key, what was expected and what was found:
//     "<file>:<line>:<col>: unknown key 'x' (valid keys: ...)",
//     "<file>:<line>:<col>: key 'lr': expected a number, got \"x\"",
//     "--nhid: expected an integer, got 'abc'", "dropout must be in [0, 1), got 1.0".
//
// A config is a struct with defaults and a table of its keys:
//   const ConfigTable<MyConfig>& my_table() {
//     using C = MyConfig;
//     static const ConfigTable<C> table("My configuration (where/it/lives.h)", {
//         {"model", {key("nhid", &C::nhid, "hidden units", at_least(1)),
//                    key("head", &C::head, "output head")}},  // a HeadSetting: parsed once
//         {"outputs", {key("out", &C::out, "run directory").not_trajectory()}}});
//     return table;
//   }

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "common/head_setting.h"

namespace CLI {
class App;
}  // namespace CLI

namespace sb::runkit {

/// The value of one key, as a file or the command line gives it.
using ConfigValue = std::variant<int64_t, double, std::string, bool>;

/// A double as a TOML float in its shortest round-trip form: 30.0, 0.1, 0.0, -0.0, 1.2e-06,
/// 1e+20 (an exponent from 1e16 on), nan, inf, -inf.
std::string format_number(double v);

/// A TOML basic string: quoted; quotes, backslashes, \n, \t and \r escaped, other control
/// characters as \uXXXX.
std::string toml_string(const std::string& s);

/// A value as TOML text: integers as integers, numbers by format_number, strings by toml_string,
/// booleans true / false.
std::string toml_value(const ConfigValue& v);

/// The allowed values of a numeric key (checked by check_ranges, shown by --help).
struct ConfigRange {
  double lo = -std::numeric_limits<double>::infinity();  ///< -inf: no lower bound
  bool lo_open = false;                                  ///< true: value > lo; false: value >= lo
  double hi = std::numeric_limits<double>::infinity();   ///< +inf: no upper bound
  bool hi_open = false;                                  ///< true: value < hi; false: value <= hi
  std::string text;  ///< "[0, 1)", ">= 1", "> 0"; empty: any value

  bool contains(double v) const;
};

/// Any value (string and boolean keys, unbounded numbers).
ConfigRange any_value();
/// value >= lo, text ">= lo".
ConfigRange at_least(double lo);
/// value > lo, text "> lo".
ConfigRange above(double lo);
/// lo <= value < hi (or open / closed as asked), text "[lo, hi)", "(lo, hi]", ...
ConfigRange interval(double lo, bool lo_open, double hi, bool hi_open);

/// What a key is, apart from where its value lives (the non-template part of a row).
struct KeyInfo {
  std::string name;          ///< TOML key and command-line option (--name)
  std::string group;         ///< section in the file and --help group ("data", ...); "" = none
  std::string type;          ///< "integer" | "number" | "string" | "boolean"
  std::string default_text;  ///< the default as TOML text (30.0, "ptb", true); set by the table
  std::string description;   ///< one line
  ConfigRange range;         ///< numeric keys: the allowed values
  /// Whether the key shapes a run's trajectory: keys that do not (epochs, log_interval, out, data,
  /// device, the dumps) may change on resume and are left out of trajectory_toml.
  bool trajectory = true;
  /// A boolean given as a bare --name on the command line (dyneval's --grid), not --name VALUE.
  bool flag = false;
};

/// One row of the key table of the config struct C: the key and the member it reads and writes.
template <class C>
struct ConfigKey : KeyInfo {
  using Field =
      std::variant<int64_t C::*, double C::*, std::string C::*, bool C::*, HeadSetting C::*>;
  Field field;

  ConfigValue get(const C& c) const {
    return std::visit(
        [&](auto f) {
          using T = std::decay_t<decltype(c.*f)>;
          if constexpr (std::is_same_v<T, HeadSetting>)
            return ConfigValue(std::in_place_type<std::string>, (c.*f).text());
          else
            return ConfigValue(std::in_place_type<T>, c.*f);
        },
        field);
  }
  /// `v` holds the key's type (the engine's parsers make sure of it). A head column parses its
  /// spelling here, once (common/head_setting.h).
  void set(C& c, const ConfigValue& v) const {
    std::visit(
        [&](auto f) {
          using T = std::decay_t<decltype(c.*f)>;
          if constexpr (std::is_same_v<T, HeadSetting>)
            c.*f = std::get<std::string>(v);
          else
            c.*f = std::get<T>(v);
        },
        field);
  }
  /// The key's value in `c` as TOML text.
  std::string value_text(const C& c) const { return toml_value(get(c)); }

  /// The same row, marked as not shaping the trajectory (may change on resume).
  ConfigKey not_trajectory() const {
    ConfigKey k = *this;
    k.trajectory = false;
    return k;
  }
  /// The same boolean row, given as a bare --name on the command line.
  ConfigKey as_flag() const {
    ConfigKey k = *this;
    k.flag = true;
    return k;
  }
};

/// A row: key("lr", &C::lr, "learning rate", above(0)). The type follows the member.
template <class C, class T>
ConfigKey<C> key(std::string name, T C::*field, std::string description,
                 ConfigRange range = any_value()) {
  static_assert(std::is_same_v<T, int64_t> || std::is_same_v<T, double> ||
                    std::is_same_v<T, std::string> || std::is_same_v<T, bool> ||
                    std::is_same_v<T, HeadSetting>,
                "a config key is an int64_t, a double, a std::string, a bool or a HeadSetting");
  ConfigKey<C> k;
  k.name = std::move(name);
  k.description = std::move(description);
  k.range = std::move(range);
  k.field = field;
  if constexpr (std::is_same_v<T, int64_t>)
    k.type = "integer";
  else if constexpr (std::is_same_v<T, double>)
    k.type = "number";
  else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, HeadSetting>)
    k.type = "string";  // a head column: a string in the file, parsed when set
  else
    k.type = "boolean";
  return k;
}

/// A named run of rows: a "# ---- name ----" section of the file and a --help group.
template <class C>
struct ConfigSection {
  std::string name;
  std::vector<ConfigKey<C>> keys;
};

/// a, then b: sections put together from shared runs of rows (runkit/epoch_keys.h).
template <class C>
std::vector<ConfigKey<C>> join(std::vector<ConfigKey<C>> a, const std::vector<ConfigKey<C>>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// The --config path and the --<key> VALUE overrides as the command line gave them.
struct ConfigArgs {
  std::string config_path;  ///< --config FILE; "" = none
  /// (key, value) pairs, applied in order after the file (the last one wins for a repeated key).
  std::vector<std::pair<std::string, std::string>> overrides;
};

/// How a table shows itself on the command line.
struct TableOptions {
  std::string example;  ///< a config file --config's help names, e.g. trainers/configs/x.toml
  bool dashed_options = false;  ///< --stats-batch-size for the key stats_batch_size
};

/// The differing lines of two TOML texts of the same keys, "a -> b; ...", for the error of a
/// resume whose configuration changed the trajectory; "the key lists differ" when no line differs.
std::string config_difference(const std::string& saved, const std::string& now);

/// The engine: everything that does not depend on the struct. ConfigTable<C> is its face.
class KeyTable {
 public:
  KeyTable(std::string title, TableOptions options);
  virtual ~KeyTable() = default;
  KeyTable(const KeyTable&) = delete;
  KeyTable& operator=(const KeyTable&) = delete;

  virtual std::size_t size() const = 0;
  virtual const KeyInfo& info(std::size_t i) const = 0;

  /// The row of a key name (or of its dashed option spelling), if any.
  std::optional<std::size_t> index_of(const std::string& name) const;
  /// "--name", or "--name-with-dashes" for a table with dashed options.
  std::string option_name(const KeyInfo& k) const;
  /// Comma-separated names of every key, for error messages.
  std::string key_list() const;

  /// --config FILE and one option per key, in --help groups "<Group> (config keys)", each with its
  /// type, default, description and range (the app's help column is widened to fit). Values are
  /// type-checked while parsing (CLI::ValidationError) and applied only by resolve(), after the
  /// file. The table must outlive `app`; `args` must outlive the parse.
  void add_options(CLI::App& app, ConfigArgs& args) const;

 protected:
  /// Every key (or the trajectory keys only, without comments) as TOML, from the keys' values.
  std::string render(const std::vector<ConfigValue>& values, bool trajectory_only) const;
  /// The keys a TOML text sets, each with a value of the key's type; throws sb::FormatError (not
  /// TOML) or sb::InputError (an unknown key, a value of another type), file = `source`.
  std::vector<std::pair<std::size_t, ConfigValue>> read(const std::string& text,
                                                        const std::string& source) const;
  /// The whole file; throws sb::FormatError "<path>: cannot read (...)".
  static std::string read_file(const std::string& path);
  /// The key and value of --name VALUE; throws sb::OptionError.
  std::pair<std::size_t, ConfigValue> parse_override(const std::string& name,
                                                     const std::string& value) const;
  /// Throws sb::OptionError (option = the key) for the first numeric value outside its key's
  /// range.
  void check(const std::vector<ConfigValue>& values) const;

 private:
  std::string title_;
  TableOptions options_;
};

/// The key table of the config struct C (C{} holds the defaults).
template <class C>
class ConfigTable final : public KeyTable {
 public:
  using Key = ConfigKey<C>;

  /// The keys in sections, in the order given.
  ConfigTable(std::string title, std::vector<ConfigSection<C>> sections, TableOptions options = {})
      : KeyTable(std::move(title), std::move(options)) {
    const C defaults{};
    for (auto& section : sections)
      for (auto& k : section.keys) {
        k.group = section.name;
        k.default_text = k.value_text(defaults);
        keys_.push_back(std::move(k));
      }
  }

  std::size_t size() const override { return keys_.size(); }
  const KeyInfo& info(std::size_t i) const override { return keys_[i]; }
  const std::vector<Key>& keys() const { return keys_; }

  /// The row of `name`, or nullptr.
  const Key* find(const std::string& name) const {
    const auto i = index_of(name);
    return i ? &keys_[*i] : nullptr;
  }

  /// Every key, in sections, each with its description as a comment above; reads back (load_text)
  /// to the same struct, and prints the same text again.
  std::string to_toml(const C& c) const { return render(values(c), false); }

  /// The `key = value` lines of the keys that shape the trajectory, no comments: what a
  /// checkpoint stores and a resumed run compares (config_difference names what changed).
  std::string trajectory_toml(const C& c) const { return render(values(c), true); }

  /// The keys a TOML text sets, over `base`; `source` names the text in errors. No range checks.
  C load_text(const std::string& text, const std::string& source, C base = C{}) const {
    for (const auto& [i, v] : read(text, source)) keys_[i].set(base, v);
    return base;
  }
  C load_file(const std::string& path, C base = C{}) const {
    return load_text(read_file(path), path, std::move(base));
  }

  /// --name VALUE: the whole text parses as the key's type (numbers finite; booleans
  /// true/false/1/0). Throws sb::OptionError; a failed override leaves `c` alone.
  void apply(C& c, const std::string& name, const std::string& value) const {
    const auto [i, v] = parse_override(name, value);
    keys_[i].set(c, v);
  }

  /// The ranges of the numeric keys: "lr must be > 0, got 0.0".
  void check_ranges(const C& c) const { check(values(c)); }

  /// Defaults, then the file (if any), then the overrides in order; no range checks.
  C merge(const std::string& config_path,
          const std::vector<std::pair<std::string, std::string>>& overrides) const {
    C c{};
    if (!config_path.empty()) c = load_file(config_path, std::move(c));
    for (const auto& [name, value] : overrides) apply(c, name, value);
    return c;
  }
  C merge(const ConfigArgs& args) const { return merge(args.config_path, args.overrides); }

  /// merge(), then check_ranges().
  C resolve(const ConfigArgs& args) const {
    C c = merge(args);
    check_ranges(c);
    return c;
  }

 private:
  std::vector<ConfigValue> values(const C& c) const {
    std::vector<ConfigValue> out;
    out.reserve(keys_.size());
    for (const auto& k : keys_) out.push_back(k.get(c));
    return out;
  }

  std::vector<Key> keys_;
};

}  // namespace sb::runkit
