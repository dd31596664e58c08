#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <catch2/catch.hpp>

#include "common/errors.h"
#include "common/head_spec.h"
#include "tests/fixtures/error_of.h"
#include "tests/fixtures/parse_args.h"
#include "tests/fixtures/temp_dir.h"
#include "trainers/lm/config.h"

namespace fs = std::filesystem;
using sb::lm::WordLmConfig;

using namespace sb::test;  // tests/fixtures/

namespace {

fs::path write_file(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

/// Every key's value as TOML text: two configs are equal iff these maps are.
std::map<std::string, std::string> values_of(const WordLmConfig& cfg) {
  std::map<std::string, std::string> values;
  for (const auto& key : sb::lm::config_keys()) values[key.name] = key.value_text(cfg);
  return values;
}

/// A config with every field different from its default.
WordLmConfig all_changed() {
  WordLmConfig c;
  c.dataset = "wikitext-2";
  c.data = "/data/a \"quoted\" \\ dir\twith tab";
  c.train_tokens = 12345;
  c.valid_tokens = 678;
  c.test_tokens = 9;
  c.train_split = "valid";
  c.vocab_size = 33278;
  c.head = "mos:K=15";
  c.emsize = 280;
  c.nhid = 960;
  c.nhidlast = 620;
  c.nlayers = 4;
  c.dropout = 0.1;
  c.dropouth = 0.225;
  c.dropouti = 1.0 / 3.0;
  c.dropoute = 0.07;
  c.wdrop = 0.55;
  c.dropoutl = 0.3;
  c.latent_bias = false;
  c.fused_lstm = true;
  c.bias_init = "uniform";
  c.batch_size = 12;
  c.eval_batch_size = 7;
  c.bptt = 35;
  c.lr = 20;
  c.lr_decay = 2;
  c.lr_decay_after = 2;
  c.clip = 0.5;
  c.wdecay = 1.3e-6;
  c.alpha = 2.5;
  c.beta = 1e-300;
  c.nonmono = 4;
  c.epochs = 7;
  c.finetune_epochs = 0;
  c.max_batches = 11;
  c.seed = 9876543210123;
  c.threads = 2;
  c.device = "cuda:1";
  c.log_interval = 13;
  c.out = "results/x";
  c.dump_test = false;
  c.epoch_dump_rows = 5000;
  c.mixture_stats = 0;
  return c;
}

/// Parses argv with the config options registered and returns what the command line said.
sb::lm::ConfigArgs parse_command_line(std::vector<std::string> args) {
  return sb::test::parse_args_with<sb::lm::ConfigArgs>(sb::lm::add_config_options, std::move(args));
}

}  // namespace

TEST_CASE("config: the defaults are the paper's PTB settings") {
  const WordLmConfig c;
  CHECK(c.dataset == "ptb");
  CHECK(c.head == "softmax");
  CHECK(c.nlayers == 3);
  CHECK(c.nhid == 1150);
  CHECK(c.emsize == 400);
  CHECK(c.batch_size == 20);
  CHECK(c.lr == 30);
  CHECK(c.clip == 0.25);
  CHECK(c.wdecay == 1.2e-6);
  CHECK(c.dropouti == 0.4);
  CHECK(c.dropouth == 0.25);
  CHECK(c.dropout == 0.4);
  CHECK(c.dropoute == 0.1);
  CHECK(c.wdrop == 0.5);
  CHECK(c.bptt == 70);
  CHECK(c.alpha == 2);
  CHECK(c.beta == 1);
  CHECK(c.nonmono == 5);
  CHECK(c.epochs == 1000);
  CHECK_NOTHROW(sb::lm::validate(c));
}

TEST_CASE("config: the key table covers every field once, in struct order, typed") {
  const auto& keys = sb::lm::config_keys();
  REQUIRE(keys.size() == 43);
  CHECK(keys.front().name == "dataset");
  CHECK(keys.back().name == "mixture_stats");
  std::vector<std::string> names;
  for (const auto& k : keys) names.push_back(k.name);
  std::sort(names.begin(), names.end());
  CHECK(std::adjacent_find(names.begin(), names.end()) == names.end());
  // Changing every field changes every key's value: no key reads the wrong field.
  const auto before = values_of(WordLmConfig{}), after = values_of(all_changed());
  for (const auto& k : keys) CHECK(before.at(k.name) != after.at(k.name));
  CHECK(sb::lm::find_config_key("lr")->type == "number");
  CHECK(sb::lm::find_config_key("nhid")->type == "integer");
  CHECK(sb::lm::find_config_key("head")->type == "string");
  CHECK(sb::lm::find_config_key("dump_test")->type == "boolean");
  CHECK(sb::lm::find_config_key("lr")->default_text == "30.0");
  CHECK(sb::lm::find_config_key("wdecay")->default_text == "1.2e-06");
  CHECK(sb::lm::find_config_key("dataset")->default_text == "\"ptb\"");
  CHECK(sb::lm::find_config_key("nhidd") == nullptr);
}

TEST_CASE("config: to_toml round-trips every key exactly through load_config_file") {
  const TempDir dir("config_roundtrip");
  for (const auto& cfg : {WordLmConfig{}, all_changed()}) {
    const std::string text = sb::lm::key_table().to_toml(cfg);
    const auto path = write_file(dir / "rt.toml", text);
    const auto loaded = sb::lm::load_config_file(path.string());
    CHECK(values_of(loaded) == values_of(cfg));
    // Spot checks on the raw fields, in case value_text itself lost precision.
    CHECK(loaded.dropouti == cfg.dropouti);
    CHECK(loaded.wdecay == cfg.wdecay);
    CHECK(loaded.beta == cfg.beta);
    CHECK(loaded.data == cfg.data);
    CHECK(loaded.dump_test == cfg.dump_test);
    CHECK(loaded.seed == cfg.seed);
    CHECK(sb::lm::key_table().to_toml(loaded) == text);
  }
}

TEST_CASE("config: to_toml prints every key once with its description, doubles shortest") {
  const std::string text = sb::lm::key_table().to_toml(WordLmConfig{});
  for (const auto& k : sb::lm::config_keys()) {
    CHECK(contains(text, "\n" + k.name + " = " + k.default_text + "\n"));
    CHECK(contains(text, "# " + k.description + "\n" + k.name + " = "));
  }
  CHECK(contains(text, "\nlr = 30.0\n"));
  CHECK(contains(text, "\nwdecay = 1.2e-06\n"));
  CHECK(contains(text, "\ndropoute = 0.1\n"));
}

TEST_CASE("config: a file sets only its keys over the base and accepts comments") {
  const TempDir dir("config_partial");
  const auto path =
      write_file(dir / "p.toml",
                 "# a comment\nnhid = 500  # trailing comment\nhead = \"sigsoftmax\"\n"
                 "\n");
  WordLmConfig base;
  base.emsize = 200;
  const auto c = sb::lm::load_config_file(path.string(), base);
  CHECK(c.nhid == 500);
  CHECK(c.head == "sigsoftmax");
  CHECK(c.emsize == 200);  // from base
  CHECK(c.lr == 30);       // default
  CHECK(sb::lm::load_config_file(write_file(dir / "e.toml", "").string()).nhid == 1150);
}

TEST_CASE("config: an unknown key names the file and the key and lists the valid keys") {
  const TempDir dir("config_unknown");
  const auto path = write_file(dir / "u.toml", "nhid = 100\nnhidd = 200\n").string();
  const std::string msg = what_of([&] { sb::lm::load_config_file(path); });
  CHECK(contains(msg, path + ":2:"));
  CHECK(contains(msg, "unknown key 'nhidd'"));
  for (const auto& k : sb::lm::config_keys()) CHECK(contains(msg, k.name));
  CHECK_THROWS_AS(sb::lm::load_config_file(path), std::runtime_error);
  // Tables are not keys: config files are flat.
  const auto table = write_file(dir / "t.toml", "[model]\nnhid = 100\n").string();
  CHECK(contains(what_of([&] { sb::lm::load_config_file(table); }), "unknown key 'model'"));
}

TEST_CASE("config: a value of the wrong type names the key, the expected and the actual type") {
  const TempDir dir("config_types");
  const auto load = [&](const std::string& text) {
    const auto path = write_file(dir / "t.toml", text).string();
    return what_of([&] { sb::lm::load_config_file(path); });
  };
  const std::string lr = load("lr = \"thirty\"\n");
  CHECK(contains(lr, (dir / "t.toml").string() + ":1:"));
  CHECK(contains(lr, "key 'lr': expected a number, got \"thirty\""));
  CHECK(contains(load("nhid = 1150.5\n"), "key 'nhid': expected an integer, got 1150.5"));
  CHECK(contains(load("nhid = 1150.0\n"), "key 'nhid': expected an integer, got 1150.0"));
  CHECK(contains(load("head = 3\n"), "key 'head': expected a string, got 3"));
  CHECK(contains(load("dump_test = 1\n"), "key 'dump_test': expected a boolean, got 1"));
  CHECK(contains(load("lr = [30]\n"), "key 'lr': expected a number, got an array"));
}

TEST_CASE("config: an integer is accepted for a number key") {
  const TempDir dir("config_int_number");
  const auto path = write_file(dir / "n.toml", "lr = 20\nclip = 1\nwdecay = 1e-5\n").string();
  const auto c = sb::lm::load_config_file(path);
  CHECK(c.lr == 20.0);
  CHECK(c.clip == 1.0);
  CHECK(c.wdecay == 1e-5);
}

TEST_CASE("config: a missing file and a TOML syntax error are one-line errors with the path") {
  const TempDir dir("config_syntax");
  const std::string missing = (dir / "missing.toml").string();
  CHECK(contains(what_of([&] { sb::lm::load_config_file(missing); }), missing + ": cannot read"));
  CHECK(contains(what_of([&] { sb::lm::load_config_file(dir.string()); }), ": cannot read"));
  const auto bad = write_file(dir / "bad.toml", "nhid = 100\nlr = = 3\n").string();
  const std::string msg = what_of([&] { sb::lm::load_config_file(bad); });
  CHECK(contains(msg, bad + ":2:"));
  CHECK(msg.find('\n') == std::string::npos);
  CHECK_THROWS_AS(sb::lm::load_config_file(bad), std::runtime_error);
  const auto dup = write_file(dir / "dup.toml", "nhid = 100\nnhid = 200\n").string();
  CHECK(contains(what_of([&] { sb::lm::load_config_file(dup); }), dup + ":2:"));
}

TEST_CASE("config: load_config_text names its source in errors") {
  CHECK(sb::lm::key_table().load_text("nhid = 7\n", "checkpoint.pt").nhid == 7);
  CHECK(contains(what_of([] { sb::lm::key_table().load_text("x = 1\n", "run/checkpoint.pt"); }),
                 "run/checkpoint.pt:1:1: unknown key 'x'"));
}

TEST_CASE("config: command-line overrides parse each type and reject bad values") {
  WordLmConfig c;
  sb::lm::apply_override(c, "nhid", "500");
  sb::lm::apply_override(c, "lr", "1.5e-3");
  sb::lm::apply_override(c, "head", "mos:K=3");
  sb::lm::apply_override(c, "dump_test", "false");
  CHECK(c.nhid == 500);
  CHECK(c.lr == 1.5e-3);
  CHECK(c.head == "mos:K=3");
  CHECK_FALSE(c.dump_test);
  sb::lm::apply_override(c, "dump_test", "1");
  CHECK(c.dump_test);
  CHECK_THROWS_WITH(sb::lm::apply_override(c, "nhid", "abc"),
                    "--nhid: expected an integer, got 'abc'");
  CHECK_THROWS_WITH(sb::lm::apply_override(c, "nhid", "1.5"),
                    "--nhid: expected an integer, got '1.5'");
  CHECK_THROWS_WITH(sb::lm::apply_override(c, "nhid", ""), "--nhid: expected an integer, got ''");
  CHECK_THROWS_WITH(sb::lm::apply_override(c, "lr", "fast"), "--lr: expected a number, got 'fast'");
  CHECK_THROWS_WITH(sb::lm::apply_override(c, "lr", "inf"), "--lr: expected a number, got 'inf'");
  CHECK_THROWS_WITH(
      sb::lm::apply_override(c, "dump_test", "yes"),
      Catch::Contains("--dump_test: expected a boolean") && Catch::Contains("got 'yes'"));
  CHECK_THROWS_AS(sb::lm::apply_override(c, "nhidd", "1"), sb::OptionError);
  CHECK_THROWS_WITH(sb::lm::apply_override(c, "nhidd", "1"),
                    Catch::Contains("unknown option '--nhidd'") && Catch::Contains("nhidlast"));
  CHECK(c.nhid == 500);  // failed overrides leave the config alone
}

TEST_CASE("config: the command line beats the file, which beats the defaults") {
  const TempDir dir("config_precedence");
  const auto path = write_file(dir / "f.toml", "lr = 10\nnhid = 500\nhead = \"sigsoftmax\"\n");
  const WordLmConfig c = sb::lm::resolve_config(path.string(), {{"lr", "5"}});
  CHECK(c.lr == 5);                                               // command line
  CHECK(c.nhid == 500);                                           // file
  CHECK(c.head == "sigsoftmax");                                  // file
  CHECK(c.emsize == 400);                                         // default
  CHECK(sb::lm::resolve_config("", {{"lr", "5"}}).nhid == 1150);  // no file: defaults
  // Through CLI11: the order of --config and --lr on the command line does not matter.
  for (const auto& args : {std::vector<std::string>{"--config", path.string(), "--lr", "5"},
                           std::vector<std::string>{"--lr=5", "--config", path.string()}}) {
    const auto parsed = parse_command_line(args);
    CHECK(parsed.config_path == path.string());
    const WordLmConfig r = sb::lm::resolve_config(parsed);
    CHECK(r.lr == 5);
    CHECK(r.nhid == 500);
    CHECK(r.emsize == 400);
  }
  // A repeated option: the last one wins.
  CHECK(sb::lm::resolve_config(parse_command_line({"--nhid", "3", "--nhid", "4"})).nhid == 4);
  // Later overrides beat earlier ones in resolve_config too.
  CHECK(sb::lm::resolve_config("", {{"nhid", "3"}, {"nhid", "4"}}).nhid == 4);
}

TEST_CASE("config: resolve_config validates the result and reports bad values") {
  CHECK_THROWS_WITH(sb::lm::resolve_config("", {{"dropout", "1"}}),
                    Catch::Contains("dropout must be in [0, 1), got 1"));
  CHECK_THROWS_AS(parse_command_line({"--nhid", "abc"}), CLI::ValidationError);
  CHECK_THROWS_WITH(parse_command_line({"--nhid", "abc"}),
                    Catch::Contains("--nhid: expected an integer, got 'abc'"));
  CHECK_THROWS_AS(parse_command_line({"--nhidd", "3"}), CLI::ExtrasError);
}

TEST_CASE("config: validate rejects out-of-range values naming the key, range and value") {
  const auto msg = [](auto&& set) {
    WordLmConfig c;
    set(c);
    return what_of([&] { sb::lm::validate(c); });
  };
  CHECK(msg([](WordLmConfig& c) { c.dropout = 1.0; }) == "dropout must be in [0, 1), got 1.0");
  CHECK(msg([](WordLmConfig& c) { c.wdrop = -0.1; }) == "wdrop must be in [0, 1), got -0.1");
  CHECK(msg([](WordLmConfig& c) { c.nhid = 0; }) == "nhid must be >= 1, got 0");
  CHECK(msg([](WordLmConfig& c) { c.bptt = -3; }) == "bptt must be >= 1, got -3");
  CHECK(msg([](WordLmConfig& c) { c.lr = 0; }) == "lr must be > 0, got 0.0");
  CHECK(msg([](WordLmConfig& c) { c.nhidlast = -1; }) == "nhidlast must be >= 0, got -1");
  CHECK(msg([](WordLmConfig& c) { c.train_tokens = -1; }) == "train_tokens must be >= 0, got -1");
  CHECK(msg([](WordLmConfig& c) { c.lr = std::nan(""); }) == "lr must be a finite number, got nan");
  CHECK(contains(msg([](WordLmConfig& c) { c.dataset = ""; }), "dataset must not be empty"));
  CHECK(msg([](WordLmConfig& c) { c.train_split = "test"; }) ==
        "train_split must be train or valid, got \"test\"");
  CHECK(msg([](WordLmConfig& c) { c.train_split = "valid"; }) == "(no exception)");
  CHECK(msg([](WordLmConfig& c) { c.vocab_size = -1; }) == "vocab_size must be >= 0, got -1");
  CHECK(msg([](WordLmConfig& c) { c.device = "gpu"; }) ==
        "device must be auto, cpu, cuda or cuda:N, got \"gpu\"");
  CHECK(msg([](WordLmConfig& c) { c.device = "cuda:"; }) ==
        "device must be auto, cpu, cuda or cuda:N, got \"cuda:\"");
  CHECK(msg([](WordLmConfig& c) { c.device = "cuda:0x"; }) ==
        "device must be auto, cpu, cuda or cuda:N, got \"cuda:0x\"");
  for (const char* ok : {"auto", "cpu", "cuda", "cuda:0", "cuda:12"})
    CHECK(msg([&](WordLmConfig& c) { c.device = ok; }) == "(no exception)");
  CHECK(msg([](WordLmConfig& c) { c.clip = 0; }) == "(no exception)");  // 0 = no clipping
  CHECK(msg([](WordLmConfig& c) { c.finetune_epochs = 0; }) == "(no exception)");
  CHECK_THROWS_AS(sb::lm::validate([] {
                    WordLmConfig c;
                    c.dropouth = 1;
                    return c;
                  }()),
                  sb::OptionError);
}

TEST_CASE("config: validate checks the head and that single heads decode from emsize") {
  WordLmConfig c;
  c.head = "softmaxx";
  const std::string head = what_of([&] { sb::lm::validate(c); });
  CHECK(contains(head, "head"));
  CHECK(contains(head, "softmaxx"));
  for (const auto& name : sb::head_names()) CHECK(contains(head, name));
  c.head = "sparse:k=0";
  CHECK(contains(what_of([&] { sb::lm::validate(c); }), "k must be >= 1"));

  c.head = "softmax";
  c.emsize = 280;
  c.nhidlast = 620;
  CHECK(what_of([&] { sb::lm::validate(c); }) ==
        "nhidlast = 620 needs a mixture head (mos/moss): a single head's decoder input is "
        "emsize = 280 (head = \"softmax\"; set nhidlast = 0 or 280)");
  c.nhidlast = 280;
  CHECK_NOTHROW(sb::lm::validate(c));
  c.nhidlast = 620;
  c.head = "mos:K=15";
  CHECK_NOTHROW(sb::lm::validate(c));
  c.head = "moss:K=15";
  CHECK_NOTHROW(sb::lm::validate(c));
}

TEST_CASE("config: the run directory is out, else results/<dataset>_<head>") {
  WordLmConfig c;
  CHECK(sb::lm::descriptor().run_dir(c) == "results/ptb_softmax");
  c.head = "mos:K=15";
  c.dataset = "wikitext-2";
  CHECK(sb::lm::descriptor().run_dir(c) == "results/wikitext-2_mos_K_15");
  c.head = "spherical:eps=0.5,x=1";
  CHECK(sb::lm::descriptor().run_dir(c) == "results/wikitext-2_spherical_eps_0.5_x_1");
  c.out = "/tmp/run";
  CHECK(sb::lm::descriptor().run_dir(c) == "/tmp/run");
}

TEST_CASE("config: --help lists every key with its type, default and description") {
  CLI::App app{"word_lm"};
  sb::lm::ConfigArgs args;
  sb::lm::add_config_options(app, args);
  const std::string help = app.help();
  CHECK(contains(help, "--config"));
  for (const auto& k : sb::lm::config_keys()) {
    std::string type = k.type;
    std::transform(type.begin(), type.end(), type.begin(), ::toupper);
    CHECK(contains(help, "--" + k.name + " " + type + "=" + k.default_text + " "));
    CHECK(contains(help, k.description));
  }
  CHECK(contains(help, "--lr NUMBER=30.0 "));
  CHECK(contains(help, "--dataset STRING=\"ptb\" "));
  CHECK(args.overrides.empty());  // help and defaults register no overrides
}

TEST_CASE("config: every shipped config file loads, validates and matches its name") {
  const fs::path dir = fs::path(SB_SOURCE_DIR) / "trainers" / "configs";
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir))
    // train_wordlm's configs (<dataset>_<profile>_<head>.toml); the other trainers' files
    // (char_*, nplm_*, classify_*) have their own config structs and tests.
    if (entry.path().extension() == ".toml" &&
        (entry.path().stem().string().rfind("ptb_", 0) == 0 ||
         entry.path().stem().string().rfind("wt2_", 0) == 0))
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 14);  // 10 ptb_paper_*, 2 wt2_paper_*, ptb_cpu, ptb_smoke
  std::map<std::string, WordLmConfig> by_stem;
  for (const auto& path : files) {
    INFO(path.string());
    WordLmConfig c;
    REQUIRE_NOTHROW(c = sb::lm::load_config_file(path.string()));
    REQUIRE_NOTHROW(sb::lm::validate(c));
    const auto spec = c.head.spec();
    const std::string stem = path.stem().string();
    by_stem[stem] = c;
    // <dataset>_<profile>_<head name>.toml: the name says what the file holds.
    if (stem.rfind("ptb_", 0) == 0) CHECK(c.dataset == "ptb");
    if (stem.rfind("wt2_", 0) == 0) CHECK(c.dataset == "wikitext-2");
    const std::string suffix = "_" + spec.name();
    if (stem != "ptb_smoke" && stem != "ptb_cpu")
      CHECK(stem.compare(stem.size() - std::min(stem.size(), suffix.size()), std::string::npos,
                         suffix) == 0);
  }
  for (const char* needed :
       {"ptb_smoke", "ptb_paper_softmax", "ptb_paper_sigsoftmax", "ptb_paper_mos", "ptb_paper_moss",
        "wt2_paper_softmax", "wt2_paper_sigsoftmax", "ptb_cpu"})
    CHECK(by_stem.count(needed) == 1);

  // The paper's single-head PTB files are the defaults (docs/protocol.md) apart from the head.
  const auto defaults = values_of(WordLmConfig{});
  for (const auto& [stem, c] : by_stem) {
    if (stem.rfind("ptb_paper_", 0) != 0 || stem == "ptb_paper_mos" || stem == "ptb_paper_moss")
      continue;
    INFO(stem);
    auto v = values_of(c);
    v["head"] = defaults.at("head");
    CHECK(v == defaults);
  }
  // MoS / MoSS (docs/protocol.md, C.1.2).
  for (const char* stem : {"ptb_paper_mos", "ptb_paper_moss"}) {
    INFO(stem);
    const auto& c = by_stem[stem];
    CHECK(c.head.spec().experts == 15);
    CHECK((c.nhid == 960 && c.nhidlast == 620 && c.emsize == 280 && c.nlayers == 3));
    CHECK((c.batch_size == 12 && c.lr == 20));
    CHECK((c.dropouti == 0.4 && c.dropouth == 0.225 && c.dropout == 0.4));
    CHECK((c.dropoutl == 0.29 && c.dropoute == 0.1 && c.wdrop == 0.5));
  }
  // WT2 (docs/protocol.md): batch 80, dropouts 0.65 / 0.2 / 0.4 / 0.1 / 0.5, 1500 epochs.
  for (const char* stem : {"wt2_paper_softmax", "wt2_paper_sigsoftmax"}) {
    INFO(stem);
    const auto& c = by_stem[stem];
    CHECK((c.batch_size == 80 && c.epochs == 1500));
    CHECK((c.dropouti == 0.65 && c.dropouth == 0.2 && c.dropout == 0.4));
    CHECK((c.dropoute == 0.1 && c.wdrop == 0.5));
  }
  // One scaled-down file for every head (make reproduce passes --head and, for the mixtures,
  // --lr 20): the same model and budget as the paper's layout, smaller; the run directory is
  // chosen by --out.
  const auto& cpu = by_stem["ptb_cpu"];
  CHECK(cpu.head == "softmax");
  CHECK((cpu.emsize == 100 && cpu.nhid == 256 && cpu.nlayers == 2));
  CHECK(cpu.out.empty());
}

