// rank_analysis --list-heads: the head facts the pipeline reads (pipeline/head_facts.py) are
// common/head_spec.h's, for every registry head, checked here against the functions themselves
// and against the facts the papers state (only softmax is bounded by Theorem 2; MoS and MoSS are
// mixtures; sparse may output -inf, so its dump has no rank).

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "common/head_spec.h"
#include "tests/fixtures/run_command.h"

namespace {

nlohmann::json list_heads_json() {
  int status = -1;
  const std::string out =
      sb::test::run(std::string(SB_RANK_ANALYSIS) + " --list-heads --json", &status);
  REQUIRE(status == 0);
  return nlohmann::json::parse(out);
}

}  // namespace

TEST_CASE("rank_analysis --list-heads --json: every registry head with head_spec's facts") {
  const auto heads = list_heads_json().at("heads");
  REQUIRE(heads.size() == sb::head_names().size());
  for (const auto& name : sb::head_names()) {
    INFO(name);
    REQUIRE(heads.contains(name));
    const auto& facts = heads.at(name);
    const auto kind = sb::head_kind_from_name(name);
    CHECK(facts.at("theorem2_bounded").get<bool>() == sb::rank_bounded(kind));
    CHECK(facts.at("is_mixture").get<bool>() == sb::is_mixture(kind));
    CHECK(facts.at("is_adaptive").get<bool>() == sb::is_adaptive(kind));
    CHECK(facts.at("may_output_neg_inf").get<bool>() == sb::may_output_neg_inf(kind));
    CHECK(facts.at("rank_defined").get<bool>() == sb::rank_defined(kind));
  }
}

TEST_CASE("rank_analysis --list-heads --json: mos and moss are mixtures, sparse has no rank") {
  const auto heads = list_heads_json().at("heads");
  CHECK(heads.at("softmax").at("theorem2_bounded").get<bool>());
  CHECK_FALSE(heads.at("sigsoftmax").at("theorem2_bounded").get<bool>());
  CHECK(heads.at("adaptive").at("theorem2_bounded").get<bool>());
  CHECK_FALSE(heads.at("adaptive_sigsoftmax").at("theorem2_bounded").get<bool>());
  CHECK(heads.at("mos").at("is_mixture").get<bool>());
  CHECK(heads.at("moss").at("is_mixture").get<bool>());
  CHECK_FALSE(heads.at("softmax").at("is_mixture").get<bool>());
  CHECK(heads.at("sparse").at("may_output_neg_inf").get<bool>());
  CHECK_FALSE(heads.at("sparse").at("rank_defined").get<bool>());
  CHECK(heads.at("taylor").at("rank_defined").get<bool>());
}

TEST_CASE("rank_analysis --list-heads: a table with one row per head, no input file needed") {
  int status = -1;
  const std::string out = sb::test::run(std::string(SB_RANK_ANALYSIS) + " --list-heads", &status);
  CHECK(status == 0);
  CHECK(out.rfind("head ", 0) == 0);
  for (const auto& name : sb::head_names()) CHECK(out.find("\n" + name + " ") != std::string::npos);
}
