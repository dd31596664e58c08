#!/usr/bin/python3
"""pipeline/claims.py: the verdict rule on made-up intervals, the paired statistics against an
independent computation (numpy, the t distribution's closed form for the CI), the choice of the
claims profile over the cpu one once it has two pairs, a head that did not train, and the
committed results/claims.md: every row's verdict follows from its own p and interval, the table
is what claims.py writes from the committed results, and the README shows it; pipeline/power.py's
seed count against a Monte-Carlo power estimate."""

import json
import math
import os
import subprocess
import tempfile

import numpy as np
from scipy import stats

from checks import ROOT, check, finish, import_pipeline

import_pipeline()
import claims  # noqa: E402
import power  # noqa: E402

# The rule.
check(claims.verdict((0.5, 2.0), 0.01) == "reproduced", "interval above 0, p < 0.05: reproduced")
check(claims.verdict((-2.0, -0.5), 0.01) == "contradicted",
      "interval below 0, p < 0.05: contradicted")
check(claims.verdict((-1.0, 2.0), 0.3) == "not significant", "p >= 0.05: not significant")
check(claims.verdict((0.5, 2.0), 0.01, tie=True) == "contradicted",
      "a tie claim with p < 0.05 either way: contradicted")
check(claims.verdict((-1.0, 1.0), 0.6, tie=True) == "not significant",
      "a tie claim with p >= 0.05: not significant (equality is never 'reproduced')")

# The statistics, against numpy: t = mean / (sd / sqrt(n)), p = 2 P(T > |t|), CI = mean +- t* se.
rng = np.random.default_rng(0)
a = list(rng.normal(160, 3, 6))
b = list(np.array(a) - rng.normal(5, 2, 6))
mean, ci, p, p_sign = claims.paired(a, b)
d = np.array(a) - np.array(b)
se = d.std(ddof=1) / math.sqrt(len(d))
t = d.mean() / se
check(abs(mean - d.mean()) < 1e-12, "mean difference equals numpy's (1e-12: float64 sums)")
check(abs(p - 2 * stats.t.sf(abs(t), len(d) - 1)) < 1e-12,
      f"paired t p equals 2 P(T > |t|) from numpy's t = {t:.3f} (1e-12)")
half = stats.t.ppf(0.975, len(d) - 1) * se
check(abs(ci[0] - (d.mean() - half)) < 1e-12 and abs(ci[1] - (d.mean() + half)) < 1e-12,
      "95% interval equals mean +- t(0.975, n-1) se (1e-12)")
check(abs(p_sign - 2 * 0.5 ** 6) < 1e-12, "six positive differences: sign test p = 2 / 2^6")


def fake_run(root, profile, label, seed, ppl):
    run = os.path.join(root, profile, f"{label}_s{seed}")
    os.makedirs(run)
    with open(os.path.join(run, "final.json"), "w") as f:
        json.dump({"schema": 2, "trainer": "wordlm", "wordlm": {"test_ppl": ppl}}, f)


