#include "trainers/runkit/config_table.h"

#include <toml++/toml.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include "common/errors.h"
#include "common/head_spec.h"

namespace sb::runkit {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// A range bound as people write it: 0, 1, 0.5, 1e-08 (no ".0": it is not a TOML value).
std::string bound_text(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

std::string with_article(const std::string& type) {
  return (type == "integer" ? "an " : "a ") + type;
}

/// "" if `value` is a valid command-line value for a key of `type`, else why not.
std::string override_error(const KeyInfo& k, const std::string& value) {
  const std::string expected = "expected " + with_article(k.type) + ", got '" + value + "'";
  if (k.type == "integer") {
    int64_t parsed = 0;
    const char* end = value.data() + value.size();
    const auto res = std::from_chars(value.data(), end, parsed);
    return (value.empty() || res.ec != std::errc() || res.ptr != end) ? expected : "";
  }
  if (k.type == "number") return sb::parse_finite_number(value) ? "" : expected;
  if (k.type == "boolean")
    return (value == "true" || value == "false" || value == "1" || value == "0")
               ? ""
               : "expected a boolean (true/false/1/0), got '" + value + "'";
  return "";
}

/// A TOML value as an error shows it: "fast" (quoted), 3, 0.5, true, or its kind.
std::string describe(const toml::node& node) {
  if (const auto* v = node.as_string()) return toml_string(v->get());
  if (const auto* v = node.as_integer()) return std::to_string(v->get());
  if (const auto* v = node.as_floating_point()) return format_number(v->get());
  if (const auto* v = node.as_boolean()) return v->get() ? "true" : "false";
  if (node.is_table()) return "a table";
  if (node.is_array()) return "an array";
  return "a date or time";
}

std::string location(const std::string& source, const toml::source_region& where) {
  if (where.begin.line == 0) return source;
  return source + ":" + std::to_string(where.begin.line) + ":" + std::to_string(where.begin.column);
}

std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

/// The text toml++ is given: the same document in ASCII. Debian 12's toml++ (3.3.0) reaches
/// undefined behaviour (an unreachable branch of its Unicode whitespace test, a failed assumption)
/// on some texts with non-ASCII characters, in valid documents and in the error paths of invalid
/// ones, on a table header that starts with no key character and on an array closed by '}' (found
/// by fuzz/fuzz_config_toml; upstream marzer/tomlplusplus issues 190, 294, 295). So every non-ASCII
/// character of a string becomes its \uXXXX or \UXXXXXXXX escape (a literal string the equal basic
/// string), of a comment a '?'; the values read are the same. Errors, "<source>:<line>:<col>: ...":
/// a non-ASCII character elsewhere (TOML allows none), a control character (a NUL in a value
/// failed an assumption), invalid UTF-8, such a table header, a ']' or '}' that closes the other
/// bracket, a date and time separated by a space. Lines keep their numbers; a column after an
/// escaped character on its line counts the escape.
class AsciiToml {
 public:
  AsciiToml(const std::string& text, const std::string& source)
      : text_(text), source_(source), n_(text.size()) {
    i_ = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;  // a UTF-8 byte order mark
    line_start_ = i_;
    out_.reserve(n_ + n_ / 8);
  }

  std::string run() {
    refuse_control_characters();
    line_ = 1;
    line_start_ = i_;
    while (i_ < n_) {
      const char c = text_[i_];
      if (c == '\n') {
        out_ += text_[i_];
        newline(i_++);
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') {
        out_ += text_[i_++];
        continue;
      }
      const bool first_on_line = line_empty_;
      line_empty_ = false;
      if (!ascii(i_)) fail(i_, "a non-ASCII character outside a string or comment");
      if (c == '#')
        comment();
      else if ((c == '"' || c == '\'') && text_.compare(i_, 3, std::string(3, c)) == 0)
        multi_line_string(c);
      else if (c == '"' || c == '\'')
        one_line_string(c);
      else
        other(c, first_on_line);
    }
    return out_;
  }

 private:
  [[noreturn]] void fail(size_t at, const std::string& what) const {
    throw FormatError::described(source_, "",
                                 source_ + ":" + std::to_string(line_) + ":" +
                                     std::to_string(at - line_start_ + 1) + ": " + what);
  }
  bool ascii(size_t at) const { return static_cast<unsigned char>(text_[at]) < 0x80; }
  unsigned char byte(size_t at) const { return static_cast<unsigned char>(text_[at]); }

  /// The code point of the UTF-8 sequence at text[at] (non-ASCII); `at` moves past it.
  uint32_t decode(size_t& at) const {
    const unsigned char c = byte(at);
    const int len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    if (len == 0 || c > 0xF4 || at + static_cast<size_t>(len) > n_) fail(at, "invalid UTF-8");
    uint32_t cp = c & (0x7F >> len);
    for (int k = 1; k < len; ++k) {
      if ((byte(at + static_cast<size_t>(k)) & 0xC0) != 0x80) fail(at, "invalid UTF-8");
      cp = (cp << 6) | (byte(at + static_cast<size_t>(k)) & 0x3F);
    }
    const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      fail(at, "invalid UTF-8");
    at += static_cast<size_t>(len);
    return cp;
  }

  void escape(uint32_t cp) {
    char buf[16];
    std::snprintf(buf, sizeof buf, cp < 0x10000 ? "\\u%04X" : "\\U%08X", static_cast<unsigned>(cp));
    out_ += buf;
  }

  void newline(size_t at) {
    ++line_;
    line_start_ = at + 1;
    line_empty_ = true;
  }

  /// TOML allows no control character but tab, LF and CR, not even in strings and comments (they
  /// are written as escapes); toml++ 3.3.0 fails assumptions on a NUL in a value.
  void refuse_control_characters() {
    for (size_t k = i_; k < n_; ++k) {
      const auto b = byte(k);
      if (b == '\n') newline(k);
      if ((b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7f) {
        char code[8];
        std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(b));
        fail(k, std::string("a control character (") + code + "): TOML allows none, write \\u" +
                    (code + 2) + " in a string");
      }
    }
  }

  /// A string's body from text[i] up to (not including) text[end]; literal: escape \ and ".
  void body(size_t end, bool literal) {
    while (i_ < end) {
      const char c = text_[i_];
      if (!ascii(i_)) {
        escape(decode(i_));
        continue;
      }
      if (c == '\n') newline(i_);
      if (literal && (c == '\\' || c == '"')) {
        out_ += '\\';
      } else if (!literal && c == '\\' && i_ + 1 < end) {
        if (!ascii(i_ + 1)) fail(i_, "invalid escape sequence in a string");
        out_ += text_[i_++];  // the backslash; the escaped character follows as it is
        if (text_[i_] == '\n') newline(i_);
      }
      out_ += text_[i_++];
    }
  }

  void comment() {
    while (i_ < n_ && text_[i_] != '\n') {
      if (ascii(i_)) {
        out_ += text_[i_++];
      } else {
        decode(i_);
        out_ += '?';
      }
    }
  }

  /// A multi-line string: it ends at the last quote of the first run of three or more quotes
  /// not escaped (up to two more quotes belong to the string).
  void multi_line_string(char c) {
    size_t close = i_ + 3;
    while (close < n_ && text_.compare(close, 3, std::string(3, c)) != 0)
      close += c == '"' && text_[close] == '\\' ? 2 : 1;
    close = std::min(close, n_);
    size_t run = close;
    while (run < n_ && text_[run] == c && run - close < 5) ++run;
    const size_t end = run > close ? run - 3 : n_;
    out_ += "\"\"\"";
    i_ += 3;
    body(end, c == '\'');
    if (i_ < n_) out_ += "\"\"\"";
    i_ = std::min(n_, end + 3);
  }

  /// A one-line string: to its closing quote or the line end.
  void one_line_string(char c) {
    size_t end = i_ + 1;
    while (end < n_ && text_[end] != c && text_[end] != '\n')
      end += c == '"' && text_[end] == '\\' && end + 1 < n_ && text_[end + 1] != '\n' ? 2 : 1;
    out_ += '"';
    ++i_;
    body(end, c == '\'');
    if (i_ < n_ && text_[i_] == c) {
      out_ += '"';
      ++i_;
    }
  }

  /// Anything else: checked for the shapes toml++ 3.3.0 fails on, copied as it is.
  void other(char c, bool first_on_line) {
    if (c == '[' && first_on_line && open_.empty()) {  // a table header: [name] or [[name]]
      size_t j = i_ + 1;
      if (j < n_ && text_[j] == '[') ++j;
      while (j < n_ && (text_[j] == ' ' || text_[j] == '\t')) ++j;
      const auto k = j < n_ ? byte(j) : 'a';
      if (!(std::isalnum(k) || k == '_' || k == '-' || k == '"' || k == '\'' || k == ']'))
        fail(j, "expected a key after '[' (a table header)");
    }
    if (std::isdigit(static_cast<unsigned char>(c)) && i_ > 0 &&
        std::string_view(" \t=[,{").find(text_[i_ - 1]) != std::string_view::npos)
      refuse_date_time();
    if (c == '[' || c == '{') open_.push_back(c);
    if (c == ']' || c == '}') {  // "x = [}": toml++ fails an assumption
      if (!open_.empty() && open_.back() != (c == ']' ? '[' : '{'))
        fail(i_, std::string("'") + c + "' closes the '" + open_.back() + "' opened before it");
      if (!open_.empty()) open_.pop_back();
    }
    out_ += text_[i_++];
  }

  /// A value starting here: toml++ 3.3.0 fails an assumption on "1979-05-27 0]", the date and
  /// time of a date-time separated by a space (then a terminator). No configuration value is a
  /// date: such a value is refused as a whole.
  void refuse_date_time() const {
    std::string chars;  // the value's characters but '_', as toml++ counts them
    size_t j = i_;
    for (; j < n_ && std::string_view(" \t\r\n,]}#").find(text_[j]) == std::string_view::npos; ++j)
      if (text_[j] != '_') chars += text_[j];
    if (chars.size() == 10 && chars[4] == '-' && chars[7] == '-' && j + 1 < n_ && text_[j] == ' ' &&
        std::isdigit(static_cast<unsigned char>(text_[j + 1])))
      fail(i_,
           "a date and time: a configuration value is an integer, a number, a string or a "
           "boolean");
  }

  const std::string& text_;
  const std::string& source_;
  const size_t n_;
  size_t i_ = 0, line_ = 1, line_start_ = 0;
  bool line_empty_ = true;  // nothing but blanks so far on this line
  std::string open_;        // the [ and { of the arrays and inline tables open here
  std::string out_;
};

std::string ascii_toml(const std::string& text, const std::string& source) {
  return AsciiToml(text, source).run();
}

/// The node as a value of the key's type (an integer is accepted for a number); throws
/// InputError naming the file `source` and the key (`where`: the source with the line and column).
ConfigValue value_of(const KeyInfo& k, const toml::node& node, const std::string& source,
                     const std::string& where) {
  const auto mismatch = [&] {
    return InputError::described(source, k.name,
                                 where + ": key '" + k.name + "': expected " +
                                     with_article(k.type) + ", got " + describe(node),
                                 with_article(k.type));
  };
  if (k.type == "integer") {
    if (const auto* v = node.as_integer())
      return ConfigValue(std::in_place_type<int64_t>, v->get());
  } else if (k.type == "number") {
    if (const auto* d = node.as_floating_point()) return ConfigValue(d->get());
    if (const auto* i = node.as_integer()) return ConfigValue(static_cast<double>(i->get()));
  } else if (k.type == "string") {
    if (const auto* v = node.as_string()) return ConfigValue(v->get());
  } else if (const auto* v = node.as_boolean()) {
    return ConfigValue(std::in_place_type<bool>, v->get());
  }
  throw mismatch();
}

std::string group_title(const std::string& group) {
  if (group.empty()) return "Config keys";
  return std::string(1, static_cast<char>(std::toupper(static_cast<unsigned char>(group[0])))) +
         group.substr(1) + " (config keys)";
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string format_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string text(buf, res.ptr);
  if (text.find_first_of(".e") == std::string::npos) {
    if (std::fabs(v) < 1e16) return text + ".0";  // a TOML float, not an integer
    // Past 2^53 the fixed form's digits are mostly made up: an exponent says what is known.
    res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
    text.assign(buf, res.ptr);
  }
  return text;
}

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

std::string toml_value(const ConfigValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return format_number(*d);
  if (const auto* s = std::get_if<std::string>(&v)) return toml_string(*s);
  return std::get<bool>(v) ? "true" : "false";
}

bool ConfigRange::contains(double v) const {
  const bool lo_ok = lo_open ? v > lo : v >= lo;
  const bool hi_ok = hi_open ? v < hi : v <= hi;
  return lo_ok && hi_ok;
}

ConfigRange any_value() { return {}; }

ConfigRange at_least(double lo) { return {lo, false, kInf, false, ">= " + bound_text(lo)}; }

ConfigRange above(double lo) { return {lo, true, kInf, false, "> " + bound_text(lo)}; }

ConfigRange interval(double lo, bool lo_open, double hi, bool hi_open) {
  return {lo, lo_open, hi, hi_open,
          std::string(lo_open ? "(" : "[") + bound_text(lo) + ", " + bound_text(hi) +
              (hi_open ? ")" : "]")};
}

std::string config_difference(const std::string& saved, const std::string& now) {
  std::istringstream a(saved), b(now);
  std::string x, y, out;
  while (std::getline(a, x) && std::getline(b, y))
    if (x != y) out += (out.empty() ? "" : "; ") + x + " -> " + y;
  return out.empty() ? "the key lists differ" : out;
}

KeyTable::KeyTable(std::string title, TableOptions options)
    : title_(std::move(title)), options_(std::move(options)) {}

std::optional<std::size_t> KeyTable::index_of(const std::string& name) const {
  for (std::size_t i = 0; i < size(); ++i)
    if (info(i).name == name || option_name(info(i)) == "--" + name) return i;
  return std::nullopt;
}

std::string KeyTable::option_name(const KeyInfo& k) const {
  std::string name = k.name;
  if (options_.dashed_options) std::replace(name.begin(), name.end(), '_', '-');
  return "--" + name;
}

std::string KeyTable::key_list() const {
  std::string out;
  for (std::size_t i = 0; i < size(); ++i) out += (i ? ", " : "") + info(i).name;
  return out;
}

std::string KeyTable::render(const std::vector<ConfigValue>& values, bool trajectory_only) const {
  std::ostringstream out;
  if (!trajectory_only)
    out << "# " << title_ << ". Flat `key = value` lines;\n"
        << "# --<key> VALUE on the command line overrides them.\n";
  std::string group;
  for (std::size_t i = 0; i < size(); ++i) {
    const KeyInfo& k = info(i);
    if (trajectory_only) {
      if (k.trajectory) out << k.name << " = " << toml_value(values[i]) << "\n";
      continue;
    }
    if (i == 0 || k.group != group) {
      group = k.group;
      out << (group.empty() ? "\n" : "\n# ---- " + group + " ----\n");
    }
    out << "# " << k.description << "\n" << k.name << " = " << toml_value(values[i]) << "\n";
  }
  return out.str();
}

std::vector<std::pair<std::size_t, ConfigValue>> KeyTable::read(const std::string& text,
                                                                const std::string& source) const {
  const std::string ascii = ascii_toml(text, source);
  toml::table table;
  try {
    table = toml::parse(ascii, source);
  } catch (const toml::parse_error& e) {
    throw FormatError::described(
        source, "", location(source, e.source()) + ": " + one_line(std::string(e.description())));
  }
  std::vector<std::pair<std::size_t, ConfigValue>> out;
  for (const auto& [name, node] : table) {
    const std::string where = location(source, name.source());
    std::optional<std::size_t> i;
    for (std::size_t j = 0; j < size() && !i; ++j)
      if (info(j).name == name.str()) i = j;
    if (!i)
      throw InputError::described(source, std::string(name.str()),
                                  where + ": unknown key '" + std::string(name.str()) +
                                      "' (valid keys: " + key_list() + ")");
    out.emplace_back(*i, value_of(info(*i), node, source, where));
  }
  return out;
}

std::string KeyTable::read_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw FormatError::described(path, "", path + ": cannot read (no such file)");
  if (fs::is_directory(path, ec))
    throw FormatError::described(path, "", path + ": cannot read (a directory)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FormatError::described(path, "", path + ": cannot read");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw FormatError::described(path, "", path + ": cannot read");
  return text.str();
}

std::pair<std::size_t, ConfigValue> KeyTable::parse_override(const std::string& name,
                                                             const std::string& value) const {
  const auto i = index_of(name);
  if (!i)
    throw OptionError::described(
        "--" + name, "unknown option '--" + name + "' (valid keys: " + key_list() + ")");
  const KeyInfo& k = info(*i);
  const std::string error = override_error(k, value);
  if (!error.empty()) throw OptionError::described(option_name(k), option_name(k) + ": " + error);
  if (k.type == "integer") return {*i, ConfigValue(std::in_place_type<int64_t>, std::stoll(value))};
  if (k.type == "number") return {*i, ConfigValue(*sb::parse_finite_number(value))};
  if (k.type == "string") return {*i, ConfigValue(value)};
  return {*i, ConfigValue(std::in_place_type<bool>, value == "true" || value == "1")};
}

void KeyTable::check(const std::vector<ConfigValue>& values) const {
  for (std::size_t i = 0; i < size(); ++i) {
    const KeyInfo& k = info(i);
    double v = 0;
    if (const auto* n = std::get_if<int64_t>(&values[i])) {
      v = static_cast<double>(*n);
    } else if (const auto* d = std::get_if<double>(&values[i])) {
      v = *d;
      if (!std::isfinite(v))
        throw OptionError::described(
            k.name, k.name + " must be a finite number, got " + toml_value(values[i]));
    } else {
      continue;
    }
    if (!k.range.contains(v)) {
      const bool interval = k.range.text[0] == '[' || k.range.text[0] == '(';
      throw OptionError::described(k.name, k.name + " must be " + (interval ? "in " : "") +
                                               k.range.text + ", got " + toml_value(values[i]));
    }
  }
}

void KeyTable::add_options(CLI::App& app, ConfigArgs& args) const {
  // Room for the longest "--eval_batch_size INTEGER=1000" so each key's help stays on one line.
  auto formatter = app.get_formatter();
  formatter->column_width(std::max<std::size_t>(formatter->get_column_width(), 34));
  app.add_option(
         "--config", args.config_path,
         "TOML file of the keys below" +
             (options_.example.empty() ? std::string() : " (e.g. " + options_.example + ")") +
             "; --<key> options override it, whatever their order")
      ->type_name("FILE");
  for (std::size_t i = 0; i < size(); ++i) {
    const KeyInfo* k = &info(i);  // the table outlives the app
    std::string help = k->description;
    if (!k->range.text.empty()) help += "; range " + k->range.text;
    if (k->flag) {
      app.add_flag_function(
             option_name(*k),
             [&args, name = k->name](std::int64_t count) {
               args.overrides.emplace_back(name, count > 0 ? "true" : "false");
             },
             help)
          ->group(group_title(k->group));
      continue;
    }
    app.add_option_function<std::string>(
           option_name(*k),
           [&args, name = k->name](const std::string& value) {
             args.overrides.emplace_back(name, value);
           },
           help)
        ->type_name(upper(k->type))
        ->default_str(k->default_text)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
        ->check(CLI::Validator([k](std::string& value) { return override_error(*k, value); }, ""))
        ->group(group_title(k->group));
  }
}

}  // namespace sb::runkit