TEST_CASE("config: trajectory_toml leaves out the keys a resumed run may change") {
  const WordLmConfig base;
  WordLmConfig c = base;
  c.epochs = 7;
  c.finetune_epochs = 0;
  c.log_interval = 3;
  c.out = "elsewhere";
  c.data = "/data";
  c.dump_test = false;
  c.device = "cpu";
  c.epoch_dump_rows = 10;
  c.mixture_stats = 0;
  const std::string t = sb::lm::key_table().trajectory_toml(base);
  CHECK(sb::lm::key_table().trajectory_toml(c) == t);
  for (const char* left_out : {"epochs", "finetune_epochs", "log_interval", "out", "data",
                               "dump_test", "device", "epoch_dump_rows", "mixture_stats"})
    CHECK_FALSE(contains("\n" + t, "\n" + std::string(left_out) + " = "));
  CHECK(contains(t, "\nlr = 30.0\n"));
  CHECK(contains(t, "\nthreads = 0\n"));  // the thread count shapes the numbers (design.md)
  c.lr = 20;
  CHECK(sb::runkit::config_difference(t, sb::lm::key_table().trajectory_toml(c)) ==
        "lr = 30.0 -> lr = 20.0");
  // A checkpoint written before (the whole file, `lr = 30`, blanked keys) compares the same.
  std::string old = sb::lm::key_table().to_toml(base);
  old.replace(old.find("\nlr = 30.0\n"), 11, "\nlr = 30\n");
  CHECK(sb::lm::key_table().trajectory_toml(sb::lm::key_table().load_text(old, "old checkpoint")) ==
        t);
}
