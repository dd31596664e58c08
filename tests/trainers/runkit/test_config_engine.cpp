// The configuration engine (trainers/runkit/config_table.h) over a small test struct: round trip,
// number format, escapes, ranges, precedence, unknown keys, wrong types, trajectory keys, --help.
// Links only runkit_config: no LibTorch.

#include <CLI/CLI.hpp>
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "tests/fixtures/error_of.h"
#include "tests/fixtures/parse_args.h"
#include "tests/fixtures/temp_dir.h"
#include "trainers/runkit/config_table.h"

namespace fs = std::filesystem;
using namespace sb::runkit;

using namespace sb::test;  // tests/fixtures/

namespace {

struct TestConfig {
  std::string name = "plain";
  std::string path = "";
  int64_t count = 3;
  int64_t offset = 0;
  double rate = 0.5;
  double scale = 1;
  double shift = 0;
  bool verbose = false;
  int64_t epochs = 10;
  std::string out = "";
};

const ConfigTable<TestConfig>& table(bool dashed = false) {
  using C = TestConfig;
  const auto sections = [] {
    return std::vector<ConfigSection<C>>{
        {"data",
         {key("name", &C::name, "a name"), key("path", &C::path, "a path").not_trajectory()}},
        {"model",
         {key("count", &C::count, "how many", at_least(1)),
          key("offset", &C::offset, "any integer"),
          key("rate", &C::rate, "a probability", interval(0, false, 1, true)),
          key("scale", &C::scale, "positive", above(0)), key("shift", &C::shift, "any number")}},
        {"outputs",
         {key("verbose", &C::verbose, "talk more").as_flag(),
          key("epochs", &C::epochs, "how long", at_least(1)).not_trajectory(),
          key("out", &C::out, "where").not_trajectory()}},
    };
  };
  static const ConfigTable<C> plain("Test configuration", sections());
  static const ConfigTable<C> with_dashes("Test configuration", sections(),
                                          TableOptions{"x.toml", /*dashed_options=*/true});
  return dashed ? with_dashes : plain;
}

bool same_bits(double a, double b) {
  return std::signbit(a) == std::signbit(b) && (a == b || (std::isnan(a) && std::isnan(b)));
}

/// The overrides CLI11 collects from a command line (the words after the program name).
ConfigArgs parse(std::vector<std::string> argv, bool dashed = false) {
  return sb::test::parse_args_with<ConfigArgs>(
      [&](CLI::App& app, ConfigArgs& args) { table(dashed).add_options(app, args); },
      std::move(argv));
}

}  // namespace

TEST_CASE("config engine: to_toml then load_text gives the same struct back, awkward values too") {
  const std::vector<std::string> names = {
      "",
      "plain",
      "a \"quoted\" word",
      "back\\slash",
      "new\nline",
      "tab\there",
      "cr\rhere",
      std::string("bell\x07 esc\x1b del\x7f nul") + '\0' + "end"};
  const double numbers[] = {0.1,
                            1e-300,
                            1.2e-06,
                            -0.0,
                            0.0,
                            1e20,
                            1.0 / 3.0,
                            -2.5,
                            123456789012345.0,
                            1.2345678901234568e+17,
                            5e-324,
                            std::numeric_limits<double>::max()};
  for (const auto& s : names)
    for (const double x : numbers) {
      TestConfig c;
      c.name = s;
      c.path = s + "/p";
      c.shift = x;
      c.scale = std::fabs(x) + 1;
      c.count = 9876543210123;
      c.offset = -7;
      c.verbose = true;
      const std::string text = table().to_toml(c);
      INFO(text);
      const TestConfig back = table().load_text(text, "mem");
      CHECK(back.name == c.name);
      CHECK(back.path == c.path);
      CHECK(same_bits(back.shift, c.shift));
      CHECK(same_bits(back.scale, c.scale));
      CHECK(back.count == c.count);
      CHECK(back.offset == c.offset);
      CHECK(back.verbose);
      CHECK(table().to_toml(back) == text);
    }
}

TEST_CASE("config engine: doubles are TOML floats in shortest round-trip form, integers integers") {
  CHECK(format_number(30) == "30.0");
  CHECK(format_number(0.0) == "0.0");
  CHECK(format_number(-0.0) == "-0.0");
  CHECK(format_number(0.1) == "0.1");
  CHECK(format_number(1.2e-6) == "1.2e-06");
  CHECK(format_number(1e20) == "1e+20");
  CHECK(format_number(1e-300) == "1e-300");
  CHECK(format_number(123456789012345.0) == "123456789012345.0");
  CHECK(format_number(1.2345678901234568e+17) == "1.2345678901234568e+17");  // no made-up digits
  CHECK(format_number(std::nan("")) == "nan");
  CHECK(format_number(-std::numeric_limits<double>::infinity()) == "-inf");
  TestConfig c;
  c.shift = 0;
  c.scale = 30;
  const std::string text = table().to_toml(c);
  CHECK(contains(text, "\nshift = 0.0\n"));
  CHECK(contains(text, "\nscale = 30.0\n"));
  CHECK(contains(text, "\ncount = 3\n"));
  CHECK(contains(text, "\nverbose = false\n"));
  CHECK(table().find("scale")->default_text == "1.0");
  CHECK(table().find("count")->default_text == "3");
}

