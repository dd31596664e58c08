#include <stdexcept>

#include <catch2/catch.hpp>

#include "common/head_spec.h"

using sb::HeadKind;
using sb::HeadSpec;

TEST_CASE("head spec: every registry name parses back to itself") {
  const auto& names = sb::head_names();
  REQUIRE(names.size() == 10);
  for (const auto& name : names) {
    const auto spec = HeadSpec::parse(name);
    CHECK(spec.name() == name);
    CHECK(HeadSpec::parse(spec.to_string()).to_string() == spec.to_string());
  }
}

TEST_CASE("head spec: hyperparameters parse and round-trip") {
  CHECK(HeadSpec::parse("sparse:k=20").k == 20);
  CHECK(HeadSpec::parse("mos:K=3").experts == 3);
  CHECK(HeadSpec::parse("moss:K=7").kind == HeadKind::moss);
  CHECK(HeadSpec::parse("spherical:eps=0.5").eps == 0.5);
  CHECK(HeadSpec::parse("spherical").eps == 0.0198);  // the paper's PTB value
  CHECK(HeadSpec::parse("relu").eps == 1e-8);         // supplementary eq. 15
  CHECK(HeadSpec::parse("sigsoftmax:b=1").learnable_bias);
  CHECK(HeadSpec::parse("sparse:k=20").to_string() == "sparse:k=20");
  CHECK(HeadSpec::parse("mos:K=3").to_string() == "mos:K=3");
  CHECK(HeadSpec::parse(HeadSpec::parse("spherical:eps=0.0123").to_string()).eps == 0.0123);
}

TEST_CASE("head spec: an unknown name is an error that lists the valid ones") {
  try {
    HeadSpec::parse("softmaxx");
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    CHECK(msg.find("softmaxx") != std::string::npos);
    for (const auto& name : sb::head_names()) CHECK(msg.find(name) != std::string::npos);
  }
}

TEST_CASE("head spec: malformed or out-of-range options are errors") {
  CHECK_THROWS_WITH(HeadSpec::parse("sparse:k=0"), Catch::Contains("k must be >= 1"));
  CHECK_THROWS_WITH(HeadSpec::parse("sparse:k=2x"), Catch::Contains("not an integer"));
  CHECK_THROWS_WITH(HeadSpec::parse("mos:K=0"), Catch::Contains("K must be >= 1"));
  CHECK_THROWS_WITH(HeadSpec::parse("spherical:eps=0"), Catch::Contains("eps must be > 0"));
  CHECK_THROWS_WITH(HeadSpec::parse("spherical:eps=-1"), Catch::Contains("eps must be > 0"));
  CHECK_THROWS_WITH(HeadSpec::parse("relu:eps=nan"), Catch::Contains("finite"));
  CHECK_THROWS_WITH(HeadSpec::parse("softmax:k=3"), Catch::Contains("unknown option 'k'"));
  CHECK_THROWS_WITH(HeadSpec::parse("sparse:k"), Catch::Contains("not key=value"));
}

TEST_CASE("head spec: only softmax is bounded by Theorem 2, with bound d + 1 + bias") {
  for (const auto& name : sb::head_names())
    CHECK(sb::theorem2_bounded(sb::head_kind_from_name(name)) == (name == "softmax"));
  CHECK(sb::theorem2_rank_bound(400, true) == 402);  // the paper's PTB rank (Table 3)
  CHECK(sb::theorem2_rank_bound(400, false) == 401);
  CHECK(sb::may_output_neg_inf(HeadKind::sparse));
  CHECK_FALSE(sb::may_output_neg_inf(HeadKind::sigsoftmax));
}

TEST_CASE("head spec: exactly mos and moss are mixtures") {
  for (const auto& name : sb::head_names()) {
    INFO(name);
    CHECK(sb::is_mixture(sb::head_kind_from_name(name)) == (name == "mos" || name == "moss"));
  }
  CHECK(sb::is_mixture(HeadSpec::parse("moss:K=3")));
  CHECK_FALSE(sb::is_mixture(HeadSpec::parse("sparse:k=3")));
}

TEST_CASE("head spec: every head's dump has a rank but sparse's, which may hold -inf") {
  for (const auto& name : sb::head_names()) {
    INFO(name);
    const auto kind = sb::head_kind_from_name(name);
    CHECK(sb::rank_defined(kind) == (name != "sparse"));
    CHECK(sb::rank_defined(kind) == !sb::may_output_neg_inf(kind));
  }
}
