#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "common/errors.h"
#include "common/head_spec.h"

using sb::HeadKind;
using sb::HeadSpec;

TEST_CASE("head spec: every registry name parses back to itself") {
  const auto& names = sb::head_names();
  REQUIRE(names.size() == 12);
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
  } catch (const sb::OptionError& e) {
    const std::string msg = e.what();
    CHECK(e.option() == "head");
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
  // A head spelling is an option's value: every refusal is an OptionError naming "head".
  for (const char* bad : {"sparse:k=0", "sparse:k=2x", "relu:eps=nan", "softmax:k=3", "sparse:k"})
    CHECK_THROWS_AS(HeadSpec::parse(bad), sb::OptionError);
  CHECK_THROWS_AS(sb::parse_head_setting("mos:K=0"), sb::OptionError);
  CHECK_THROWS_WITH(sb::parse_head_setting("mos:K=0", " (see --help)"),
                    "head = \"mos:K=0\": head 'mos:K=0': K must be >= 1 (see --help)");
}

TEST_CASE("head spec: only softmax is bounded by Theorem 2, with bound d + 1 + bias") {
  for (const auto& name : sb::head_names())
    CHECK(sb::theorem2_bounded(sb::head_kind_from_name(name)) == (name == "softmax"));
  CHECK(sb::theorem2_rank_bound(400, true) == 402);  // the paper's PTB rank (Table 3)
  CHECK(sb::theorem2_rank_bound(400, false) == 401);
  CHECK(sb::may_output_neg_inf(HeadKind::sparse));
  CHECK_FALSE(sb::may_output_neg_inf(HeadKind::sigsoftmax));
}

TEST_CASE("head spec: the adaptive heads take a list of cutoffs and a div, and round-trip") {
  const auto a = HeadSpec::parse("adaptive:cutoffs=2000,6000,20000");
  CHECK(a.kind == HeadKind::adaptive);
  CHECK(a.cutoffs == std::vector<int64_t>{2000, 6000, 20000});
  CHECK(a.div == 4.0);  // Grave et al. 2017's default
  CHECK(a.to_string() == "adaptive:cutoffs=2000,6000,20000");
  const auto b = HeadSpec::parse("adaptive_sigsoftmax:div=2,cutoffs=50,500");
  CHECK(b.cutoffs == std::vector<int64_t>{50, 500});
  CHECK(b.div == 2.0);
  CHECK(HeadSpec::parse(b.to_string()).to_string() == b.to_string());
  CHECK(HeadSpec::parse(b.to_string()).div == 2.0);
  CHECK(sb::is_adaptive(b));
  CHECK_FALSE(sb::is_mixture(b));
  CHECK(sb::head_file_name(a.to_string()) == "adaptive_cutoffs_2000_6000_20000");
  CHECK_THROWS_WITH(HeadSpec::parse("softmax:cutoffs=5"), Catch::Contains("unknown option"));
  CHECK_THROWS_WITH(HeadSpec::parse("adaptive:cutoffs=5,5"), Catch::Contains("increasing"));
  CHECK_THROWS_WITH(sb::check_head_fits(a, 20000, "words"),
                    Catch::Contains("the last cutoff 20000 is not below the M = 20000 words"));
  CHECK_THROWS_AS(sb::check_head_fits(a, 20000, "words"), sb::OptionError);
  CHECK_NOTHROW(sb::check_head_fits(a, 20001, "words"));
}

TEST_CASE(
    "head spec: the rank bound is d + 1 + bias for softmax, one more per tail cluster for "
    "the adaptive softmax, and d + bias for logits") {
  const auto softmax = HeadSpec::parse("softmax");
  const auto adaptive = HeadSpec::parse("adaptive:cutoffs=50,500,2500");
  CHECK(sb::head_rank_bound(softmax, 400, true) == sb::theorem2_rank_bound(400, true));
  CHECK(sb::head_rank_bound(softmax, 400, false) == 401);
  CHECK(sb::head_rank_bound(adaptive, 400, true) == 400 + 1 + 3 + 1);
  CHECK(sb::head_rank_bound(adaptive, 400, false) == 400 + 1 + 3);
  CHECK(sb::head_rank_bound(softmax, 400, true, /*normaliser=*/false) == 401);
  // adaptive_sigsoftmax is held against the adaptive softmax's bound, which it may exceed.
  CHECK(sb::head_rank_bound(HeadSpec::parse("adaptive_sigsoftmax:cutoffs=50,500,2500"), 400,
                            true) == 405);
  for (const auto& name : sb::head_names()) {
    INFO(name);
    CHECK(sb::rank_bounded(sb::head_kind_from_name(name)) ==
          (name == "softmax" || name == "adaptive"));
  }
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

TEST_CASE("head_spec: a final LayerNorm bounds the log-probs by d + 1 whatever the bias") {
  using sb::FinalNorm;
  const auto softmax = HeadSpec::parse("softmax");
  // LayerNorm: d - 1 centred directions plus beta's constant (derivation in head_spec.h).
  CHECK(sb::head_rank_bound(softmax, 200, true, true, FinalNorm::layernorm) == 201);
  CHECK(sb::head_rank_bound(softmax, 200, false, true, FinalNorm::layernorm) == 201);
  CHECK(sb::head_rank_bound(softmax, 200, true, /*normaliser=*/false, FinalNorm::layernorm) == 200);
  // RMSNorm does not centre: Theorem 2's count.
  CHECK(sb::head_rank_bound(softmax, 200, true, true, FinalNorm::rmsnorm) == 202);
  CHECK(sb::head_rank_bound(softmax, 200, false, true, FinalNorm::none) == 201);
  // adaptive: one more per tail cluster on top.
  CHECK(sb::head_rank_bound(HeadSpec::parse("adaptive:cutoffs=10,20"), 200, false, true,
                            FinalNorm::layernorm) == 203);
  CHECK(sb::final_norm_from_name("rmsnorm") == FinalNorm::rmsnorm);
  CHECK(sb::final_norm_name(FinalNorm::layernorm) == "layernorm");
  CHECK_THROWS_AS(sb::final_norm_from_name("batchnorm"), sb::OptionError);
}
