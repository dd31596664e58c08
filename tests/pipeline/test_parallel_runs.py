#!/usr/bin/python3
"""Runs side by side (`jobs`, reproduce.py's lanes): the toy bigram trainer's profile of four runs
(two heads, two seeds, one thread each) made once with --jobs 1 and once with --jobs 2.
- Both exit 0 and write the same tables' inputs: every run's test ppl is bit-identical (the same
  seed, threads and build give the same outputs; the lanes change only when a run starts).
- With --jobs 2 the runs overlap: some run's first stage starts before the run started first has
  finished its last stage (read from the driver's step lines, in the order they were printed),
  and a child's lines carry its run's name; with --jobs 1 no run starts before the previous one
  has finished.
- <out>/stages.json records the runs' wall time with the jobs and threads it ran with, and
  summary.md says it; a fresh start over a stages.json left by runs that were deleted counts only
  its own time, and a resumed driver adds its own to what is there.
- --jobs -1 is refused in one line, exit 2, before anything is written.
Argument 1: the build directory."""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
from checks import ROOT, check, finish, skip_without_corpus  # noqa: E402
from tiny_profile import write_profile  # noqa: E402

build = os.path.abspath(sys.argv[1])
reproduce = os.path.join(ROOT, "pipeline", "reproduce.py")
skip_without_corpus("ptb")
RUNS = ["softmax_s1", "softmax_s2", "sigsoftmax_s1", "sigsoftmax_s2"]


def profile(tmp: str) -> str:
    config = os.path.join(tmp, "bigram.toml")
    with open(config, "w") as f:
        f.write("d = 8\nepochs = 2\ntrain_tokens = 40000\nvalid_tokens = 3000\n"
                "test_tokens = 1000\nlr = 0.5\n")
    return write_profile(os.path.join(tmp, "profile.toml"), name="bigram", trainer="bigram",
                         out=f"{tmp}/unused", config=config, threads=1,
                         heads=["softmax", "sigsoftmax"], seeds=[1, 2],
                         tables='[analysis]\nmethod = "gram"\n')


def drive(path: str, out: str, jobs: str) -> subprocess.CompletedProcess:
    return subprocess.run(["/usr/bin/python3", reproduce, "--profile", path, "--build", build,
                           "--out", out, "--jobs", jobs, "--allow-dirty"],
                          capture_output=True, text=True, cwd=ROOT)


def intervals(stdout: str) -> dict[str, tuple[int, int]]:
    """Each run's (line of its first 'running', line of its last 'done'), by the label."""
    span: dict[str, list[int]] = {}
    for n, line in enumerate(stdout.splitlines()):
        m = re.match(r"\[reproduce\] bigram step \d+/\d+ \| run \d+/\d+ (\S+ seed \d+) \| \S+: "
                     r"(.*)", line)
        if not m:
            continue
        s = span.setdefault(m.group(1), [-1, -1])
        if "running" in m.group(2) and s[0] < 0:
            s[0] = n
        if m.group(2).startswith("done"):
            s[1] = n
    return {k: (v[0], v[1]) for k, v in span.items()}


def test_ppl(out: str, run: str) -> float | None:
    try:
        return json.load(open(os.path.join(out, run, "final.json")))["bigram"]["test_ppl"]
    except (OSError, ValueError, KeyError):
        return None


with tempfile.TemporaryDirectory() as tmp:
    path = profile(tmp)
    one, two = os.path.join(tmp, "one"), os.path.join(tmp, "two")
    r1, r2 = drive(path, one, "1"), drive(path, two, "2")
    for r, jobs in ((r1, 1), (r2, 2)):
        check(r.returncode == 0, f"--jobs {jobs}: exit 0 (got {r.returncode}: "
              f"{r.stderr.strip()[-400:]})")
    for run in RUNS:
        a, b = test_ppl(one, run), test_ppl(two, run)
        check(a is not None and a == b, f"{run}: test ppl with --jobs 1 and 2 bit-identical "
              f"({a!r} vs {b!r})")
    s1, s2 = intervals(r1.stdout), intervals(r2.stdout)
    check(len(s1) == 4 and len(s2) == 4 and all(a >= 0 and b >= 0 for a, b in
                                                 list(s1.values()) + list(s2.values())),
          f"every run started and finished in both ({s1}, {s2})")
    seq = sorted(s1.values())
    check(all(seq[k][1] < seq[k + 1][0] for k in range(len(seq) - 1)),
          f"--jobs 1: each run starts after the previous one is done ({seq})")
    par = sorted(s2.values())
    check(par[1][0] < par[0][1], f"--jobs 2: the second run starts before the first is done "
          f"({par})")
    check(any(line.startswith(f"[{run}] ") for line in r2.stdout.splitlines() for run in RUNS),
          "--jobs 2: the trainers' lines carry their run's name")
    for out, jobs in ((one, 1), (two, 2)):
        wall = json.load(open(os.path.join(out, "stages.json"))).get("runs_wall", {})
        check(wall.get("jobs") == jobs and wall.get("threads") == 1 and
              wall.get("wall_seconds", 0) > 0,
              f"--jobs {jobs}: stages.json records the runs' wall time, jobs and threads ({wall})")
    summary = open(os.path.join(two, "summary.md")).read() \
        if os.path.exists(os.path.join(two, "summary.md")) else ""
    check("**Wall time:" in summary and "2 at a time with 1 thread each" in summary,
          "summary.md gives the wall time and how many runs ran at a time")
    # The runs deleted, their stages.json kept: the fresh start does not add to its time.
    stale = os.path.join(tmp, "stale")
    os.makedirs(stale)
    with open(os.path.join(stale, "stages.json"), "w") as f:
        json.dump({"runs_wall": {"wall_seconds": 99999.0, "jobs": 2, "threads": 1}}, f)
    fresh = drive(path, stale, "2")
    wall = json.load(open(os.path.join(stale, "stages.json"))).get("runs_wall", {})
    check(fresh.returncode == 0 and 0 < wall.get("wall_seconds", 0) < 99999,
          f"a fresh start over deleted runs' stages.json counts its own wall time only ({wall})")
    before = json.load(open(os.path.join(two, "stages.json")))["runs_wall"]["wall_seconds"]
    again = drive(path, two, "2")
    after = json.load(open(os.path.join(two, "stages.json")))["runs_wall"]["wall_seconds"]
    check(again.returncode == 0 and after >= before,
          f"a resumed driver adds to the runs' wall time ({before} -> {after})")
    done = json.load(open(os.path.join(two, "stages.json")))["runs_wall"].get("invocations", [])
    check(len(done) == 2 and abs(sum(d["seconds"] for d in done) - after) < 0.2 and
          "train" in done[0].get("stages", []),
          f"each invocation is listed with its seconds and stages, summing to the total ({done})")
    text = open(os.path.join(two, "summary.md")).read() \
        if os.path.exists(os.path.join(two, "summary.md")) else ""
    check("In 2 invocations: " in text, "summary.md lists the two invocations")
    bad = drive(path, os.path.join(tmp, "bad"), "-1")
    err = bad.stderr.strip().splitlines()
    check(bad.returncode == 2 and len(err) == 1 and "--jobs -1" in err[0] and
          not os.path.exists(os.path.join(tmp, "bad")),
          f"--jobs -1: exit 2, one line, nothing written ({bad.stderr.strip()})")
sys.exit(finish())
