#!/usr/bin/python3
"""A profile with a [sweep] (pipeline/profiles/dsweep.toml): one run per head, seed and swept
value, each with its own directory and `--emsize v` on its command line, the full-test rank of
the first seed of each (head, value) only; a bad sweep is refused naming the field. The sweep
report (pipeline/sweep_summary.py) on made-up runs: every mean, interval, paired gap and the slope
of the gap against log2(d) equal an independent computation (numpy, the closed-form OLS standard
error), and the finding follows from the slope's interval."""

import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
from scipy import stats

from checks import ROOT, build_dir, check, finish, use_build

use_build()
import repro_profile  # noqa: E402
import sweep_summary  # noqa: E402

PROFILE = os.path.join(ROOT, "pipeline", "profiles", "dsweep.toml")
os.chdir(ROOT)  # the profile names its trainer config relative to the checkout

p = repro_profile.load_profile(PROFILE)
runs = p.runs()
check(len(runs) == 2 * 4 * 3 and len({r.dir for r in runs}) == len(runs),
      f"dsweep: 2 heads x 4 values x 3 seeds = 24 runs in distinct directories ({len(runs)})")
check(runs[0].dir == "results/dsweep/softmax_emsize25_s141" and
      runs[0].label == "softmax emsize = 25 seed 141",
      f"a run's directory and label name its value ({runs[0].dir}, {runs[0].label})")
r = subprocess.run(["/usr/bin/python3", "pipeline/reproduce.py", "--profile", "dsweep", "--plan",
                    "--build", build_dir()], capture_output=True, text=True)
commands = [l for l in r.stdout.splitlines() if "train_wordlm" in l]
check(r.returncode == 0 and len(commands) == 24 and
      all(f"--emsize {v} " in c or c.endswith(f"--emsize {v} --until dump")
          for c, v in zip(commands, [run.setting["emsize"] for run in runs])),
      f"every command sets its run's emsize ({r.returncode}: {r.stderr[-200:]})")
analysed = [(x.head, x.setting["emsize"], x.seed) for x in runs if p.analysed(x)]
check(sorted(analysed) == sorted((h, v, 141) for h in p.heads for v in (25, 50, 100, 200)),
      f"the full-test rank of the first seed of each head and value ({len(analysed)} runs)")