TEST_CASE(
    "config engine: strings escape quotes, backslashes, newline, tab, CR and control characters") {
  CHECK(toml_string("a\"b") == "\"a\\\"b\"");
  CHECK(toml_string("a\\b") == "\"a\\\\b\"");
  CHECK(toml_string("a\nb\tc\rd") == "\"a\\nb\\tc\\rd\"");
  CHECK(toml_string(std::string("\x01\x1f\x7f", 3)) == "\"\\u0001\\u001F\\u007F\"");
  CHECK(toml_string("caf\xc3\xa9") == "\"caf\xc3\xa9\"");  // UTF-8 as it is
  CHECK(toml_value(ConfigValue(std::string("x"))) == "\"x\"");
}

TEST_CASE("config engine: files are written in sections with each key's description above it") {
  const std::string text = table().to_toml(TestConfig{});
  CHECK(text.rfind("# Test configuration. ", 0) == 0);
  const auto data = text.find("\n# ---- data ----\n"), model = text.find("\n# ---- model ----\n");
  const auto outputs = text.find("\n# ---- outputs ----\n");
  CHECK((data < model && model < outputs && outputs != std::string::npos));
  CHECK(contains(text, "# a probability\nrate = 0.5\n"));
  CHECK(contains(text, "# a name\nname = \"plain\"\n"));
}

TEST_CASE("config engine: ranges check open and closed bounds and name the key, range and value") {
  const auto error = [](const std::function<void(TestConfig&)>& set) {
    TestConfig c;
    set(c);
    return what_of([&] { table().check_ranges(c); });
  };
  CHECK(error([](TestConfig&) {}) == "(no exception)");
  CHECK(error([](TestConfig& c) { c.rate = 0; }) == "(no exception)");  // [0, ...
  CHECK(error([](TestConfig& c) { c.rate = 0.999; }) == "(no exception)");
  CHECK(error([](TestConfig& c) { c.rate = 1; }) == "rate must be in [0, 1), got 1.0");  // ..., 1)
  CHECK(error([](TestConfig& c) { c.rate = -0.1; }) == "rate must be in [0, 1), got -0.1");
  CHECK(error([](TestConfig& c) { c.scale = 0; }) == "scale must be > 0, got 0.0");
  CHECK(error([](TestConfig& c) { c.scale = 1e-300; }) == "(no exception)");
  CHECK(error([](TestConfig& c) { c.count = 1; }) == "(no exception)");
  CHECK(error([](TestConfig& c) { c.count = 0; }) == "count must be >= 1, got 0");
  CHECK(error([](TestConfig& c) { c.offset = -5; }) == "(no exception)");
  CHECK(error([](TestConfig& c) { c.shift = std::nan(""); }) ==
        "shift must be a finite number, got nan");
  CHECK(interval(0, true, 1, false).text == "(0, 1]");
  CHECK(at_least(0.5).text == ">= 0.5");
  CHECK(above(0).contains(1e-300));
  CHECK_FALSE(above(0).contains(0));
  CHECK(interval(0, true, 1, false).contains(1));
  CHECK_FALSE(interval(0, true, 1, false).contains(0));
}

TEST_CASE(
    "config engine: the command line beats the file whatever the order, the last repeat wins") {
  const TempDir dir("config_engine_precedence");
  const auto file = (dir / "c.toml").string();
  std::ofstream(file) << "count = 5\nrate = 0.25\nname = \"file\"\n";
  for (const auto& argv : {std::vector<std::string>{"--config", file, "--count", "7"},
                           std::vector<std::string>{"--count=7", "--config", file}}) {
    const ConfigArgs args = parse(argv);
    CHECK(args.config_path == file);
    const TestConfig c = table().resolve(args);
    CHECK(c.count == 7);      // command line
    CHECK(c.rate == 0.25);    // file
    CHECK(c.name == "file");  // file
    CHECK(c.scale == 1);      // default
  }
  CHECK(table().resolve(parse({"--count", "3", "--count", "4"})).count == 4);
  CHECK(table().merge("", {{"count", "3"}, {"count", "4"}}).count == 4);
  CHECK(table().merge(file, {}).count == 5);
  CHECK(parse({}).overrides.empty());  // defaults register no overrides
  // resolve checks the ranges, merge does not.
  CHECK(what_of([&] {
          table().resolve(parse({"--rate", "1"}));
        }) == "rate must be in [0, 1), got 1.0");
  CHECK(table().merge(parse({"--rate", "1"})).rate == 1);
}

