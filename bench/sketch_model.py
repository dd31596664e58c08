"""The sketch's FLOP model (analysis/sketch.h) from one rank_analysis --json result, shared by
the benches that put a sketch's time beside it. Per pass, with p probes and the final k for every
pass (k may grow, so an upper bound):
  sparse start  A_b Omega (T M zeta multiply-adds, counted as 2 T M zeta flops) and A_b^T Z,
                2 T M k (sketch_starts of them: a start whose count reached k starts again at
                4k);
  full pass     A_b [Q W] and A_b^T Z, 2 T M (2k + p);
  check         A_b [Q W] alone, 2 T M (k + p);
  power step    A_b W and A_b^T Z on the probes alone, 2 T M (2p);
  range start   (the verdict's, sketch_range_start) one pass: a sparse start without A_b^T Z,
                2 T M zeta, beside A_b W for its probes alone, 2 T M p (p = sketch_range_probes,
                20 by default); its QR of A Omega in
                memory (4 T k^2 + 2 T k b) is not a product over A and is timed as solve, outside
                this model.
When the range start did not settle, the sketch started again from a sparse start: its pass
comes first."""


def sketch_flops(j: dict, probes: int = 40) -> tuple[float, dict]:
    """(flops, the passes of each kind) of the sketch run that wrote result j."""
    tm, k = 2.0 * j["T"] * j["M"], j["sketch_k"]
    zeta = j.get("sketch_start_nonzeros", 0)
    rng = 1 if j.get("sketch_range_start") else 0
    after = j["sketch_passes"] - rng  # passes after the range start's one
    starts = j.get("sketch_starts", 1 if zeta > 0 and after > 0 else 0)
    kinds = {"range": rng, "start": starts,
             "check": j.get("sketch_check_passes", 0),
             "power": j.get("sketch_power_passes", 0)}
    kinds["full"] = after - kinds["start"] - kinds["check"] - kinds["power"]
    range_p = j.get("sketch_range_probes") or probes
    flops = (kinds["range"] * tm * (zeta + range_p) + kinds["start"] * tm * (k + zeta)
             + kinds["full"] * tm * (2 * k + probes) + kinds["check"] * tm * (k + probes)
             + kinds["power"] * tm * 2 * probes)
    return flops, kinds


def describe(kinds: dict) -> str:
    """'2 sparse start(s), 0 full pass(es), 1 check(s) and 14 power step(s)', range first."""
    rng = "the range start (one pass: a sparse start keeping A Omega, and the probes), " \
        if kinds.get("range") else ""
    start = f"{kinds['start']} sparse start(s), " if kinds["start"] else ""
    return (f"{rng}{start}{kinds['full']} full pass(es), {kinds['check']} check(s) and "
            f"{kinds['power']} power step(s)")
