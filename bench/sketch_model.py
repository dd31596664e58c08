"""The sketch's FLOP model (analysis/sketch.h) from one rank_analysis --json result, shared by
the benches that put a sketch's time beside it. Per pass, with p probes and the final k for every
pass (k may grow, so an upper bound):
  sparse start  A_b Omega (T M zeta multiply-adds, counted as 2 T M zeta flops) and A_b^T Z,
                2 T M k;
  full pass     A_b [Q W] and A_b^T Z, 2 T M (2k + p);
  check         A_b [Q W] alone, 2 T M (k + p);
  power step    A_b W and A_b^T Z on the probes alone, 2 T M (2p);
  range start   (the verdict's, sketch_range_start) a sparse start without A_b^T Z, 2 T M zeta,
                then A_b W for the probes alone, 2 T M p; its QR of A Omega in memory (4 T k^2 +
                2 T k b) is not a product over A and is timed as solve, outside this model.
When the range start did not settle, the sketch started again from a sparse start: its two
passes come first."""


def sketch_flops(j: dict, probes: int = 40) -> tuple[float, dict]:
    """(flops, the passes of each kind) of the sketch run that wrote result j."""
    tm, k = 2.0 * j["T"] * j["M"], j["sketch_k"]
    zeta = j.get("sketch_start_nonzeros", 0)
    rng = 1 if j.get("sketch_range_start") else 0
    after = j["sketch_passes"] - 2 * rng  # passes after the range start's two
    kinds = {"range": rng, "start": 1 if zeta > 0 and after > 0 else 0,
             "check": j.get("sketch_check_passes", 0) - rng,
             "power": j.get("sketch_power_passes", 0)}
    kinds["full"] = after - kinds["start"] - kinds["check"] - kinds["power"]
    flops = (kinds["range"] * tm * (zeta + probes) + kinds["start"] * tm * (k + zeta)
             + kinds["full"] * tm * (2 * k + probes) + kinds["check"] * tm * (k + probes)
             + kinds["power"] * tm * 2 * probes)
    return flops, kinds


def describe(kinds: dict) -> str:
    """'1 sparse start, 0 full pass(es), 1 check(s) and 0 power step(s)', the range start first."""
    rng = "the range start (a sparse start keeping A Omega, one pass of probes), " \
        if kinds.get("range") else ""
    start = "1 sparse start, " if kinds["start"] else ""
    return (f"{rng}{start}{kinds['full']} full pass(es), {kinds['check']} check(s) and "
            f"{kinds['power']} power step(s)")
