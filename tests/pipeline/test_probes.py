#!/usr/bin/python3
"""The probes of bench/ that the claims table and docs cite (char_tie_probe.py, taylor_probe.py)
compute their intervals with the claims table's rule and say where they were made.

- taylor_probe.paired and char_tie_probe.interval against scipy's paired t-test and a t interval
  computed here (to 1e-12: the same float64 arithmetic in another order);
- probe_cli.train_or_resume against a stand-in trainer that refuses to start over a checkpoint
  (as the trainers do): a missing run is started, an interrupted one (checkpoint.pt, no
  final.json) gets --resume, a finished one is not run again;
- char_tie_probe's report names the commit it ran at and the commits of the runs it read;
- where results/char holds the char profile's runs, the probe over them reproduces the table of
  the committed results/bench/char_tie_probe.md line for line (the report is what its code
  writes); it trains nothing then, so it needs no trainer of the build (argument 1, optional).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
from scipy import stats

from checks import ROOT, check, finish

sys.path.insert(0, os.path.join(ROOT, "bench"))
import char_tie_probe  # noqa: E402
import probe_cli  # noqa: E402
import taylor_probe  # noqa: E402

a, b = [1.752, 1.749, 1.755, 1.760], [1.739, 1.740, 1.741, 1.744]
d = np.array(a) - np.array(b)
half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
want = (d.mean(), d.mean() - half, d.mean() + half, stats.ttest_rel(a, b).pvalue)
got = char_tie_probe.interval(a, b)
check(np.allclose(got, want, rtol=0, atol=1e-12),
      f"char_tie_probe.interval = mean, 95% t interval and paired p of softmax - sigsoftmax: {got}")
got = taylor_probe.paired(b, a)  # mean of a - b
check(np.allclose(got, want, rtol=0, atol=1e-12), f"taylor_probe.paired(a, b) is of b - a: {got}")

with tempfile.TemporaryDirectory() as tmp:
    trainer, log = os.path.join(tmp, "trainer"), os.path.join(tmp, "calls")
    with open(trainer, "w") as f:  # args: OUT [--resume]; refuses a checkpoint without --resume
        f.write('#!/bin/sh\necho "$*" >> ' + log + '\n'
                'if [ -f "$1/checkpoint.pt" ] && [ "$2" != --resume ]; then exit 2; fi\n'
                'mkdir -p "$1" && touch "$1/final.json"\n')
    os.chmod(trainer, 0o755)
    fresh, stopped, done = (os.path.join(tmp, n) for n in ("fresh", "stopped", "done"))
    os.makedirs(stopped)
    open(os.path.join(stopped, "checkpoint.pt"), "w").close()
    os.makedirs(done)
    open(os.path.join(done, "final.json"), "w").close()
    for out in (fresh, stopped, done):
        probe_cli.train_or_resume("test", [trainer, out], out, os.path.basename(out))
    with open(log) as f:
        calls = f.read().split("\n")[:-1]
    check(calls == [fresh, stopped + " --resume"],
          f"train_or_resume starts a new run, resumes a stopped one, skips a finished one: {calls}")

runs = [os.path.join(ROOT, "results", "char", f"{h}_s{s}") for h in ("softmax", "sigsoftmax")
        for s in (141, 142, 143)]
if all(os.path.isfile(os.path.join(r, "final.json")) for r in runs):
    out = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "bench", "char_tie_probe.py"),
                          "--work", os.path.join(ROOT, "results", "char"), "--epochs", "16",
                          "--build", sys.argv[1] if len(sys.argv) > 1 else "/nonexistent"],
                         capture_output=True, text=True)
    check(out.returncode == 0, f"char_tie_probe over results/char exits 0 {out.stderr[-300:]}")
    made = [line for line in out.stdout.splitlines() if line.startswith("Made at commit ")]
    check(len(made) == 1 and "The 6 runs it reads were made at: " in made[0],
          f"the report says where it and its runs were made: {made}")
    with open(os.path.join(ROOT, "results", "bench", "char_tie_probe.md")) as f:
        committed = [line for line in f.read().splitlines() if line.startswith("| ")]
    table = [line for line in out.stdout.splitlines() if line.startswith("| ")]
    check(table == committed and len(table) == 18,  # the header, 16 epochs, the test row
          f"and its table is the committed char_tie_probe.md's ({len(table)} rows)")
else:
    print("skip the report over results/char: the char profile's runs are not here")
sys.exit(finish())