TEST_CASE("config engine: unknown keys in the file and on the command line list the valid keys") {
  const std::string file = what_of([] { table().load_text("count = 1\ncont = 2\n", "f.toml"); });
  CHECK(file ==
        "f.toml:2:1: unknown key 'cont' (valid keys: name, path, count, offset, rate, "
        "scale, shift, verbose, epochs, out)");
  CHECK(contains(what_of([] { table().load_text("[model]\ncount = 1\n", "f.toml"); }),
                 "f.toml:1:2: unknown key 'model'"));  // flat files: a table is not a key
  TestConfig c;
  CHECK(what_of([&] { table().apply(c, "cont", "1"); }) ==
        "unknown option '--cont' (valid keys: name, path, count, offset, rate, scale, shift, "
        "verbose, epochs, out)");
  CHECK_THROWS_AS(table().apply(c, "cont", "1"), sb::OptionError);
  CHECK_THROWS_AS(table().apply(c, "count", "abc"), sb::OptionError);
  try {  // a file's unknown key names the file and the key
    table().load_text("count = 1\ncont = 2\n", "f.toml");
    FAIL("no exception");
  } catch (const sb::InputError& e) {
    CHECK(e.file() == "f.toml");
    CHECK(e.field() == "cont");
  }
  CHECK_THROWS_AS(parse({"--cont", "1"}), CLI::ExtrasError);
}

TEST_CASE("config engine: a wrong type in a file names file:line:col, the key and the value") {
  const auto error = [](const std::string& text) {
    return what_of([&] { table().load_text(text, "f.toml"); });
  };
  CHECK(error("name = \"a\"\nscale = \"x\"\n") ==
        "f.toml:2:1: key 'scale': expected a number, got \"x\"");
  CHECK(error("count = 1.5\n") == "f.toml:1:1: key 'count': expected an integer, got 1.5");
  CHECK(error("count = 2.0\n") == "f.toml:1:1: key 'count': expected an integer, got 2.0");
  CHECK(error("name = 3\n") == "f.toml:1:1: key 'name': expected a string, got 3");
  CHECK(error("verbose = 1\n") == "f.toml:1:1: key 'verbose': expected a boolean, got 1");
  CHECK(error("scale = [1]\n") == "f.toml:1:1: key 'scale': expected a number, got an array");
  CHECK(error("  count = 1\n  scale = true\n") ==
        "f.toml:2:3: key 'scale': expected a number, got true");
  CHECK_THROWS_AS(table().load_text("count = 1.5\n", "f.toml"), sb::InputError);
  try {
    table().load_text("count = 1.5\n", "f.toml");
    FAIL("no exception");
  } catch (const sb::InputError& e) {
    CHECK(e.file() == "f.toml");
    CHECK(e.field() == "count");
  }
}

TEST_CASE("config engine: an integer reads as a number, so files in the older formats still load") {
  // `0` and `30` (the word-LM files' old format) and `0.0`, `30.0` (the flat one) read the same.
  const TestConfig a = table().load_text("shift = 0\nscale = 30\n", "old.toml");
  const TestConfig b = table().load_text("shift = 0.0\nscale = 30.0\n", "new.toml");
  CHECK(a.shift == 0);
  CHECK(a.scale == 30);
  CHECK(table().to_toml(a) == table().to_toml(b));
  CHECK(table().load_text("name = \"a\\u0009b\\tc\"\n", "x").name == "a\tb\tc");
  CHECK(table().load_text("", "empty").count == 3);  // nothing set: the base
  TestConfig base;
  base.count = 8;
  CHECK(table().load_text("rate = 0.125\n", "x", base).count == 8);
}

