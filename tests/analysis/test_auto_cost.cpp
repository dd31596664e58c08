// `--method auto` by cost (analysis/analyse.h: gram_flops, sketch_flops, choose_method): the FLOP
// models are the documented formulas, and the choice follows them on the two measured shapes:
// PTB's test log-probs of a bounded head (82429 x 10000, k = 210) go to the sketch (measured 23 s
// against the Gram path's 70 s), GPT-2's shape (4000 x 50257, k = 770) to the Gram path (9.6 s
// against 21 s); a head without a bound, a run that asks for the whole spectrum (--spectrum,
// --out) and a small matrix keep the Gram path.

#include <catch2/catch.hpp>
#include <limits>

#include "analysis/analyse.h"

using namespace sb::analysis;

TEST_CASE("auto's FLOP models are the documented formulas", "[analyse][auto]") {
  // n^2 m + 4 n^3 with n = min(T, M): PTB 1e8 * 82429 + 4e12.
  CHECK(gram_flops(82429, 10000) == Approx(1e8 * 82429 + 4e12).epsilon(1e-12));
  CHECK(gram_flops(10000, 82429) == gram_flops(82429, 10000));
  // 12 T M k: three passes of two products of 2 T M k.
  CHECK(sketch_flops(82429, 10000, 210) == Approx(12.0 * 82429 * 10000 * 210).epsilon(1e-12));
}

TEST_CASE("auto takes the sketch where its cost is below half the Gram path's, for bounded heads",
          "[analyse][auto]") {
  AnalyseOptions o;    // method auto, the default budget
  o.spectrum = false;  // the command line's default: the rank, not every singular value
  const double limit = 64.0 * (1ull << 30);
  CHECK(choose_method(82429, 10000, kFloat32Eps, o, limit, 210, /*low_rank_expected=*/true) ==
        SvdMethod::sketch);
  CHECK(choose_method(4000, 50257, kFloat32Eps, o, limit, 770, true) == SvdMethod::gram);
  // Without a bound the sketch's k may grow to min(T, M): no bet on it.
  CHECK(choose_method(82429, 10000, kFloat32Eps, o, limit, 210, false) == SvdMethod::gram);
  // The whole spectrum asked for (--spectrum, --out): the Gram path gives every value.
  o.spectrum = true;
  CHECK(choose_method(82429, 10000, kFloat32Eps, o, limit, 210, true) == SvdMethod::gram);
  o.spectrum = false;
  // A small matrix: the Gram path costs < 1e10 FLOP, whatever the sketch would.
  CHECK(gram_flops(900, 400) < 1e10);
  CHECK(choose_method(900, 400, kFloat32Eps, o, limit, 24, true) == SvdMethod::gram);
}
