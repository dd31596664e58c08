#!/usr/bin/python3
"""make reproduce PROFILE=smoke SCHEDULER=slurm on a real one-node Slurm cluster: the same results
as the local backend, resume by re-submission, failures reported with their logs.

  tests/pipeline/test_reproduce_slurm.py BUILD_DIR OUT_DIR LOCAL_DIR

- pipeline/slurm_local_cluster.sh starts munged, slurmctld and slurmd on 127.0.0.1 in a temporary
  directory (stopped at the end, whatever happens). Not root, or the Debian packages missing:
  one line "SKIPPED: slurm: ..." and ctest reports the test as skipped (`make test-slurm`
  installs them and runs this test).
- LOCAL_DIR holds the local backend's smoke run (the smoke test's output when it ran before this
  test, which ctest orders; else this test runs it, ~10 min on 2 cores). The Slurm backend runs
  the same profile into OUT_DIR, one job per (run, stage); with the same seeds and threads every
  run must give the same outputs bit for bit: the log-probability matrices of the dumps, the
  perplexities (final.json, score.json), every field of rank.json, and summary.md's perplexity
  and rank tables (the wall-time table differs, and is not compared).
- A second submission finds every run stage done and submits only the plot + tables job.
- A profile whose trainer settings are invalid: the train job fails, --wait exits 1 naming it
  with its log (which holds the trainer's error), and the jobs behind it are cancelled.
- A profile with analysis.tasks = 2: its analyse job holds 2 tasks and runs
  `srun --mpi=pmix -n 2 -N 1 rank_analysis ... --mpi`; the result equals one process's.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

from checks import ROOT, check, finish, import_pipeline, skip_without_corpus  # noqa: E402

import_pipeline()
from final_json import read_final, section  # noqa: E402  (any layout: schema 2 or the old)

DRIVER = os.path.join(ROOT, "pipeline", "reproduce.py")
CLUSTER = os.path.join(ROOT, "pipeline", "slurm_local_cluster.sh")


def driver(*args: str, env=None, timeout=None) -> subprocess.CompletedProcess:
    r = subprocess.run(["/usr/bin/python3", DRIVER, "--allow-dirty", *args], cwd=ROOT, text=True,
                       capture_output=True, env=env, timeout=timeout)
    return r


def tail(r: subprocess.CompletedProcess, n: int = 3000) -> None:
    sys.stdout.write(r.stdout[-n:])
    sys.stdout.write(r.stderr[-n:])
    sys.stdout.flush()


def tables(summary: str) -> str:
    """summary.md's perplexity and rank sections (everything before the wall times)."""
    start = summary.index("## Perplexity")
    return summary[start:summary.index("## Wall time")]


def compare_runs(local: str, slurm: str) -> None:
    runs = sorted(d for d in os.listdir(local) if os.path.isdir(os.path.join(local, d))
                  and os.path.exists(os.path.join(local, d, "rank.json")))
    check(len(runs) == 6, f"the local smoke run has 6 runs ({runs})")
    for d in runs:
        a, b = os.path.join(local, d), os.path.join(slurm, d)
        if not os.path.exists(os.path.join(b, "rank.json")):
            check(False, f"{d}: the Slurm run wrote rank.json")
            continue
        with h5py.File(os.path.join(a, "logprobs.h5"), "r") as fa, \
                h5py.File(os.path.join(b, "logprobs.h5"), "r") as fb:
            same = np.array_equal(fa["log_probs"][:], fb["log_probs"][:]) and \
                np.array_equal(fa["targets"][:], fb["targets"][:])
            shape = fa["log_probs"].shape
        check(same, f"{d}: the dumps' {shape[0]} x {shape[1]} log-probabilities are bit-identical")
        ra, rb = (json.load(open(os.path.join(x, "rank.json"))) for x in (a, b))
        # Not compared: the dump's path and the timings (seconds, seconds_read, ...).
        differ = sorted(k for k in set(ra) | set(rb) if ra.get(k) != rb.get(k) and
                        k != "file" and not k.startswith("seconds"))
        check(not differ, f"{d}: rank.json agrees in every field (rank {rb.get('rank')}, "
                          f"bound {rb.get('bound')}){'; differ: ' + str(differ) if differ else ''}")
        fa, fb = (section(read_final(os.path.join(x, "final.json"), "wordlm")) for x in (a, b))
        sa, sb = (json.load(open(os.path.join(x, "score.json"))) for x in (a, b))
        check(fa["test_ppl"] == fb["test_ppl"] and fa["valid_ppl"] == fb["valid_ppl"] and
              sa["static"] == sb["static"],
              f"{d}: test ppl {fb['test_ppl']:.4f}, valid ppl {fb['valid_ppl']:.4f} and the "
              "score after training are identical")
    ta = tables(open(os.path.join(local, "summary.md")).read())
    tb = tables(open(os.path.join(slurm, "summary.md")).read())
    check(ta == tb, "summary.md: the perplexity and rank tables are identical")


