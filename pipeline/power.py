"""The seed count of a paired comparison, from a power calculation on measured runs.

    /usr/bin/python3 pipeline/power.py [--runs results/cpu] [--alpha 0.05] [--power 0.8]

For each pair of heads the claims profile compares (softmax vs sigsoftmax, MoS vs MoSS), reads the
test perplexities after finetuning of the seeds both heads ran (final.json), takes the paired
differences' mean and standard deviation, and finds the smallest n whose two-sided paired t-test
at level alpha has at least the asked power against that mean difference: the noncentral t,
power(n) = P(|T| > t_{1-alpha/2, n-1}) with T ~ t(n-1, delta sqrt(n)), delta = mean / sd
(Cohen's d of the differences). The same for the paper's own difference (Table 1, PTB test after
finetuning, results/paper/paper_results.csv) at our spread, to say what n that would need. Prints markdown; `make claims-power` writes results/claims_power.md.
tost_power / tost_seeds_needed do the same for an equivalence claim (a tie judged by TOST against
a margin): the char-tie profile's seeds come from them.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import warnings

from scipy import stats

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_errors import EXIT_BAD_INPUT, EXIT_OK  # noqa: E402
from claims import metric_by_seed, paper_figure  # noqa: E402

# (label, head a, head b): the pairs of the claims profile.
PAIRS = [("softmax - sigsoftmax", "softmax", "sigsoftmax"), ("MoS - MoSS", "mos", "moss")]
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "results")


def power(n: int, effect: float, alpha: float) -> float:
    """Two-sided paired t-test power at n pairs for a standardised effect (mean / sd)."""
    if n < 2:
        return 0.0
    df = n - 1
    crit = stats.t.ppf(1 - alpha / 2, df)
    nc = effect * math.sqrt(n)
    with warnings.catch_warnings():  # scipy's nct warns at df = 1 and a large nc; the value holds
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc))


def seeds_needed(effect: float, alpha: float, target: float, cap: int = 100000) -> int | None:
    n = 2
    while n <= cap:
        if power(n, effect, alpha) >= target:
            return n
        n = n + 1 if n < 100 else int(n * 1.05) + 1
    return None


def tost_power(n: int, diff: float, sd: float, margin: float, alpha: float) -> float:
    """Power of the paired TOST (two one-sided t-tests at level alpha, claim_tests.equivalence)
    to declare |mean difference| < margin with n pairs, when the differences are N(diff, sd^2).
    Each one-sided test's rejection probability is a noncentral t tail, P(T < -t_{1-alpha, n-1})
    with T ~ t(n-1, (diff - margin) sqrt(n) / sd) for the upper bound and its mirror for the lower;
    both reject with probability at least their sum minus 1 (Bonferroni), which is the value
    returned: a lower bound, tight when each is near 1 (tests/pipeline/test_claims.py checks it
    against a Monte-Carlo estimate)."""
    if n < 2 or sd <= 0:
        return 0.0
    df, se = n - 1, sd / math.sqrt(n)
    crit = stats.t.ppf(1 - alpha, df)
    with warnings.catch_warnings():  # as in power(): scipy's nct warns far in its tails
        warnings.simplefilter("ignore", RuntimeWarning)
        below = float(stats.nct.cdf(-crit, df, (diff - margin) / se))
        above = float(stats.nct.sf(crit, df, (diff + margin) / se))
    return max(0.0, below + above - 1.0)


def tost_seeds_needed(diff: float, sd: float, margin: float, alpha: float, target: float,
                      cap: int = 1000) -> int | None:
    """The smallest n whose tost_power reaches target; None past cap (|diff| near the margin)."""
    for n in range(2, cap + 1):
        if tost_power(n, diff, sd, margin, alpha) >= target:
            return n
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default="results/cpu", help="a profile's output directory")
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--power", type=float, default=0.8)
    ap.add_argument("--seeds", type=int, default=6, help="the seed count chosen (claims profile)")
    args = ap.parse_args()
    if not os.path.isdir(args.runs):
        print(f"power.py: {args.runs}: not a directory (a profile's output, e.g. results/cpu)",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"# Seeds for the paired comparisons: a power calculation on {args.runs}")
    print()
    print(f"Command: `/usr/bin/python3 pipeline/power.py --runs {args.runs}`. Two-sided paired "
          f"t-test, alpha = {args.alpha}, power {args.power} (noncentral t). Test ppl after "
          "finetuning, paired by seed.")
    print()
    n = args.seeds
    print(f"| pair | seeds | mean diff | sd of diffs | effect (mean / sd) | n for our effect | "
          f"power at n = {n} | at n = {n} if sd is 1.5x | paper's diff | "
          "n for the paper's diff at our sd |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, a, b in PAIRS:
        paper_diff = round(paper_figure(RESULTS, a) - paper_figure(RESULTS, b), 3)
        pa, pb = (metric_by_seed(args.runs, h, "wordlm", "test_ppl") for h in (a, b))
        seeds = sorted(set(pa) & set(pb))
        if len(seeds) < 2:
            print(f"| {label} | {len(seeds)} | - | - | - | needs >= 2 paired seeds | - | - | "
                  f"{paper_diff} | - |")
            continue
        diffs = [pa[s] - pb[s] for s in seeds]
        mean = sum(diffs) / len(diffs)
        sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1))
        ours = seeds_needed(abs(mean) / sd, args.alpha, args.power) if sd > 0 else 2
        theirs = seeds_needed(paper_diff / sd, args.alpha, args.power) if sd > 0 else 2
        effect = abs(mean) / sd if sd > 0 else math.inf
        print(f"| {label} | {len(seeds)} ({', '.join(map(str, seeds))}) | {mean:.2f} | {sd:.2f} "
              f"| {effect:.2f} | {ours} | {power(n, effect, args.alpha):.2f} | "
              f"{power(n, effect / 1.5, args.alpha):.2f} | {paper_diff} | {theirs} |")
    print()
    print(f"The sd of so few differences is itself uncertain; the claims profile takes n = {n} "
          "seeds (the largest n above for our effects, and the issue's minimum), and the "
          "columns beside it give the power that leaves if the true sd is the measured one or "
          "1.5x it. The papers' own differences are far below what any seed count this "
          "machine can run would resolve at this spread: the claims table says so in their rows.")
    print("The paper's differences: Table 1 of the sigsoftmax paper, PTB test ppl after "
          "finetuning (results/paper/paper_results.csv).")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