with tempfile.TemporaryDirectory() as tmp:
    for seed, (s, g) in zip((1, 2), ((170.0, 160.0), (172.0, 161.0))):
        fake_run(tmp, "cpu", "softmax", seed, s)
        fake_run(tmp, "cpu", "sigsoftmax", seed, g)
    fake_run(tmp, "claims", "softmax", 1, 150.0)  # one pair only: not used
    fake_run(tmp, "claims", "sigsoftmax", 1, 149.0)
    dirs = [os.path.join(tmp, "claims"), os.path.join(tmp, "cpu")]
    row = claims.comparison("c", "p", dirs, "wordlm", "test_ppl", "softmax", "sigsoftmax", "ppl")
    check(row.n == 2 and row.source.startswith("results/cpu "),
          "claims with one pair: the row comes from the cpu runs (2 pairs)")
    fake_run(tmp, "claims", "softmax", 2, 151.0)
    fake_run(tmp, "claims", "sigsoftmax", 2, 149.5)
    row = claims.comparison("c", "p", dirs, "wordlm", "test_ppl", "softmax", "sigsoftmax", "ppl")
    check(row.n == 2 and row.source.startswith("results/claims ") and
          abs(row.effect - 1.25) < 1e-12, "claims with two pairs: the row comes from them")
    for seed in (1, 2):
        fake_run(tmp, "cpu", "relu", seed, 20000.0 + seed)
    row = claims.comparison("c", "p", [os.path.join(tmp, "cpu")], "wordlm", "test_ppl", "relu",
                            "softmax", "ppl", untrained=10000.0)
    check(row.verdict.startswith("not attempted (relu did not train"),
          f"a head above the uniform model in every seed is not a result ({row.verdict})")

    # Provenance: a directory with a summary is linked with the commit the summary records (its
    # runs', where it says), and a summary made from a changed tree is marked; before its tables,
    # the runs' commits are named.
    with open(os.path.join(tmp, "cpu", "summary.md"), "w") as f:
        f.write("**Machine:** x, commit abc1234 (with uncommitted changes), tables written\n")
    src = claims.shown(os.path.join(tmp, "cpu"))
    check(src == "[results/cpu](cpu/summary.md) (abc1234 (with uncommitted changes)) **not from a "
          "clean commit**", f"a summary from a changed tree is linked and marked ({src})")
    # Tables re-written at a later commit: the row names the commit the runs were made at.
    with open(os.path.join(tmp, "cpu", "summary.md"), "w") as f:
        f.write("**Runs made at:** 1111111 (4 runs), 2222222 (2 runs).\n\n"
                "**Machine:** x, commit 3333333, tables written\n")
    src = claims.shown(os.path.join(tmp, "cpu"))
    check(src == "[results/cpu](cpu/summary.md) (1111111, 2222222)",
          f"a summary names the runs' commits, not the tables' ({src})")
    with open(os.path.join(tmp, "cpu", "summary.md"), "w") as f:
        f.write("**Runs made at:** 1111111 (with uncommitted changes) (4 runs).\n")
    src = claims.shown(os.path.join(tmp, "cpu"))
    check(src.endswith("(1111111 (with uncommitted changes)) **not from a clean commit**"),
          f"runs from a changed tree are marked ({src})")
    with open(os.path.join(tmp, "claims", "softmax_s1", "stages.json"), "w") as f:
        json.dump({"train": {"seconds": 1, "finished": "2026-01-01T00:00:00Z",
                             "commit": "def5678"}}, f)
    src = claims.shown(os.path.join(tmp, "claims"))
    check(src == "results/claims (runs at def5678: 1)",
          f"before its tables, the runs' commits from stages.json ({src})")

    # The WikiText-2 proxy's rows: not attempted before the profile runs; then each rank against
    # softmax's bound, beside Table 3's WT2 figure read from results/paper/paper_ranks.csv.
    os.makedirs(os.path.join(tmp, "w"))
    os.symlink(os.path.join(ROOT, "results", "paper"), os.path.join(tmp, "w", "paper"))
    wt2 = os.path.join(tmp, "w", "wt2-proxy")
    rows_wt2 = claims.wt2_rows(wt2)
    check(len(rows_wt2) == 6 and all(r.verdict.startswith("not attempted") for r in rows_wt2) and
          "PROFILE=wt2-proxy" in rows_wt2[0].verdict, "wt2-proxy not run: six rows not attempted")
    for label, rank in (("softmax", 102), ("sigsoftmax", 90)):
        os.makedirs(os.path.join(wt2, f"{label}_s141"))
        with open(os.path.join(wt2, f"{label}_s141", "rank.json"), "w") as f:
            json.dump({"rank": rank, "bound": 102, "d": 100}, f)
    rows_wt2 = claims.wt2_rows(wt2)
    check([r.verdict for r in rows_wt2[:2]] == ["reproduced", "contradicted"] and
          rows_wt2[0].paper == "rank 402 = d + 2 (Table 3, WT2)" and
          rows_wt2[1].paper == "rank 5465 (Table 3, WT2)" and
          rows_wt2[2].verdict.startswith("not attempted (no sigmoid_s141/rank.json"),
          f"wt2-proxy ranks against the bound ({[r.verdict for r in rows_wt2]})")
    def sigsoftmax_row(rank_json):
        # the wt2-proxy sigsoftmax row read back from this rank.json
        with open(os.path.join(wt2, "sigsoftmax_s141", "rank.json"), "w") as f:
            json.dump(dict(rank_json, bound=102, d=100), f)
        return claims.wt2_rows(wt2)[1]

    # A sketch stopped at the verdict (--verdict-only): a certified lower bound, shown as such,
    # judged by rank_analysis's verdict and not by the count. The Gram certificate's open window:
    # printed as the window, the effect from its lowest count.
    for rank, lo, hi, T, M, shown in ((112, 112, 33278, 245569, 33278, "rank >= 112,"),
                                      (533, 527, 540, 82430, 10000, "rank 527..540,")):
        row = sigsoftmax_row({"rank": rank, "rank_min": lo, "rank_max": hi, "certified": False,
                              "T": T, "M": M, "verdict": "exceeds_bound"})
        check(row.verdict == "reproduced" and row.ours.startswith(shown) and
              row.effect == lo - 102, f"an open window: '{shown}', reproduced ({row})")
    check(sigsoftmax_row({"rank": 103, "verdict": "within_bound"}).verdict == "contradicted",
          "rank_analysis's verdict decides, not the count beside it")
    check(rows_wt2[5].verdict.startswith("not attempted (WT2's training split") and
          rows_wt2[5].paper == "softmax 64.7 vs sigsoftmax 64.2",
          "Table 2's ppl: the paper's figures, not testable from the proxy")
    check(rows_wt2[5].ours == "-", "no final.json: the proxy's ppl is not shown")
    for label, ppl in (("softmax", 302.78), ("sigsoftmax", 286.46)):
        with open(os.path.join(wt2, f"{label}_s141", "final.json"), "w") as f:
            json.dump({"schema": 2, "trainer": "wordlm", "event": "final", "head": label,
                       "seed": 141, "wordlm": {"test_ppl": ppl}}, f)
    row = claims.wt2_rows(wt2)[5]
    check(row.ours == "proxy, one seed, not comparable: softmax 302.8 vs sigsoftmax 286.5" and
          row.verdict.startswith("not attempted"),
          f"the proxy's ppl shown beside Table 2's, not judged ({row.ours})")

    # The d-sweep's row: the effect is minus the slope of the gap against log2(d).
    sweep = os.path.join(tmp, "dsweep")
    check(claims.sweep_row(sweep).verdict.startswith("not attempted (the dsweep profile has not "
                                                     "been run"), "no dsweep run: not attempted")
    os.makedirs(os.path.join(sweep, "softmax_emsize25_s141"))
    with open(os.path.join(sweep, "softmax_emsize25_s141", "final.json"), "w") as f:
        f.write("{}")
    check(claims.sweep_row(sweep).verdict.startswith("not attempted (the dsweep profile is partly "
                                                     "run: 1 runs finished"),
          "a partly run dsweep: not attempted, the finished runs counted")
    os.makedirs(sweep, exist_ok=True)
    for slope, ci, p, want in ((-3.0, [-4.0, -2.0], 0.001, "reproduced"),
                               (2.0, [1.0, 3.0], 0.01, "contradicted"),
                               (-0.5, [-2.0, 1.0], 0.4, "not significant")):
        with open(os.path.join(sweep, "sweep_findings.json"), "w") as f:
            json.dump({"key": "emsize", "finding": "x", "trend": {"n": 12, "slope": slope,
                       "ci": ci, "p": p}, "values": [{"emsize": 25, "gap": {"mean": 9.0}}]}, f)
        row = claims.sweep_row(sweep)
        check(row.effect == -slope and row.ci == (-ci[1], -ci[0]) and row.verdict == want,
              f"gap slope {slope} with CI {ci}, p {p}: effect {row.effect}, '{row.verdict}'")

    # The converged fits' rows: softmax's floor and each head against softmax, from findings.json.
    fit = os.path.join(tmp, "fit")
    check(all(r.verdict.startswith("not attempted") for r in claims.fit_rows(fit)),
          "no converged fits: not attempted")
    os.makedirs(fit)
    with open(os.path.join(fit, "findings.json"), "w") as f:
        json.dump({"softmax_above_zero": {"ds": [10, 20], "all": True}, "versus_softmax": {
            "sigsoftmax": {"per_d": {"10": "closer", "20": "closer"}, "closer_at_every_d": True,
                           "worse_at_every_d": False},
            "mos:K=2": {"per_d": {"10": "closer", "20": "tie"}, "closer_at_every_d": False,
                        "worse_at_every_d": False}}}, f)
    got = [(r.claim.split(" ")[0], r.verdict) for r in claims.fit_rows(fit)]
    check(got == [("softmax's", "reproduced"), ("sigsoftmax", "reproduced"),
                  ("mos:K=2", "not significant")],
          f"fit rows: the floor held, closer at every d, a tie at one d ({got})")

    # Dynamic evaluation: static vs dynamic test ppl of the same weights, paired by seed.
    dyn = os.path.join(tmp, "dyneval")
    for seed, (st, dy) in zip((1, 2, 3), ((160.0, 150.0), (162.0, 151.5), (161.0, 149.0))):
        os.makedirs(os.path.join(dyn, f"softmax_s{seed}"))
        with open(os.path.join(dyn, f"softmax_s{seed}", "dyneval.json"), "w") as f:
            json.dump({"static": {"test_ppl": st}, "dynamic": {"test_ppl": dy}}, f)
    os.makedirs(os.path.join(tmp, "paper"))
    with open(os.path.join(tmp, "paper", "paper_results.csv"), "w") as f:
        f.write("ptb,softmax,finetune,test,57.0,0.6\nptb,softmax,dyneval,test,50.5,0.5\n")
    soft, sig, after = claims.dyneval_rows(dyn, lambda h: claims.paper_figure(tmp, h))
    mean, ci, p, _ = claims.paired([160.0, 162.0, 161.0], [150.0, 151.5, 149.0])
    check(soft.n == 3 and abs(soft.effect - mean) < 1e-12 and soft.verdict == claims.verdict(ci, p)
          and soft.paper == "57.0 -> 50.5",
          f"dyneval rows: static - dynamic paired by seed ({soft.effect:.3g}, p {soft.p:.2g}, "
          f"'{soft.verdict}'), the paper's before -> after")
    check(sig.verdict.startswith("not attempted (no dyneval runs") and
          after.verdict.startswith("not attempted (no paired"),
          f"a head without dyneval runs: not attempted ({sig.verdict}; {after.verdict})")
    # One sigsoftmax seed: shown, no test; two: sigsoftmax against softmax after dyneval.
    for seed, (st, dy) in zip((1, 2), ((150.0, 141.0), (151.0, 140.5))):
        os.makedirs(os.path.join(dyn, f"sigsoftmax_s{seed}"))
        with open(os.path.join(dyn, f"sigsoftmax_s{seed}", "dyneval.json"), "w") as f:
            json.dump({"static": {"test_ppl": st}, "dynamic": {"test_ppl": dy}}, f)
        _, sig, after = claims.dyneval_rows(dyn, lambda h: claims.paper_figure(tmp, h))
        if seed == 1:
            check(sig.n is None and sig.p is None and "partly run: 1 seed" in sig.verdict and
                  "static 150, dynamic 141" in sig.ours and "partly run: 1 seed" in after.verdict,
                  f"one seed: its numbers shown, no test ({sig.ours}; {sig.verdict})")
    mean, ci, p, _ = claims.paired([150.0, 151.5], [141.0, 140.5])
    check(after.n == 2 and abs(after.effect - mean) < 1e-12 and after.p == p and
          after.verdict == claims.verdict(ci, p) and "softmax 150.8, sigsoftmax 140.8" in after.ours,
          f"after dyneval: softmax - sigsoftmax paired over the 2 common seeds ({after.effect:.3g},"
          f" p {after.p:.2g}, '{after.verdict}'; {after.ours})")