def smoke_profile(tmp: str, name: str, threads: int, tables: str) -> str:
    """<tmp>/<name>.toml: one softmax run (seed 7) of the smoke config, then the given tables."""
    path = os.path.join(tmp, name + ".toml")
    with open(path, "w") as f:
        f.write(f'name = "{name}"\nscaled_down = "test"\nout = "x"\n'
                f'config = "{ROOT}/trainers/configs/ptb_smoke.toml"\n'
                f'heads = ["softmax"]\nseeds = [7]\nthreads = {threads}\n' + tables)
    return path


def failing_profile(tmp: str) -> str:
    return smoke_profile(tmp, "badtrainer", threads=1, tables=(
        "[overrides]\nemsize = 0\n"  # the trainer refuses it: exit 2
        '[slurm]\ndefault = { cpus = 1, mem = "500M", time = "5:00" }\n'))


def mpi_profile(tmp: str) -> str:
    """One smoke-sized run whose analyse stage runs as 2 MPI tasks (srun inside its job)."""
    return smoke_profile(tmp, "mpianalyse", threads=2, tables=(
        '[analysis]\nmethod = "sketch"\ncheck = true\ntasks = 2\nnodes = 1\n'
        '[slurm]\ndefault = { cpus = 1, mem = "1G", time = "10:00" }\n'))


