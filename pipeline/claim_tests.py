"""The tests the claims table uses, one per kind of claim, each chosen by the claim's wording
(../docs/protocol.md, "The claims table"). Every function returns a Verdict: the test's name, the
effect and interval it judged, its p and the verdict, so that a row shows what decided it.

All effects are oriented so that > 0 is the paper's side: (the value of the head the paper says is
worse) - (the value of the head it says is better), for perplexity, bits per character, NLL,
cross-entropy or error, where lower is better. Samples are paired by seed.

  directional      "A is better than B". Paired t-test (two-sided p), 95% t interval, sign test.
                   reproduced: p < 0.05 and the interval above 0; contradicted: p < 0.05 and the
                   interval below 0; else not significant.
  equivalence      "A and B tie" / "no difference". TOST (Schuirmann 1987) against a margin m
                   stated before the runs: two one-sided paired t-tests of H0 effect <= -m and
                   H0 effect >= +m; p = the larger of the two; the 90% t interval (1 - 2 alpha)
                   is the one TOST judges. equivalent (the claim reproduced): the 90% interval
                   inside (-m, m); not equivalent (contradicted): the 90% interval entirely
                   outside [-m, m]; else undecided. A significant difference smaller than m is
                   still a tie.
  non-inferiority  "A is no worse than B" (a range that contains another: Theorem 4). One-sided
                   against a margin m stated first: effect = worse_candidate - reference with the
                   claim that it is < m. reproduced: the one-sided 95% upper bound below m;
                   contradicted: the one-sided 95% lower bound above m; else undecided. Without
                   seeds to pair (the converged fits: two fits a head), the bounds are the worst
                   and best pairing of the fits.
  count            "the rank is at most / exceeds the bound": a certified count or window against
                   the bound (rank_analysis's verdict where it gave one); no p.
  mechanism        "the gain comes from breaking the bottleneck": the gain where the bottleneck can
                   bind (d + 2 < M) against the gain where it cannot (d + 2 >= M), paired by seed:
                   interaction = gain_bind - gain_free. reproduced: the interaction's 95% interval
                   above 0 and the free gain not above 0 (its interval covers 0 or lies below);
                   partly: the interaction above 0 and the free gain above 0 too; contradicted:
                   the interaction's interval below 0; not supported: the interaction's interval
                   covers 0 while the free gain is above 0 (the gain is there without a
                   bottleneck and not detectably larger with one); else undecided.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from scipy import stats

ALPHA = 0.05


@dataclass
class Verdict:
    test: str                             # the test's name as the table prints it
    verdict: str                          # reproduced / contradicted / not significant / ...
    n: int | None = None                  # pairs (seeds)
    effect: float | None = None           # oriented: > 0 is the paper's side
    ci: tuple[float, float] | None = None  # the interval the rule judged
    p: float | None = None
    p_sign: float | None = None
    note: str = ""                         # what the rule compared, in words


def _diffs(worse: list[float], better: list[float]) -> list[float]:
    if len(worse) != len(better) or len(worse) < 2:
        raise ValueError(f"a paired test needs >= 2 pairs of equal length, got {len(worse)} "
                         f"and {len(better)}")
    return [a - b for a, b in zip(worse, better)]


def t_interval(diffs: list[float], level: float) -> tuple[float, tuple[float, float], float]:
    """(mean, the two-sided `level` t interval, the standard error)."""
    n = len(diffs)
    mean = statistics.fmean(diffs)
    se = statistics.stdev(diffs) / math.sqrt(n)
    half = stats.t.ppf(0.5 + level / 2, n - 1) * se
    return mean, (mean - half, mean + half), se


def _one_sided_p(mean: float, se: float, df: int, above: float) -> float:
    """P of a t at least as large as observed under H0 mean = `above` (H1: mean > above)."""
    if se == 0:
        return 0.0 if mean > above else 1.0
    return float(stats.t.sf((mean - above) / se, df))


def sign_p(diffs: list[float]) -> float:
    positive = sum(d > 0 for d in diffs)
    nonzero = sum(d != 0 for d in diffs)
    return float(stats.binomtest(positive, nonzero, 0.5).pvalue) if nonzero else 1.0


def directional(worse: list[float], better: list[float]) -> Verdict:
    """'better' is better than 'worse' (module docstring)."""
    d = _diffs(worse, better)
    mean, ci, se = t_interval(d, 1 - ALPHA)
    if se == 0:
        p = 0.0 if mean else 1.0
    else:
        p = float(2 * stats.t.sf(abs(mean / se), len(d) - 1))
    if p < ALPHA and ci[0] > 0:
        v = "reproduced"
    elif p < ALPHA and ci[1] < 0:
        v = "contradicted"
    else:
        v = "not significant"
    return Verdict("paired t (two-sided), 95% CI", v, len(d), mean, ci, p, sign_p(d))


def equivalence(a: list[float], b: list[float], margin: float) -> Verdict:
    """a and b tie within +-margin (TOST, module docstring)."""
    if not margin > 0:
        raise ValueError(f"an equivalence margin must be > 0, got {margin}")
    d = _diffs(a, b)
    mean, ci90, se = t_interval(d, 1 - 2 * ALPHA)
    df = len(d) - 1
    p_low = _one_sided_p(mean, se, df, -margin)          # H0: effect <= -m
    p_high = _one_sided_p(-mean, se, df, -margin)        # H0: effect >= +m
    p = max(p_low, p_high)
    if -margin < ci90[0] and ci90[1] < margin:
        v = "reproduced (equivalent)"
    elif ci90[0] > margin or ci90[1] < -margin:
        v = "contradicted (not equivalent)"
    else:
        v = "undecided"
    return Verdict(f"TOST, margin +-{margin:.3g}, 90% CI", v, len(d), mean, ci90, p, sign_p(d))


def noninferiority(candidate: list[float], reference: list[float], margin: float) -> Verdict:
    """candidate is no worse than reference by more than margin (lower is better), paired."""
    if not margin > 0:
        raise ValueError(f"a non-inferiority margin must be > 0, got {margin}")
    d = _diffs(candidate, reference)
    mean, ci90, se = t_interval(d, 1 - 2 * ALPHA)  # its ends are the one-sided 95% bounds
    p = _one_sided_p(-mean, se, len(d) - 1, -margin)  # H0: effect >= m
    if ci90[1] < margin:
        v = "reproduced (no worse)"
    elif ci90[0] > margin:
        v = "contradicted (worse by more than the margin)"
    else:
        v = "undecided"
    return Verdict(f"non-inferiority, margin {margin:.3g}, one-sided 95%", v, len(d), mean, ci90,
                   p, sign_p(d))


def noninferiority_bounds(candidate: list[float], reference: list[float],
                          margin: float) -> Verdict:
    """Non-inferiority without seeds to pair: the worst pairing (max candidate - min reference)
    must lie below margin; the best pairing above it contradicts (module docstring)."""
    if not margin > 0:
        raise ValueError(f"a non-inferiority margin must be > 0, got {margin}")
    worst = max(candidate) - min(reference)
    best = min(candidate) - max(reference)
    if worst < margin:
        v = "reproduced (no worse)"
    elif best > margin:
        v = "contradicted (worse by more than the margin)"
    else:
        v = "undecided"
    mean = statistics.fmean(candidate) - statistics.fmean(reference)
    return Verdict(f"non-inferiority, margin {margin:.3g}, worst pairing of the fits", v,
                   effect=mean, ci=(best, worst))


def count(rank_lo: int, rank_hi: int, bound: int, above: bool,
          tool_verdict: str | None = None) -> Verdict:
    """A certified window [rank_lo, rank_hi] against the bound: `above` claims rank > bound.
    rank_analysis's own verdict decides where it gave one (it judges the window)."""
    if tool_verdict is not None:
        ok = tool_verdict == "exceeds_bound" if above else \
            tool_verdict in ("within_bound", "bound_not_binding")
        undecided = tool_verdict in ("undecided", "unresolved_at_precision")
    else:
        ok = rank_lo > bound if above else rank_hi <= bound
        undecided = (rank_lo <= bound < rank_hi)
    v = "reproduced" if ok else ("undecided" if undecided else "contradicted")
    return Verdict("count (certified window)", v, effect=float(rank_lo - bound))


def mechanism(gain_bind: list[float], gain_free: list[float]) -> Verdict:
    """The gain comes from the bottleneck (module docstring). gain_*: per seed, paired."""
    d = _diffs(gain_bind, gain_free)
    mean, ci, se = t_interval(d, 1 - ALPHA)
    p = _one_sided_p(mean, se, len(d) - 1, 0.0)  # H1: interaction > 0
    free = directional(gain_free, [0.0] * len(gain_free))
    free_above = free.verdict == "reproduced"
    if ci[0] > 0 and not free_above:
        v = "reproduced"
    elif ci[0] > 0:
        v = "partly (larger where it binds, present where it cannot)"
    elif ci[1] < 0:
        v = "contradicted"
    elif free_above:
        v = "not supported (the gain is there where no bottleneck can bind, and not larger " \
            "where one does)"
    else:
        v = "undecided"
    note = (f"gain where it cannot bind {free.effect:.3g} [{free.ci[0]:.3g}, {free.ci[1]:.3g}] "
            f"(p {free.p:.2g})")
    return Verdict("interaction, paired t (one-sided p), 95% CI", v, len(d), mean, ci, p,
                   sign_p(d), note)
