#!/usr/bin/python3
"""fit_logprob_matrix and pipeline/fit_report.py end to end on a target of known rank (seconds):
softmax reaches KL ~ 0 with room (d = 12 >= r = 4) and not below it (d = 1), its fitted log-matrix
within rank d + 2; the report's findings follow from the table by its rule; a head without dense
finite log-outputs, or a bad --d, exits 2 in one line and writes nothing; --resume keeps the fits
of OUT.partial (the report so far, written after every fit) and refuses one made with other
settings. The committed
results/fit/findings.json is what fit_report computes from the committed fit.json."""

import json
import os
import subprocess
import sys
import tempfile

from checks import ROOT, build_dir, check, finish, import_pipeline, message_lines

import_pipeline()
import fit_report  # noqa: E402

BIN = os.path.join(build_dir(), "trainers", "fit_logprob_matrix")

with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "fit.json")
    r = subprocess.run([BIN, "--low-rank", "4", "--C", "40", "--M", "60", "--d", "1,12",
                        "--heads", "softmax,sigsoftmax", "--threads", "1", "--lr", "0.05",
                        "--max-steps", "6000", "--out", out], capture_output=True, text=True)
    check(r.returncode == 0, f"a low-rank check runs ({r.returncode}: {r.stderr[-300:]})")
    rep = json.load(open(out))
    by = {(f["head"], f["d"]): f for f in rep["fits"]}
    check(rep["target"]["rank"] == 6, f"the target's log-matrix has rank r + 2 = 6 "
          f"({rep['target']['rank']})")
    check(by[("softmax", 12)]["kl"] < 1e-3 and by[("softmax", 1)]["kl"] > 0.05,
          f"softmax: KL ~ 0 at d = 12, not at d = 1 ({by[('softmax', 12)]['kl']:.2g}, "
          f"{by[('softmax', 1)]['kl']:.2g})")
    check(all(by[("softmax", d)]["rank"] <= d + 2 for d in (1, 12)),
          "softmax's fitted log-matrices have rank <= d + 2 (Theorem 2)")
    check(all("restart" in f and f["restart"]["seed"] == 1 for f in rep["fits"]),
          "every fit has a second fit from another seed beside it")
    check(any("ETA" in line for line in r.stdout.splitlines()), "progress lines with an ETA")

    r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "pipeline", "fit_report.py"), out],
                       capture_output=True, text=True)
    check(r.returncode == 0 and os.path.getsize(os.path.join(tmp, "fit.png")) > 5000,
          f"fit_report writes fit.md and fit.png ({r.stderr[-200:]})")
    found = json.load(open(os.path.join(tmp, "findings.json")))
    soft = found["softmax_above_zero"]
    check(soft["ds"] == [1] and soft["all"] is True,
          f"softmax stays above KL 0 where d + 2 < rank (d = 1 only): {soft}")
    for d, verdict in found["versus_softmax"]["sigsoftmax"]["per_d"].items():
        a, b = by[("softmax", int(d))], by[("sigsoftmax", int(d))]
        check(verdict == fit_report.compare(a, b),
              f"sigsoftmax at d = {d}: '{verdict}' follows from the KLs and restart spreads")
        gain = found["versus_softmax"]["sigsoftmax"]["gain"][d]
        check(abs(gain - (a["kl"] - b["kl"]) / a["kl"]) < 1e-12,
              f"sigsoftmax at d = {d}: the gain {gain:.4f} is (KL_softmax - KL) / KL_softmax")
    check(fit_report.compare({"kl": 1.0, "converged": True, "restart": {"kl": 1.01}},
                             {"kl": 0.5, "converged": True, "restart": {"kl": 0.52}}) == "closer"
          and fit_report.compare({"kl": 1.0, "converged": True, "restart": {"kl": 1.3}},
                                 {"kl": 0.9, "converged": True, "restart": {"kl": 0.95}}) == "tie",
          "the rule: a difference counts only beyond the two restart disagreements")
    md = open(os.path.join(tmp, "fit.md")).read()
    check("Theorem 2: at every d" in md and "| softmax |" in md and "record no commit" in md,
          "fit.md: the table, the findings, and no commit claimed for a report made without one")

    # --resume: a partial report holding the first fit (its KL marked) and not the others.
    args = [BIN, "--low-rank", "4", "--C", "40", "--M", "60", "--d", "1,12", "--heads",
            "softmax,sigsoftmax", "--threads", "1", "--lr", "0.05", "--max-steps", "6000"]
    partial = dict(rep, fits=[dict(rep["fits"][0], kl=123.0)] + rep["fits"][1:3])
    again_out = os.path.join(tmp, "again.json")
    with open(again_out + ".partial", "w") as f:
        json.dump(partial, f)
    r = subprocess.run(args + ["--out", again_out, "--resume"], capture_output=True, text=True)
    again = json.load(open(again_out)) if r.returncode == 0 else {"fits": []}
    check(r.returncode == 0 and [f["kl"] for f in again["fits"]] ==
          [123.0] + [f["kl"] for f in rep["fits"][1:]] and r.stdout.count("from ") == 3
          and not os.path.exists(again_out + ".partial"),
          f"--resume keeps the partial report's 3 fits and makes the 4th again, bit for bit "
          f"({r.returncode}: {r.stderr[-200:]})")
    partial["settings"]["lr"] = 0.01
    with open(again_out + ".partial", "w") as f:
        json.dump(partial, f)
    r = subprocess.run(args + ["--out", again_out + "2", "--resume"], capture_output=True,
                       text=True)
    check(r.returncode == 0, "another --out has no partial report: a fresh run")
    os.replace(again_out + ".partial", again_out + "2.partial")
    r = subprocess.run(args + ["--out", again_out + "2", "--resume"], capture_output=True,
                       text=True)
    check(r.returncode == 2 and len(message_lines(r.stderr)) == 1 and
          "2.partial: settings: expected this run's" in r.stderr,
          f"a partial report of other settings: exit 2 naming the file and settings "
          f"({r.stderr.strip()[-200:]})")

    for args, what in ((["--heads", "sparse:k=2"], "--heads"), (["--d", "0"], "--d"),
                       (["--d", "abc"], "--d"), (["--words", "-1"], "--words")):
        bad = os.path.join(tmp, "bad.json")
        r = subprocess.run([BIN, "--low-rank", "2", "--C", "5", "--M", "6", "--out", bad, *args],
                           capture_output=True, text=True)
        lines = message_lines(r.stderr)
        check(r.returncode == 2 and len(lines) == 1 and what in lines[0] and
              not os.path.exists(bad), f"{' '.join(args)}: exit 2, one line naming {what}, "
              f"nothing written ({r.returncode}: {r.stderr.strip()[-200:]})")

# The committed findings follow from the committed fits (make fit's output).
committed = os.path.join(ROOT, "results", "fit")
if os.path.exists(os.path.join(committed, "fit.json")):
    report = json.load(open(os.path.join(committed, "fit.json")))
    again = json.loads(json.dumps(fit_report.findings(report)))  # int keys as JSON writes them
    kept = json.load(open(os.path.join(committed, "findings.json")))
    check(again == kept, "results/fit/findings.json is fit_report's reading of results/fit/fit.json")
    md = open(os.path.join(committed, "fit.md")).read()
    unconverged = [f"{f['head']} d = {f['d']}" for f in report["fits"] if not f["converged"]]
    check(all(name in md for name in unconverged) and
          (not unconverged or "Not converged within the step budget" in md),
          f"fit.md names every committed fit that did not converge ({unconverged})")

sys.exit(finish())