TEST_CASE("config engine: bad command-line values: abc for an integer, nan or inf for a number") {
  TestConfig c;
  CHECK(what_of([&] { table().apply(c, "count", "abc"); }) ==
        "--count: expected an integer, got 'abc'");
  CHECK(what_of([&] { table().apply(c, "count", "1.5"); }) ==
        "--count: expected an integer, got '1.5'");
  CHECK(what_of([&] { table().apply(c, "count", ""); }) == "--count: expected an integer, got ''");
  CHECK(what_of([&] { table().apply(c, "scale", "nan"); }) ==
        "--scale: expected a number, got 'nan'");
  CHECK(what_of([&] { table().apply(c, "scale", "inf"); }) ==
        "--scale: expected a number, got 'inf'");
  CHECK(what_of([&] { table().apply(c, "scale", "2x"); }) ==
        "--scale: expected a number, got '2x'");
  CHECK(contains(what_of([&] { table().apply(c, "verbose", "yes"); }),
                 "--verbose: expected a boolean (true/false/1/0), got 'yes'"));
  CHECK(c.count == 3);  // failed overrides leave the config alone
  table().apply(c, "count", "-4");
  table().apply(c, "scale", "1.5e-3");
  table().apply(c, "name", "a b");
  table().apply(c, "verbose", "1");
  CHECK((c.count == -4 && c.scale == 1.5e-3 && c.name == "a b" && c.verbose));
  // Through CLI11 the value is checked while parsing.
  CHECK_THROWS_AS(parse({"--count", "abc"}), CLI::ValidationError);
  CHECK_THROWS_WITH(parse({"--count", "abc"}), Catch::Contains("expected an integer, got 'abc'"));
  CHECK_THROWS_AS(parse({"--scale", "inf"}), CLI::ValidationError);
}

TEST_CASE("config engine: trajectory_toml holds only the keys that shape the trajectory") {
  TestConfig c;
  c.epochs = 99;
  c.out = "somewhere";
  c.path = "/data";
  const std::string t = table().trajectory_toml(c);
  CHECK(t ==
        "name = \"plain\"\ncount = 3\noffset = 0\nrate = 0.5\nscale = 1.0\nshift = 0.0\n"
        "verbose = false\n");
  TestConfig d = c;
  d.epochs = 1;
  d.out = "";
  d.path = "";
  CHECK(table().trajectory_toml(d) == t);  // those keys may change on resume
  d.count = 4;
  CHECK(config_difference(t, table().trajectory_toml(d)) == "count = 3 -> count = 4");
  // What a checkpoint stores reads back.
  CHECK(table().load_text(t, "checkpoint").count == 3);
  CHECK(config_difference("a = 1\n", "a = 1\n") == "the key lists differ");
}

TEST_CASE("config engine: --help shows each key's type, default and range in its section's group") {
  CLI::App app{"test"};
  ConfigArgs args;
  table().add_options(app, args);
  const std::string help = app.help();
  CHECK(contains(help, "--config FILE"));
  CHECK(contains(help, "Data (config keys)"));
  CHECK(help.find("Model (config keys)") < help.find("Outputs (config keys)"));
  CHECK(contains(help, "--count INTEGER=3 "));
  CHECK(contains(help, "--rate NUMBER=0.5 "));
  CHECK(contains(help, "--name STRING=\"plain\" "));
  CHECK(contains(help, "a probability; range [0, 1)"));
  CHECK(contains(help, "positive; range > 0"));
  CHECK(contains(help, "how many; range >= 1"));
}

TEST_CASE("config engine: dashed option spellings and bare boolean flags") {
  const ConfigArgs args = parse({"--verbose", "--count", "4"}, /*dashed=*/true);
  const TestConfig c = table(true).resolve(args);
  CHECK(c.verbose);
  CHECK(c.count == 4);
  CHECK_FALSE(table(true).resolve(parse({}, true)).verbose);
  CLI::App app{"test"};
  ConfigArgs unused;
  table(true).add_options(app, unused);
  CHECK(contains(app.help(), "(e.g. x.toml)"));
  TestConfig d;
  table(true).apply(d, "count", "5");
  CHECK(d.count == 5);
  // The file keeps the key names.
  CHECK(table(true).load_text("count = 6\n", "f").count == 6);
}

TEST_CASE("config engine: a TOML syntax error and an unreadable file are one-line errors") {
  const std::string syntax =
      what_of([] { table().load_text("count = 1\nrate = = 3\n", "s.toml"); });
  CHECK(syntax.rfind("s.toml:2:", 0) == 0);
  CHECK(syntax.find('\n') == std::string::npos);
  CHECK_THROWS_AS(table().load_text("count = 1\nrate = = 3\n", "s.toml"), sb::FormatError);
  CHECK(what_of([] {
          table().load_text("count = 1\ncount = 2\n", "d.toml");
        }).rfind("d.toml:2:", 0) == 0);
  const TempDir dir("config_engine_files");
  const std::string missing = (dir / "missing.toml").string();
  CHECK(what_of([&] { table().load_file(missing); }) == missing + ": cannot read (no such file)");
  CHECK_THROWS_AS(table().load_file(missing), sb::FormatError);
  CHECK(what_of([&] { table().load_file(dir.string()); }) ==
        dir.string() + ": cannot read (a directory)");
  const auto good = (dir / "g.toml").string();
  std::ofstream(good) << "count = 11\n";
  CHECK(table().load_file(good).count == 11);
  CHECK(what_of([&] {
          table().load_file((dir / "bad.toml").string());
        }).find("bad.toml: cannot read") != std::string::npos);
}