def check_mpi_analyse(build: str, env: dict) -> None:
    """The analyse stage as `srun --mpi=pmix -n 2 ... rank_analysis --mpi` in its Slurm job: the
    same rank, bound, verdict and certificate as one process of rank_analysis on the same dump."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        r = driver("--profile", mpi_profile(tmp), "--build", build, "--out", out, "--scheduler",
                   "slurm", "--wait", env=env, timeout=900)
        tail(r, 1500)
        check(r.returncode == 0, f"a profile with analysis.tasks = 2 runs on Slurm (exit "
                                 f"{r.returncode})")
        run = os.path.join(out, "softmax_s7")
        script = os.path.join(out, "slurm", "softmax_s7-analyse.sbatch")
        text = open(script).read() if os.path.exists(script) else ""
        check("#SBATCH --ntasks=2" in text, f"the analyse job asks Slurm for 2 tasks ({script})")
        if r.returncode != 0 or not os.path.exists(os.path.join(run, "rank.json")):
            return
        logs = [f for f in os.listdir(run) if re.fullmatch(r"slurm-analyse-[0-9]+\.log", f)]
        log = open(os.path.join(run, logs[0])).read() if logs else ""
        check("srun --mpi=pmix -n 2 -N 1" in log and "--mpi" in log,
              "the analyse job's log shows the srun line with --mpi")
        two = json.load(open(os.path.join(run, "rank.json")))
        one = subprocess.run([os.path.join(build, "analysis", "rank_analysis"),
                              os.path.join(run, "logprobs.h5"), "--method", "sketch", "--json",
                              "--quiet", "--threads", "1"], capture_output=True, text=True)
        ref = json.loads(one.stdout.strip().splitlines()[-1]) if one.returncode == 0 else {}
        keys = ("rank", "bound", "verdict", "certificate", "method", "M", "T")
        check(one.returncode == 0 and all(two.get(k) == ref.get(k) for k in keys),
              "2 MPI tasks under srun give one process's " +
              ", ".join(f"{k} {two.get(k)}" for k in keys))
        check(two.get("processes") == 2 and ref.get("processes") == 1,
              f"rank.json says 2 processes did it (processes = {two.get('processes')}; the "
              f"one-process run: {ref.get('processes')})")


def main() -> int:
    build, out, local = (os.path.abspath(a) for a in sys.argv[1:4])
    skip_without_corpus("ptb")
    cluster = tempfile.mkdtemp(prefix="sb-slurm-")
    start = subprocess.run([CLUSTER, "start", cluster], capture_output=True, text=True)
    if start.returncode == 3:  # not root / packages missing: one line, the test is skipped
        print(f"SKIPPED: slurm: {start.stdout.strip()}")
        shutil.rmtree(cluster, ignore_errors=True)
        return 0
    if start.returncode != 0:
        print(start.stdout + start.stderr)
        subprocess.run(["tail", "-n", "20", *[os.path.join(cluster, "log", f) for f in
                                              ("munged.log", "slurmctld.log", "slurmd.log")]])
        check(False, f"the local Slurm cluster starts (exit {start.returncode})")
        subprocess.run([CLUSTER, "stop", cluster])
        return 1
    print(start.stdout.strip(), flush=True)
    env = dict(os.environ, SLURM_CONF=os.path.join(cluster, "slurm.conf"))
    try:
        # The local reference: already complete when the smoke test ran (every stage skipped).
        ref = driver("--profile", "smoke", "--build", build, "--out", local)
        if ref.returncode != 0:  # e.g. runs of an older build that the profile cannot resume
            print(f"the local reference in {local} does not complete as it is "
                  f"({ref.stderr.strip()[-300:]}); running it afresh", flush=True)
            shutil.rmtree(local, ignore_errors=True)
            ref = driver("--profile", "smoke", "--build", build, "--out", local)
        check(ref.returncode == 0, f"the local smoke run completes in {local}")
        if ref.returncode != 0:
            tail(ref)
            return 1

        shutil.rmtree(out, ignore_errors=True)
        first = driver("--profile", "smoke", "--build", build, "--out", out, "--scheduler",
                       "slurm", "--wait", env=env, timeout=3600)
        tail(first, 6000)
        submitted = len(re.findall(r"^\[reproduce slurm\] submitted job", first.stdout, re.M))
        check(first.returncode == 0, f"--scheduler slurm --wait exits 0 (got {first.returncode})")
        check(submitted == 19, f"19 jobs submitted: 6 stages x 3 runs + the report (got "
                               f"{submitted})")
        compare_runs(local, out)
        for ext in ("png", "svg"):
            p = os.path.join(out, f"singular_values.{ext}")
            check(os.path.exists(p) and os.path.getsize(p) > 1000, f"plot {p} written")
        logs = [f for f in os.listdir(os.path.join(out, "softmax_s141"))
                if re.fullmatch(r"slurm-train-[0-9]+\.log", f)]
        check(len(logs) == 1, f"the train job's log is in the run directory ({logs})")

        mtimes = {d: os.path.getmtime(os.path.join(out, d, "logprobs.h5"))
                  for d in os.listdir(out) if os.path.exists(os.path.join(out, d, "logprobs.h5"))}
        second = driver("--profile", "smoke", "--build", build, "--out", out, "--scheduler",
                        "slurm", "--wait", env=env, timeout=600)
        tail(second, 1500)
        again = re.findall(r"^\[reproduce slurm\] submitted job \S+ (\S+):", second.stdout, re.M)
        check(second.returncode == 0 and again == ["report"],
              f"re-submitting a finished profile submits only the report job (got {again})")
        check(all(os.path.getmtime(os.path.join(out, d, "logprobs.h5")) == t
                  for d, t in mtimes.items()), "re-submitting rewrote no dump")

        with tempfile.TemporaryDirectory() as tmp:
            bad_out = os.path.join(tmp, "out")
            bad = driver("--profile", failing_profile(tmp), "--build", build, "--out", bad_out,
                         "--scheduler", "slurm", "--wait", env=env, timeout=600)
            tail(bad, 1500)
            named = re.search(r"softmax_s7/train: FAILED \(exit 2:0\); log (\S+)", bad.stderr)
            check(bad.returncode == 1 and bool(named),
                  f"a failed job: --wait exits 1 naming the job, its state and log (got "
                  f"{bad.returncode})")
            if named:
                log = open(named.group(1)).read() if os.path.exists(named.group(1)) else ""
                check("emsize" in log, f"the failed job's log {named.group(1)} holds the "
                                       "trainer's error about emsize")
            cancelled = re.findall(r"job \S+ (\S+): CANCELLED \(its dependency failed\)",
                                   bad.stderr)
            check(sorted(cancelled) == ["report", "softmax_s7/analyse", "softmax_s7/dump",
                                        "softmax_s7/finetune"],
                  f"every job behind it is cancelled and named so (got {cancelled})")
        check_mpi_analyse(build, env)
    finally:
        subprocess.run([CLUSTER, "stop", cluster])
        shutil.rmtree(cluster, ignore_errors=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
