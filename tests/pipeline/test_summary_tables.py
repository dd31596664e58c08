#!/usr/bin/python3
"""pipeline/summary.py on fabricated run directories (no training): mean ± std over seeds, the
paired t-test checked against its closed form, the paper's figures beside ours, missing stages
shown as '-', a profile with one seed per head printing no t-test, the MoS vs MoSS test, and the
findings (the paper's claims, each yes or NO) computed from fabricated ranks and perplexities.

The closed form: d_i = softmax_i - sigsoftmax_i, t = mean(d) / (stdev(d) / sqrt(n)) (sample
stdev); compared to the table's t to the 3 decimals it prints; the 95% interval mean -+ q sd /
sqrt(n) with q the 0.975 quantile found by bisection on that survival function. p is checked against the
Student-t survival function computed here by numerical integration of the density (Simpson,
20000 intervals; agreement to 1e-4 absolute is far above its error).
"""

import json
import math
import os
import statistics
import sys
import tempfile

from checks import check, finish, use_build

use_build()
import summary  # noqa: E402
from tiny_profile import tiny_profile  # noqa: E402


def t_sf(t, df):
    """P(T > t) for Student's t with df degrees of freedom, by Simpson's rule on [t, 60]."""
    c = math.gamma((df + 1) / 2) / (math.sqrt(df * math.pi) * math.gamma(df / 2))
    f = lambda x: c * (1 + x * x / df) ** (-(df + 1) / 2)  # noqa: E731
    a, b, n = t, 60.0, 20000
    h = (b - a) / n
    s = f(a) + f(b) + sum((4 if i % 2 else 2) * f(a + i * h) for i in range(1, n))
    return s * h / 3


def t_quantile(tail, df):
    """The t with P(T > t) = tail, by bisection on t_sf."""
    lo, hi = 0.0, 50.0
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_sf(mid, df) > tail else (lo, mid)
    return (lo + hi) / 2


