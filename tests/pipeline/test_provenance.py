#!/usr/bin/python3
"""pipeline/provenance.py and the driver's refusal of a changed tree, in a throwaway git
repository holding a copy of pipeline/ and trainers/configs/: a clean commit is clean; changes
under results/, to README.md or to docs/reproducing.md (the pipeline's own outputs: the blocks
`make readme` fills) do not count; a changed source file does; `provenance.py label` (the
benches' "Measured ... at commit" line, the Makefile's MEASURED_AT) says the same.
reproduce.py then refuses
(exit 2, one line naming the file and --allow-dirty, no output directory created) before any training; --allow-dirty goes on, and the tables say so; a stage
whose binary crashes is reported with the signal's name and the binary's last line. Which
commit made each run is counted from stages.json."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

from checks import ROOT, check, fake_build, finish

with tempfile.TemporaryDirectory() as tmp:
    repo = os.path.join(tmp, "repo")
    shutil.copytree(os.path.join(ROOT, "pipeline"), os.path.join(repo, "pipeline"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(os.path.join(ROOT, "trainers", "configs"),
                    os.path.join(repo, "trainers", "configs"))
    os.makedirs(os.path.join(repo, "results"))
    os.makedirs(os.path.join(repo, "docs"))
    for name in ("results/table.md", "README.md", "docs/reproducing.md"):
        with open(os.path.join(repo, name), "w") as f:
            f.write("committed\n")

    def git(*args):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                              cwd=repo, capture_output=True, text=True, check=True).stdout

    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "a commit")
    commit = git("rev-parse", "--short", "HEAD").strip()

    def state():
        code = ("import json, sys; sys.path.insert(0, 'pipeline'); import provenance; "
                "s = provenance.source_state(); print(json.dumps([s.commit, list(s.changed), "
                "s.label]))")
        return json.loads(subprocess.run(["/usr/bin/python3", "-c", code], cwd=repo,
                                         capture_output=True, text=True, check=True).stdout)

    check(state() == [commit, [], commit], f"a clean commit: {state()}")
    for name in ("results/table.md", "README.md", "docs/reproducing.md"):
        with open(os.path.join(repo, name), "a") as f:
            f.write("written by the pipeline\n")
    check(state() == [commit, [], commit],
          "changes to results/, README.md and docs/reproducing.md (the pipeline's outputs) do not "
          "make it dirty")

    def label():
        return subprocess.run(["/usr/bin/python3", "pipeline/provenance.py", "label"], cwd=repo,
                              capture_output=True, text=True, check=True).stdout

    check(label() == commit + "\n",
          f"provenance.py label (the benches' 'Measured ... at commit' line) is clean then too: "
          f"{label()!r}")
    with open(os.path.join(repo, "pipeline", "summary.py"), "a") as f:
        f.write("# an uncommitted change\n")
    s = state()
    check(s == [commit, ["pipeline/summary.py"], f"{commit} (with uncommitted changes)"],
          f"a changed source file makes it dirty and is named: {s}")
    check(label() == f"{commit} (with uncommitted changes)\n", f"and labelled so: {label()!r}")
    with open(os.path.join(ROOT, "Makefile")) as f:
        measured = [line for line in f if line.startswith("MEASURED_AT =")]
    check(len(measured) == 1 and "pipeline/provenance.py label" in measured[0] and
          "git diff" not in measured[0],
          f"the Makefile's MEASURED_AT asks provenance.py label, not its own git rule: {measured}")

    # The driver: a build whose binaries exist (they fail if run) and whose rank_analysis
    # answers --list-heads with the real one's (the head facts the profile check reads).
    build = fake_build(tmp, "echo fake binary ran >&2; kill -SEGV $$")  # dies as a crash would
    out = os.path.join(tmp, "out")

    def driver(*extra):
        return subprocess.run(["/usr/bin/python3", "pipeline/reproduce.py", "--profile", "smoke",
                               "--build", build, "--out", out, *extra],
                              cwd=repo, capture_output=True, text=True)

    r = driver()
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 2 and len(lines) == 1 and "pipeline/summary.py" in lines[0] and
          "--allow-dirty" in lines[0],
          f"a dirty tree: exit 2 in one line naming the file and --allow-dirty ({r.returncode}: "
          f"{r.stderr.strip()[-300:]})")
    check(not os.path.exists(out) and "fake binary ran" not in r.stderr,
          "refused before anything ran or was created")
    r = driver("--plan")
    check(r.returncode == 0, f"--plan on a dirty tree still prints the plan ({r.returncode})")
    r = driver("--allow-dirty")
    check(r.returncode == 2 and "train_wordlm failed (killed by SIGSEGV): fake binary ran; its "
          "output is in" in r.stderr,
          f"--allow-dirty goes on to the first stage, and its crash is reported by the signal's "
          f"name with the binary's last line ({r.returncode}: {r.stderr.strip()[-200:]})")
    r = driver("--stage", "train")
    check("uncommitted" not in r.stderr,
          "a stage that writes no table (--stage train) is not refused for the tree")

    # Every table says it was made from a changed tree; a clean tree's says nothing.
    code = ("import sys; sys.path.insert(0, 'pipeline'); import report_tables, types\n"
            "lines = []\n"
            "p = types.SimpleNamespace(name='smoke', description='d', scaled_down='s', "
            "runs=lambda: [])\n"
            "report_tables.profile_header(lines.append, p)\n"
            "print(''.join(lines))")
    header = subprocess.run(["/usr/bin/python3", "-c", code], cwd=repo, capture_output=True,
                            text=True)
    check("Made from a tree with uncommitted changes" in header.stdout and
          "pipeline/summary.py" in header.stdout,
          f"the dirty tree's table header says so, naming the file ({header.stderr[-200:]})")
    git("checkout", "--", "pipeline/summary.py")
    header = subprocess.run(["/usr/bin/python3", "-c", code], cwd=repo, capture_output=True,
                            text=True)
    check(header.returncode == 0 and "uncommitted" not in header.stdout,
          "a clean tree's table header has no such line")

    # provenance.py record (make fit): the tree's state before the command, written only on exit 0.
    rec = os.path.join(tmp, "made_at.json")
    now = state()
    r = subprocess.run(["/usr/bin/python3", "pipeline/provenance.py", "record", rec, "--",
                        "/bin/sh", "-c", "exit 3"], cwd=repo, capture_output=True, text=True)
    check(r.returncode == 3 and not os.path.exists(rec),
          f"a failed command's status is returned and nothing recorded ({r.returncode})")
    r = subprocess.run(["/usr/bin/python3", "pipeline/provenance.py", "record", rec, "--",
                        "/bin/sh", "-c", "echo fitted"], cwd=repo, capture_output=True, text=True)
    with open(rec) as f:
        made = json.load(f)
    check(r.returncode == 0 and r.stdout == "fitted\n" and made["source"] != "?" and
          [made["source"], made["changed"]] == [now[2], now[1]] and
          made["command"] == "/bin/sh -c 'echo fitted'" and made["seconds"] >= 0,
          f"a finished command's record names the commit, the changes and the command ({made})")

    # A stage records the commit of the tree it started from, not the driver's first one: a
    # checkout between stages of a long profile (new binaries built) shows in stages.json, and
    # a commit made while a stage runs does not.
    code = """
