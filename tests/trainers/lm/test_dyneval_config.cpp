// dyneval's configuration (trainers/lm/dyneval_config.h): the options keep their spellings and
// defaults, --config FILE reads the same keys, the command line beats it. LibTorch-free.

#include <CLI/CLI.hpp>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "tests/fixtures/parse_args.h"
#include "tests/fixtures/temp_dir.h"
#include "trainers/lm/dyneval_config.h"

namespace fs = std::filesystem;
using sb::lm::DynevalConfig;

namespace {

sb::runkit::ConfigArgs parse(std::vector<std::string> argv) {
  return sb::test::parse_args_with<sb::runkit::ConfigArgs>(sb::lm::add_dyneval_options,
                                                           std::move(argv));
}

}  // namespace

TEST_CASE("dyneval config: the defaults are the paper's single-head setting") {
  const DynevalConfig c = sb::lm::resolve_dyneval_config(parse({}));
  CHECK(c.lr == 5e-5);
  CHECK(c.lambda == 2e-3);
  CHECK(c.eps == 1e-3);
  CHECK(c.bptt == 5);
  CHECK(c.stats_batch_size == 100);
  CHECK(c.stats_bptt == 5);
  CHECK(c.stats_tokens == 0);
  CHECK((c.valid_tokens == -1 && c.test_tokens == -1));
  CHECK_FALSE((c.grid || c.json || c.static_only));
  CHECK(sb::lm::parse_number_list(c.grid_lr, "--grid-lr") ==
        std::vector<double>{3e-5, 4e-5, 5e-5, 6e-5, 7e-5, 1e-4});
  CHECK(sb::lm::parse_number_list(c.grid_lambda, "--grid-lambda") ==
        std::vector<double>{1e-3, 2e-3, 3e-3, 5e-3});
  CHECK_NOTHROW(sb::lm::check_ranges(c));
}

TEST_CASE("dyneval config: the options keep their spellings, bare flags, the last repeat wins") {
  const DynevalConfig c = sb::lm::resolve_dyneval_config(
      parse({"--stats-batch-size", "50", "--grid", "--grid-lr", "1e-4,-1", "--static-only",
             "--json", "--valid-tokens", "0", "--bptt", "3", "--bptt", "4", "--out", "r.json"}));
  CHECK(c.stats_batch_size == 50);
  CHECK((c.grid && c.static_only && c.json));
  CHECK(c.grid_lr == "1e-4,-1");
  CHECK(c.valid_tokens == 0);
  CHECK(c.bptt == 4);
  CHECK(c.out == "r.json");
  CHECK_THROWS_AS(parse({"--stats_batch_size", "50"}), CLI::ExtrasError);
  CHECK_THROWS_AS(parse({"--bptt", "x"}), CLI::ValidationError);
  CLI::App app{"dyneval"};
  sb::runkit::ConfigArgs args;
  sb::lm::add_dyneval_options(app, args);
  const std::string help = app.help();
  CHECK(help.find("--stats-batch-size INTEGER=100 ") != std::string::npos);
  CHECK(help.find("--lr NUMBER=5e-05 ") != std::string::npos);
  CHECK(help.find("--grid ") != std::string::npos);
  CHECK(help.find("--config FILE") != std::string::npos);
}

TEST_CASE("dyneval config: a --config file uses the key names, the command line beats it") {
  const sb::test::TempDir dir("dyneval_config");
  const auto file = (dir / "d.toml").string();
  std::ofstream(file) << "stats_batch_size = 7\nlr = 1e-4\ngrid = true\nbptt = 9\n";
  const DynevalConfig c = sb::lm::resolve_dyneval_config(parse({"--bptt", "2", "--config", file}));
  CHECK(c.stats_batch_size == 7);
  CHECK(c.lr == 1e-4);
  CHECK(c.grid);
  CHECK(c.bptt == 2);
  std::ofstream(file) << "stats-batch-size = 7\n";
  CHECK_THROWS_WITH(sb::lm::resolve_dyneval_config(parse({"--config", file})),
                    Catch::StartsWith(file + ":1:1: unknown key 'stats-batch-size'"));
  // Written and read back.
  DynevalConfig d;
  d.grid_lr = "1e-05";
  d.threads = 3;
  const auto back = sb::lm::dyneval::key_table().load_text(sb::lm::to_toml(d), "mem");
  CHECK(sb::lm::to_toml(back) == sb::lm::to_toml(d));
}

TEST_CASE("dyneval config: number lists and ranges name the option and the value") {
  CHECK(sb::lm::parse_number_list("", "--grid-lr").empty());
  CHECK(sb::lm::parse_number_list("1,2.5", "--grid-lr") == std::vector<double>{1, 2.5});
  CHECK_THROWS_WITH(sb::lm::parse_number_list("1,x", "--grid-lr"),
                    "--grid-lr: expected comma-separated numbers, got '1,x'");
  CHECK_THROWS_WITH(sb::lm::parse_number_list("1,", "--grid-lr"),
                    "--grid-lr: expected comma-separated numbers, got '1,'");
  DynevalConfig c;
  c.threads = -1;
  CHECK_THROWS_WITH(sb::lm::check_ranges(c), "threads must be >= 0, got -1");
  c = DynevalConfig{};
  c.test_tokens = -2;
  CHECK_THROWS_WITH(sb::lm::check_ranges(c), "test_tokens must be >= -1, got -2");
}