with tempfile.TemporaryDirectory() as tmp:
    def bad(extra: str, field: str) -> None:
        path = os.path.join(tmp, "bad.toml")
        text = open(PROFILE).read().split("[sweep]")[0] + extra + "\n[analysis]\nseeds = 1\n"
        with open(path, "w") as f:
            f.write(text)
        try:
            q = repro_profile.load_profile(path)
            import head_facts
            repro_profile.check_runs(q, head_facts.registry())
            check(False, f"a bad sweep ({extra!r}) is refused")
        except repro_profile.ProfileError as e:
            check(f"field '{field}'" in str(e), f"a bad sweep is refused naming {field}: {e}")

    bad('[sweep]\nkey = "emsize"\nvalues = [25]', "sweep.values")
    bad('[sweep]\nkey = "seed"\nvalues = [1, 2]', "sweep.key")
    bad('[sweep]\nkey = "no_such_key"\nvalues = [1, 2]', "sweep.key")

    # The report on made-up runs: softmax pays 3 ppl per halving of d more than sigsoftmax.
    rng = np.random.default_rng(7)
    p.out = os.path.join(tmp, "out")
    runs = p.runs()
    ppl = {}
    for x in p.runs():
        v = x.setting["emsize"]
        base = 150 + 20 * (math.log2(200) - math.log2(v))
        gap = 4 + 3 * (math.log2(200) - math.log2(v))
        value = base + (gap if x.head == "softmax" else 0) + rng.normal(0, 1.5)
        ppl[(x.head, v, x.seed)] = value
        x.dir = os.path.join(p.out, os.path.basename(x.dir))
        os.makedirs(x.dir)
        with open(os.path.join(x.dir, "final.json"), "w") as f:
            json.dump({"schema": 2, "trainer": "wordlm", "head": x.head, "seed": x.seed,
                       "wordlm": {"test_ppl": value}}, f)
        if p.analysed(x):
            with open(os.path.join(x.dir, "rank.json"), "w") as f:
                rank = v + 2 if x.head == "softmax" else 5 * v
                # sigsoftmax's ranks as the Gram certificate leaves them: an open window
                window = {} if x.head == "softmax" else {"rank_min": rank - 3, "rank_max": rank + 4,
                                                         "certified": False, "M": 10000, "T": 82430}
                json.dump(dict(window, rank=rank, bound=v + 2, verdict="within_bound"), f)
    p.runs = lambda: runs  # the report reads these directories
    path = sweep_summary.write_summary(p, runs, {})
    text = open(path).read()
    found = json.load(open(os.path.join(p.out, "sweep_findings.json")))
    check(os.path.getsize(os.path.join(p.out, "sweep.png")) > 5000, "sweep.png drawn")

    ok = True
    points = []
    for row in found["values"]:
        v = row["emsize"]
        for h in p.heads:
            xs = np.array([ppl[(h, v, s)] for s in p.seeds])
            half = stats.t.ppf(0.975, 2) * xs.std(ddof=1) / math.sqrt(3)
            c = row["heads"][h]
            ok &= math.isclose(c["ppl"], xs.mean(), rel_tol=1e-12) and \
                math.isclose(c["ci"][0], xs.mean() - half, rel_tol=1e-9)
        d = np.array([ppl[("softmax", v, s)] - ppl[("sigsoftmax", v, s)] for s in p.seeds])
        ok &= math.isclose(row["gap"]["mean"], d.mean(), rel_tol=1e-12) and \
            math.isclose(row["gap"]["p"], stats.ttest_1samp(d, 0).pvalue, rel_tol=1e-9)
        ok &= row["heads"]["softmax"]["rank"] == v + 2
        points += [(math.log2(v), g) for g in d]
    check(ok, "per d: both heads' mean and 95% t interval, the paired gap and its p equal numpy's")
    windows = [row["heads"]["sigsoftmax"] for row in found["values"]]
    check(all(c["rank"] is None and c["rank_window"] == [5 * row["emsize"] - 3,
                                                         5 * row["emsize"] + 4]
              for c, row in zip(windows, found["values"])) and
          f"| {5 * 200 - 3}..{5 * 200 + 4} (bound 202) |" in text,
          "an open certificate window is reported as lo..hi, never its midpoint as the rank")
    x = np.array([a for a, _ in points])
    y = np.array([b for _, b in points])
    slope, icept = np.polyfit(x, y, 1)
    resid = y - (icept + slope * x)
    se = math.sqrt(resid @ resid / (len(x) - 2) / ((x - x.mean()) @ (x - x.mean())))
    half = stats.t.ppf(0.975, len(x) - 2) * se
    t = found["trend"]
    check(math.isclose(t["slope"], slope, rel_tol=1e-9) and
          math.isclose(t["ci"][0], slope - half, rel_tol=1e-9) and t["n"] == 12,
          f"the gap's slope against log2(d) and its 95% CI equal the closed form "
          f"({t['slope']:.3f} [{t['ci'][0]:.3f}, {t['ci'][1]:.3f}] vs {slope:.3f} +- {half:.3f})")
    check(t["ci"][1] < 0 and found["finding"] == "the gap grows as emsize shrinks" and
          found["finding"] in text,
          f"a slope whose CI is below 0 gives 'the gap grows as emsize shrinks' ({found['finding']})")
    # The cross-entropy gap: the same fit over ln ppl(softmax) - ln ppl(sigsoftmax).
    lx, ly = [], []
    for row in found["values"]:
        v = row["emsize"]
        ld = np.array([math.log(ppl[("softmax", v, s)]) - math.log(ppl[("sigsoftmax", v, s)])
                       for s in p.seeds])
        ok &= math.isclose(row["log_gap"]["mean"], ld.mean(), rel_tol=1e-12)
        lx += [math.log2(v)] * len(ld)
        ly += list(ld)
    lslope = np.polyfit(np.array(lx), np.array(ly), 1)[0]
    lt = found["log_trend"]
    check(ok and math.isclose(lt["slope"], lslope, rel_tol=1e-9) and lt["n"] == 12 and
          found["log_finding"] == sweep_summary.finding(lt, "emsize") and
          "The same in cross-entropy" in text,
          f"the cross-entropy gap per d and its slope against log2(d) equal numpy's "
          f"({lt['slope']:.4f} vs {lslope:.4f}; {found['log_finding']})")
    for ci, want in (([-2.0, -0.5], "the gap grows as emsize shrinks"),
                     ([0.5, 2.0], "the gap shrinks as emsize shrinks"),
                     ([-1.0, 1.0], "no trend detected")):
        check(sweep_summary.finding({"ci": ci}, "emsize") == want, f"CI {ci}: {want}")
    check(p.prediction.startswith("If the bottleneck costs perplexity") and
          "Prediction, written before the runs" in text, "the summary prints the profile's "
          "prediction")

sys.exit(finish())