import json, os, sys, threading, time, types
sys.path.insert(0, 'pipeline')
import provenance, reproduce
def commit(msg):
    with open('pipeline/summary.py', 'a') as f:
        f.write('# ' + msg + '\\n')
    os.system("git -c user.name=t -c user.email=t@t commit -qam '" + msg + "'")
    return provenance.source_state().commit
d = reproduce.Driver.__new__(reproduce.Driver)
d.source = provenance.source_state()
d.start, d.jobs, d.measured, d.estimated = time.monotonic(), 1, 0.0, 0.0
d._counted = threading.Lock()
d.say = lambda line: None
d.eta = lambda pending: 0.0
d.estimate = lambda run, stage: 0.0
d.p = types.SimpleNamespace(analysis={})
run = types.SimpleNamespace(dir=sys.argv[1], label='r')
os.makedirs(run.dir)
second = commit('checked out between stages')
third = []
class NotDone:
    why = 'not done'
    def __bool__(self):
        return False
stage = types.SimpleNamespace(name='analyse', done=lambda d, r: NotDone(),
                              run=lambda d, r: third.append(commit('made during the stage')))
d._step('head', [(run, stage)], 0, run, stage)
print(json.dumps([d.source.commit, second, third[0],
                  json.load(open(os.path.join(run.dir, 'stages.json')))['analyse']['commit']]))
"""
    r = subprocess.run(["/usr/bin/python3", "-c", code, os.path.join(tmp, "stage_run")],
                       cwd=repo, capture_output=True, text=True)
    got = json.loads(r.stdout) if r.returncode == 0 else None
    check(got is not None and len(set(got[:3])) == 3 and got[3] == got[1],
          f"a stage's record names the commit it started from (driver's first, at the stage's "
          f"start, made during it, recorded): {got} {r.stderr[-300:]}")

    # runs_made_at: the commit of each run's last finished stage.
    sys.path.insert(0, os.path.join(ROOT, "pipeline"))
    import provenance
    runs = []
    for i, stages in enumerate([
            {"train": {"seconds": 1, "finished": "2026-01-01T00:00:00Z", "commit": "aaaaaaa"},
             "dump": {"seconds": 1, "finished": "2026-01-02T00:00:00Z", "commit": "bbbbbbb"}},
            {"train": {"seconds": 1, "finished": "2026-01-01T00:00:00Z", "commit": "bbbbbbb"}},
            {"train": {"seconds": 1, "finished": "2026-01-01T00:00:00Z"}},
            {"train.partial": {"seconds": 1}}]):
        d = os.path.join(tmp, f"run{i}")
        os.makedirs(d)
        with open(os.path.join(d, "stages.json"), "w") as f:
            json.dump(stages, f)
        runs.append(d)
    runs.append(os.path.join(tmp, "never_started"))
    made = provenance.runs_made_at(runs)
    check(made == {"bbbbbbb": 2, "not recorded": 1},
          f"runs_made_at counts each run's last finished stage's commit, skips unfinished ({made})")

sys.exit(finish())