# The committed table.
with open(os.path.join(ROOT, "results", "claims.md")) as f:
    committed = f.read()
rows = [line for line in committed.splitlines() if line.startswith("| ") and
        not line.startswith("| claim") and not line.startswith("|---")]
check(len(rows) >= 12, f"results/claims.md has a row per claim ({len(rows)})")
for line in rows:
    cells = [c.strip() for c in line.strip("|").split("|")]
    claim, effect, p, verdict = cells[0], cells[4], cells[5], cells[7]
    if verdict.startswith("not attempted"):
        check(p == "-", f"'{claim}': not attempted and no p")
        continue
    if "converged fit" in claim:  # fit_rows: from results/fit/findings.json
        expect = [r.verdict for r in claims.fit_rows(os.path.join(ROOT, "results", "fit"))
                  if r.claim == claim]
        check(expect == [verdict], f"'{claim}': '{verdict}' is fit_rows' verdict ({expect})")
        continue
    if p == "-":  # a rank claim: the effect is rank - bound
        above = "exceeds" in claim
        ok = float(effect) > 0 if above else float(effect) <= 0
        check(verdict == ("reproduced" if ok else "contradicted"),
              f"'{claim}': rank - bound = {effect} gives '{verdict}'")
        continue
    lo, hi = (float(x) for x in effect.split("[")[1].rstrip("]").split(","))
    expect = claims.verdict((lo, hi), float(p), tie="tie" in claim)
    check(verdict == expect, f"'{claim}': p = {p}, CI [{lo}, {hi}] gives '{expect}' ({verdict})")
now = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "pipeline", "claims.py"),
                      "--results", os.path.join(ROOT, "results")], capture_output=True, text=True)
check(now.returncode == 0 and now.stdout == committed,
      "results/claims.md is what pipeline/claims.py writes from the committed results "
      "(else: make claims)")
r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "pipeline", "readme_results.py"),
                    "--claims", "--check"], capture_output=True, text=True)
check(r.returncode == 0, f"README.md's claims block equals results/claims.md ({r.stderr.strip()})")

# power.py: its n against a Monte-Carlo estimate of the paired t-test's power.
effect, n = 1.2, power.seeds_needed(1.2, 0.05, 0.8)
sims = rng.normal(effect, 1.0, (20000, n))
t = sims.mean(1) / (sims.std(1, ddof=1) / math.sqrt(n))
mc = float(np.mean(np.abs(t) > stats.t.ppf(0.975, n - 1)))
mc_less = None
if n > 2:
    sims = rng.normal(effect, 1.0, (20000, n - 1))
    t = sims.mean(1) / (sims.std(1, ddof=1) / math.sqrt(n - 1))
    mc_less = float(np.mean(np.abs(t) > stats.t.ppf(0.975, n - 2)))
# 20000 draws: the estimate's sd is sqrt(0.8 * 0.2 / 20000) = 0.003; 0.01 is three of them.
check(mc > 0.8 - 0.01 and (mc_less is None or mc_less < 0.8 + 0.01),
      f"seeds_needed(d = 1.2) = {n}: Monte-Carlo power {mc:.3f} at n, {mc_less} at n - 1")
raise SystemExit(finish())