def fabricate(out, head, seed, test_ppl, valid_ppl, train_test=None, speeds=None):
    d = os.path.join(out, f"{head}_s{seed}")
    os.makedirs(d)
    if speeds is not None:  # metrics.jsonl: progress lines of the main phase, then noise to skip
        with open(f"{d}/metrics.jsonl", "w") as f:
            for v in speeds:
                f.write(json.dumps({"event": "train", "phase": "main", "tokens_per_s": v}) + "\n")
            f.write(json.dumps({"event": "valid", "phase": "main", "seconds": 1.0}) + "\n")
            f.write(json.dumps({"event": "train", "phase": "finetune",
                                "tokens_per_s": 2 * speeds[0]}) + "\n")
            f.write('{"event": "train", "phase": "ma')  # a line cut by an interrupted write
    json.dump({"valid_ppl": valid_ppl, "test_ppl": test_ppl}, open(f"{d}/final.json", "w"))
    if train_test is not None:
        json.dump({"static": {"valid_ppl": valid_ppl + 1, "test_ppl": train_test}},
                  open(f"{d}/score.json", "w"))
    json.dump({"train": {"seconds": 61.0}, "analyse": {"seconds": 5.0}},
              open(f"{d}/stages.json", "w"))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        prof = os.path.join(tmp, "p.toml")
        out = os.path.join(tmp, "out")
        p = tiny_profile(prof, out, ["softmax", "sigsoftmax", "taylor"], [1, 2, 3, 4],
                         seeds_by_head={"taylor": [1]})
        soft = [100.0, 104.0, 98.0, 101.5]
        sig = [97.0, 103.5, 96.0, 99.0]
        # tokens/s of the progress lines: one slow interval per run that the median must ignore
        soft_speed = [[1000.0, 1010.0, 990.0, 100.0], [900.0, 905.0, 50.0],
                      [1200.0, 1190.0, 1210.0], [800.0, 790.0, 810.0, 10.0]]
        sig_speed = [[700.0, 720.0, 20.0], [630.0, 640.0, 620.0], [840.0, 850.0, 860.0, 1.0],
                     [600.0, 560.0, 580.0]]
        for i, seed in enumerate(p.seeds):
            fabricate(out, "softmax", seed, soft[i], soft[i] + 5, train_test=soft[i] + 10,
                      speeds=soft_speed[i])
            fabricate(out, "sigsoftmax", seed, sig[i], sig[i] + 5, speeds=sig_speed[i])
        fabricate(out, "taylor", 1, 120.0, 125.0)
        text = open(summary.write_summary(p, p.runs(), {"tables": {"seconds": 0.0}})).read()
        print(text)

        m, s = statistics.mean(soft), statistics.stdev(soft)
        check(f"| softmax | ours | 4 | {m + 6:.1f} ± {s:.1f} | {m + 10:.1f} ± {s:.1f} | "
              f"{m + 5:.1f} ± {s:.1f} | {m:.1f} ± {s:.1f} | - | - |" in text,
              "softmax row: mean ± sample std per stage, '-' where no stage ran")
        check("| sigsoftmax | ours | 4 | - | - |" in text, "sigsoftmax without score: '-'")
        check("| taylor | ours | 1 | - | - | 125.0 | 120.0 |" in text,
              "one seed: the value alone, no ± ")
        check("| softmax | paper | 10 | 61.1 ± 0.4 | 58.8 ± 0.4 | 59.2 ± 0.4 | 57.0 ± 0.6 |"
              in text, "the paper's PTB softmax figures beside ours")

        diffs = [a - b for a, b in zip(soft, sig)]
        t = statistics.mean(diffs) / (statistics.stdev(diffs) / math.sqrt(len(diffs)))
        p_two = 2 * t_sf(abs(t), len(diffs) - 1)
        rows = [line for line in text.splitlines() if line.startswith("| finetune test | 4 |")]
        check(len(rows) == 1, "one t-test row for finetune test over 4 paired seeds")
        if rows:
            cells = [c.strip() for c in rows[0].strip("|").split("|")]
            check(cells[2] == f"{statistics.mean(diffs):+.2f}", f"mean difference {cells[2]}")
            check(abs(float(cells[4]) - t) < 6e-4, f"t {cells[4]} = closed form {t:.4f}")
            check(abs(float(cells[5]) - p_two) < 1e-4,
                  f"p {cells[5]} = Student-t two-sided p {p_two:.5f}")
            # the 95% interval: mean +- q sd / sqrt(n), q the 0.975 quantile found here by
            # bisection on t_sf; printed to 2 decimals, so agreement to 0.006
            q = t_quantile(0.025, len(diffs) - 1)
            half = q * statistics.stdev(diffs) / math.sqrt(len(diffs))
            lo, hi = (float(x) for x in cells[3].strip("[]").split(","))
            m_d = statistics.mean(diffs)
            check(abs(lo - (m_d - half)) < 6e-3 and abs(hi - (m_d + half)) < 6e-3,
                  f"95% CI {cells[3]} = mean -+ t quantile {q:.4f} x sd / sqrt(n)")
        check(not any(line.startswith("| train ") for line in text.splitlines()),
              "no t-test row where sigsoftmax has no values")
        check("**All stages: 9m54s**" in text, "wall time sums the recorded stages (9 x 66 s)")

        # Training speed: each run's median tokens/s, the ratio to softmax paired by seed and the
        # median of those ratios, computed here from the fabricated progress lines.
        med = statistics.median
        ratios = [med(b) / med(a) for a, b in zip(soft_speed, sig_speed)]
        row = (f"| sigsoftmax | 4 | {statistics.mean(med(b) for b in sig_speed):.0f} | "
               f"{statistics.mean(2 * b[0] for b in sig_speed):.0f} | **{med(ratios):.2f}x** | "
               + ", ".join(f"{s}: {x:.2f}x" for s, x in zip(p.seeds, ratios)) + " |")
        check(row in text, f"training speed row '{row}'")
        check("| taylor | 1 | - | - | - | - |" in text,
              "a head without progress lines: '-' in the speed table")

        # One seed per head: no t-test.
        out1 = os.path.join(tmp, "one")
        p1 = tiny_profile(prof, out1, ["softmax", "sigsoftmax"], [1])
        fabricate(out1, "softmax", 1, 100.0, 105.0)
        fabricate(out1, "sigsoftmax", 1, 99.0, 104.0)
        text1 = open(summary.write_summary(p1, p1.runs(), {})).read()
        check("not computed (needs >= 2 seeds of both)" in text1, "one seed: t-test not computed")
        # MoS vs MoSS: the paper's second test, by head name whatever K.
        out2 = os.path.join(tmp, "mix")
        p2 = tiny_profile(prof, out2, ["mos:K=2", "moss:K=2"], [1, 2, 3])
        mos, moss = [150.0, 149.0, 152.5], [148.0, 149.5, 150.0]
        for i, seed in enumerate(p2.seeds):
            fabricate(out2, "mos", seed, mos[i], mos[i] + 5)
            fabricate(out2, "moss", seed, moss[i], moss[i] + 5)
        text2 = open(summary.write_summary(p2, p2.runs(), {})).read()
        diffs = [a - b for a, b in zip(mos, moss)]
        t2 = statistics.mean(diffs) / (statistics.stdev(diffs) / math.sqrt(len(diffs)))
        block = text2.split("Paired t-test, mos:K=2 vs moss:K=2", 1)
        rows = [line for line in block[-1].splitlines() if line.startswith("| finetune test | 3 |")]
        check(len(block) == 2 and len(rows) == 1 and
              abs(float(rows[0].strip("|").split("|")[4]) - t2) < 6e-4,
              f"MoS vs MoSS: a t-test row over 3 seeds, t = closed form {t2:.4f}")
        check("Paired t-test softmax vs sigsoftmax: not computed" not in text2,
              "no softmax/sigsoftmax line in a profile without them")
        # Findings: each claim computed from the ranks and perplexities, 'yes' or '**NO**'.
        out3 = os.path.join(tmp, "findings")
        p3 = tiny_profile(prof, out3,
                          ["softmax", "sigsoftmax", "sigmoid", "relu", "mos:K=2", "moss:K=2"], [1])
        ranks = {"softmax": 102, "sigsoftmax": 500, "sigmoid": 300, "relu": 7, "mos": 450,
                 "moss": 900}
        ppls = {"softmax": 150.0, "sigsoftmax": 145.0, "sigmoid": 160.0, "relu": 9e4,
                "mos": 140.0, "moss": 141.0}
        for head, k in ranks.items():
            fabricate(out3, head, 1, ppls[head], ppls[head] + 5)
            json.dump({"rank": k, "bound": 102, "M": 10, "T": 20, "d": 100, "rank_numpy": 1,
                       "verdict": "x", "theorem2_bounded": head == "softmax", "tol": 1.0,
                       "eps": 1e-7, "spectral_gap": 1.0, "method": "gram"},
                      open(os.path.join(out3, f"{head}_s1", "rank.json"), "w"))
        text3 = open(summary.write_summary(p3, p3.runs(), {})).read()
        lines = [x for x in text3.splitlines() if x.startswith("- ")]
        expect = {"softmax's rank equals its bound d + 2 = 102: yes (102)": True,
                  "relu exceeds d + 2 = 102: **NO** (7)": True,
                  "mos:K=2 ranks above every single head but g:ReLU (the paper's order): **NO** "
                  "(450 vs sigsoftmax 500)": True,
                  "moss:K=2 ranks above every single head but g:ReLU (the paper's order): yes "
                  "(900 vs sigsoftmax 500)": True,
                  "the paper's order MoSS >= MoS > sigsoftmax > g:sigmoid > softmax (g:ReLU left "
                  "out): **NO**": True,
                  "test perplexity sigsoftmax <= softmax (the paper's direction): yes": True,
                  "test perplexity moss <= mos (the paper's direction): **NO**": True}
        for want in expect:
            check(any(x[2:].startswith(want) for x in lines), f"findings: '{want}'")
        # The spectra plot: linked only where the plot stage drew it; otherwise the heads whose
        # logprobs.rank.h5 is missing are named (here all but relu, which has one).
        open(os.path.join(out3, "relu_s1", "logprobs.rank.h5"), "w").close()
        text3 = open(summary.write_summary(p3, p3.runs(), {})).read()
        check("](singular_values.png)" not in text3 and
              "not drawn: no spectrum file (logprobs.rank.h5) in this checkout for softmax, "
              "sigsoftmax, sigmoid, mos:K=2, moss:K=2;" in text3,
              "no plot drawn: no link to it, and the heads without a spectrum named")
        open(os.path.join(out3, "singular_values.png"), "w").close()
        text3 = open(summary.write_summary(p3, p3.runs(), {})).read()
        check("![singular values](singular_values.png)" in text3 and "not drawn" not in text3,
              "a drawn plot is linked")

        # A sketch stopped at its verdict (wt2-proxy): ranks are certified lower bounds (the
        # window's top is min(M, T)). The verdict decides "exceeds", the table shows ">= n", and
        # the orders are undecided.
        out4 = os.path.join(tmp, "lower")
        p4 = tiny_profile(prof, out4, ["softmax", "sigsoftmax", "mos:K=2"], [1])
        for head, k, verdict in (("softmax", 102, "within_bound"),
                                 ("sigsoftmax", 112, "exceeds_bound"), ("mos", 112, "x")):
            fabricate(out4, head, 1, ppls[head], ppls[head] + 5)
            lower = head != "softmax"
            json.dump({"rank": k, "rank_min": k, "rank_max": 33278 if lower else k,
                       "certified": not lower, "bound": 102, "M": 33278, "T": 245569, "d": 100,
                       "rank_numpy": 1, "verdict": verdict,
                       "theorem2_bounded": head == "softmax", "tol": 1.0, "eps": 1e-7,
                       "spectral_gap": 1.0, "method": "sketch"},
                      open(os.path.join(out4, f"{head}_s1", "rank.json"), "w"))
        text4 = open(summary.write_summary(p4, p4.runs(), {})).read()
        lines4 = [x[2:] for x in text4.splitlines() if x.startswith("- ")]
        for want in ("softmax's rank equals its bound d + 2 = 102: yes (102)",
                     "sigsoftmax exceeds d + 2 = 102: yes (rank >= 112)",
                     "mos:K=2 exceeds d + 2 = 102: **NO** (rank >= 112)",
                     "mos:K=2 ranks above every single head but g:ReLU (the paper's order): "
                     "undecided (rank >= 112 vs sigsoftmax rank >= 112)",
                     "the paper's order MoSS >= MoS > sigsoftmax > g:sigmoid > softmax (g:ReLU "
                     "left out): undecided"):
            check(any(x.startswith(want) for x in lines4), f"lower bounds: '{want}'")
        check("| sigsoftmax | 1 | 33278 | 245569 | 100 | 102 | **>= 112** |" in text4,
              "the rank table shows a lower bound as '>= 112'")

        # The Gram certificate's open windows (the cpu profile: 82430 x 10000): an order holds
        # when every count in the windows agrees, fails when none does, and is undecided where
        # two windows overlap; the table prints the window.
        for case, mos_window, want in (
                ("apart", (641, 659), "yes"), ("overlap", (530, 545), "undecided"),
                ("below", (400, 420), "**NO**")):
            out5 = os.path.join(tmp, "window_" + case)
            p5 = tiny_profile(prof, out5, ["softmax", "sigsoftmax", "mos:K=2", "moss:K=2"], [1])
            for head, (lo, hi) in (("softmax", (102, 102)), ("sigsoftmax", (527, 540)),
                                   ("mos", mos_window), ("moss", (1288, 1323))):
                fabricate(out5, head, 1, ppls[head], ppls[head] + 5)
                json.dump({"rank": (lo + hi) // 2, "rank_min": lo, "rank_max": hi,
                           "certified": lo == hi, "bound": 102, "M": 10000, "T": 82430,
                           "d": 100, "rank_numpy": 1, "verdict": "within_bound"
                           if head == "softmax" else "exceeds_bound",
                           "theorem2_bounded": head == "softmax", "tol": 1.0, "eps": 1e-7,
                           "spectral_gap": 1.0, "method": "gram"},
                          open(os.path.join(out5, f"{head}_s1", "rank.json"), "w"))
            text5 = open(summary.write_summary(p5, p5.runs(), {})).read()
            lines5 = [x[2:] for x in text5.splitlines() if x.startswith("- ")]
            mos_text = f"rank {mos_window[0]}..{mos_window[1]}"
            for w5 in (f"mos:K=2 ranks above every single head but g:ReLU (the paper's order): "
                       f"{want} ({mos_text} vs sigsoftmax rank 527..540)",
                       "moss:K=2 ranks above every single head but g:ReLU (the paper's order): "
                       "yes (rank 1288..1323 vs sigsoftmax rank 527..540)",
                       "the paper's order MoSS >= MoS > sigsoftmax > g:sigmoid > softmax "
                       f"(g:ReLU left out): {want} (moss:K=2 rank 1288..1323 / mos:K=2 "
                       f"{mos_text} / sigsoftmax rank 527..540 / softmax 102)"):
                check(w5 in lines5, f"windows {case}: '{w5}'")
            check("| sigsoftmax | 1 | 10000 | 82430 | 100 | 102 | **527..540** |" in text5,
                  f"windows {case}: the rank table prints the window '527..540'")

        # Dynamic evaluation: each run's gain against the same weights read statically
        # (dyneval.json's "static"), the profile's predicted gain, sigsoftmax after it.
        for case, dyn, want in (
                ("holds", {("softmax", 1): 90.0, ("softmax", 2): 92.0,
                           ("sigsoftmax", 1): 85.0, ("sigsoftmax", 2): 88.0},
                 ("yes", "yes", "yes")),
                ("small", {("softmax", 1): 99.0, ("softmax", 2): 92.0,
                           ("sigsoftmax", 1): 85.0, ("sigsoftmax", 2): 101.0},
                 ("yes", "**NO**", "**NO**"))):
            out6 = os.path.join(tmp, "dyneval_" + case)
            p6 = tiny_profile(prof, out6, ["softmax", "sigsoftmax"], [1, 2])
            p6.dyneval["predicted_gain"] = 0.05
            for (head, seed), after in dyn.items():
                fabricate(out6, head, seed, 100.0, 105.0)
                json.dump({"static": {"test_ppl": 100.0 + seed, "valid_ppl": 105.0},
                           "dynamic": {"test_ppl": after, "valid_ppl": after + 5}},
                          open(os.path.join(out6, f"{head}_s{seed}", "dyneval.json"), "w"))
            lines6 = [x[2:] for x in open(summary.write_summary(p6, p6.runs(), {})).read()
                      .splitlines() if x.startswith("- ")]
            lowered, gain, below = want
            smallest = min(dyn, key=lambda k: 1 - dyn[k] / (100.0 + k[1]))
            for w6 in (f"dynamic evaluation lowers every run's test perplexity: {lowered} "
                       f"(softmax seed 1 101.0 -> {dyn[('softmax', 1)]:.1f} "
                       f"({100 * (dyn[('softmax', 1)] / 101.0 - 1):+.2f}%);",
                       f"every run's relative test gain is at least 5% (the profile's "
                       f"prediction): {gain} (smallest: {smallest[0]} seed {smallest[1]}, "
                       f"{100 * (1 - dyn[smallest] / (100.0 + smallest[1])):.2f}%)",
                       f"sigsoftmax stays below softmax after dynamic evaluation in every seed: "
                       f"{below} (seed 1: {dyn[('sigsoftmax', 1)]:.1f} vs "
                       f"{dyn[('softmax', 1)]:.1f}; seed 2: {dyn[('sigsoftmax', 2)]:.1f} vs "
                       f"{dyn[('softmax', 2)]:.1f})"):
                check(any(x.startswith(w6) for x in lines6), f"dyneval {case}: '{w6}'")

    return finish()


if __name__ == "__main__":
    sys.exit(main())
