#!/usr/bin/python3
"""The dynamic-evaluation eps probe (pipeline/dyneval_eps_probe.py) against a stand-in dyneval
binary whose ppl are set by the test: every gain in the table equals 1 - dynamic/static computed
here, the finding's ratio is the two gains' quotient, the prediction holds only when every run's
ratio is >= 2, each call passes the eps it reports, and a run without weights exits 2 in one line
before anything is written."""

import json
import os
import subprocess
import tempfile

from checks import ROOT, check, finish

PROBE = os.path.join(ROOT, "pipeline", "dyneval_eps_probe.py")

# (run, eps) -> (static valid, dynamic valid, static test, dynamic test)
PPL = {("a", "0.001"): (170.0, 167.0, 160.0, 158.0), ("a", "2e-05"): (170.0, 150.0, 160.0, 145.0),
       ("b", "0.001"): (150.0, 148.0, 140.0, 139.0), ("b", "2e-05"): (150.0, 147.0, 140.0, 138.0)}

FAKE = r"""#!/usr/bin/python3
import json, os, sys
a = sys.argv[1:]
opt = {a[i]: a[i + 1] for i in range(0, len(a) - 1, 2)}
run, eps = os.path.basename(opt["--run"]), opt["--eps"]
sv, dv, st, dt = %s[(run, eps)]
with open(os.environ["CALLS"], "a") as f:
    f.write(f"{run} {eps}\n")
json.dump({"head": "softmax", "static": {"valid_ppl": sv, "test_ppl": st},
           "dynamic": {"valid_ppl": dv, "test_ppl": dt}, "stats": {"mean_ms": 7e-5},
           "seconds": 1.0}, open(opt["--out"], "w"))
"""


def probe(tmp, runs, out):
    env = dict(os.environ, CALLS=os.path.join(tmp, "calls.txt"))
    return subprocess.run(["/usr/bin/python3", PROBE, "--build", os.path.join(tmp, "build"),
                           "--out", out] + runs, capture_output=True, text=True, env=env)


with tempfile.TemporaryDirectory() as tmp:
    os.makedirs(os.path.join(tmp, "build", "trainers"))
    fake = os.path.join(tmp, "build", "trainers", "dyneval")
    with open(fake, "w") as f:
        f.write(FAKE % repr({k: v for k, v in PPL.items()}))
    os.chmod(fake, 0o755)
    runs = []
    for name in ("a", "b"):
        os.makedirs(os.path.join(tmp, name))
        open(os.path.join(tmp, name, "best_finetune.pt"), "w").close()
        runs.append(os.path.join(tmp, name))

    out = os.path.join(tmp, "probe.md")
    r = probe(tmp, runs, out)
    check(r.returncode == 0, f"the probe runs on two runs ({r.returncode}: {r.stderr[-300:]})")
    calls = open(os.path.join(tmp, "calls.txt")).read().split()
    check(calls == ["a", "0.001", "a", "2e-05", "b", "0.001", "b", "2e-05"],
          f"one dyneval call per run and eps, eps passed as given ({calls})")
    data = json.load(open(os.path.join(tmp, "probe.json")))
    ratios = data["findings"]["ratios"]
    for name in ("a", "b"):
        large = 1 - PPL[(name, "0.001")][1] / PPL[(name, "0.001")][0]
        small = 1 - PPL[(name, "2e-05")][1] / PPL[(name, "2e-05")][0]
        got = ratios[os.path.join(tmp, name)]
        # 1e-12: the same three float64 operations in another order.
        check(abs(got["gain_large_eps"] - large) < 1e-12 and
              abs(got["gain_small_eps"] - small) < 1e-12 and
              abs(got["ratio"] - small / large) < 1e-12,
              f"{name}: gains {got['gain_large_eps']:.5f}, {got['gain_small_eps']:.5f} and ratio "
              f"{got['ratio']:.3f} equal 1 - dynamic/static and their quotient "
              f"({large:.5f}, {small:.5f}, {small / large:.3f})")
    # a: 11.8% vs 1.8% (6.7x); b: 2.0% vs 1.3% (1.5x) -> one ratio below 2: does not hold.
    check(data["findings"]["prediction_holds"] is False,
          "the prediction does not hold when one run's ratio is below 2 (b: 1.5x)")
    text = open(out).read()
    check("| a | softmax | 0.001 |" in text and "11.76%" in text and "does not hold" in text,
          "the markdown table shows each row's gain and the finding's verdict")

    r = probe(tmp, [runs[0]], os.path.join(tmp, "only_a.md"))
    check(r.returncode == 0 and
          json.load(open(os.path.join(tmp, "only_a.json")))["findings"]["prediction_holds"],
          "with run a alone (ratio 6.7) the prediction holds")

    missing = os.path.join(tmp, "c")
    os.makedirs(missing)
    bad_out = os.path.join(tmp, "bad.md")
    r = probe(tmp, [missing], bad_out)
    check(r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and
          "best_finetune.pt" in r.stderr and not os.path.exists(bad_out),
          f"a run without weights exits 2 in one line naming the file, nothing written "
          f"({r.returncode}: {r.stderr.strip()})")

raise SystemExit(finish())
