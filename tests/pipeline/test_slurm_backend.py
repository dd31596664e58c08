#!/usr/bin/python3
"""The Slurm backend of reproduce.py without a cluster: sbatch, squeue and scontrol are stand-ins
(tests/fixtures/fake_slurm.py) that record every call, so this runs in every `make test`.

- --dry-run of the paper profile prints one script per (run, stage) and the plot + tables job,
  with the profile's per-stage resources (a GPU for the trainer stages, none for the analysis),
  and submits and writes nothing.
- A submission of the smoke profile: 19 sbatch calls (6 stages x 3 runs + the report); every job's --dependency=afterok lists
  exactly the job ids of the stages it reads (Stage.after), the last job those of every run's
  last jobs; each script runs reproduce.py --stage S --run R.
- Resume: a run whose train stage is done gets no train job and its finetune job no dependency;
  a job of an earlier submission still in the queue is kept (its id used), not submitted again.
- --wait: a job that ends FAILED makes the driver exit 1 naming the job, its state and its log.
- Bad [slurm] fields, --stage / --run typos, and a missing sbatch: exit 2, one line naming them.
- The paper plan's projected GPU-hours: "not measured" without tokens/s; with a tokens/s in a
  test profile, runs x epochs x tokens / rate, recomputed here.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib

import checks  # noqa: E402
from checks import ROOT, build_dir, check, finish  # noqa: E402
from tiny_profile import write_profile  # noqa: E402
DRIVER = os.path.join(ROOT, "pipeline", "reproduce.py")
FAKE = os.path.join(ROOT, "tests", "fixtures", "fake_slurm.py")
# The paper profile's configs, one per head name ({name} is the profile's placeholder).
PAPER_CONFIG = f"{ROOT}/trainers/configs/ptb_paper_{{name}}.toml"


def fake_env(tmp: str) -> dict:
    """PATH with sbatch, squeue, scontrol -> fake_slurm.py; its state files in tmp."""
    bin_dir = os.path.join(tmp, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    for tool in ("sbatch", "squeue", "scontrol"):
        path = os.path.join(bin_dir, tool)
        with open(path, "w") as f:
            f.write(f"#!/bin/sh\nexec /usr/bin/python3 {FAKE} {tool} \"$@\"\n")
        os.chmod(path, 0o755)
    return dict(os.environ, PATH=bin_dir + ":/usr/bin:/bin", FAKE_SLURM_DIR=tmp)


def fake_build(tmp: str) -> str:
    """A build directory whose binaries exist (check_binaries); no job runs them here."""
    return checks.fake_build(tmp)


def driver(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(["/usr/bin/python3", DRIVER, "--allow-dirty", *args], cwd=ROOT, text=True,
                          capture_output=True, env=env)


def calls(tmp: str) -> list[list[str]]:
    path = os.path.join(tmp, "calls.jsonl")
    return [json.loads(line) for line in open(path)] if os.path.exists(path) else []


def sbatch_calls(tmp: str) -> list[dict]:
    """Each sbatch call: its job id, script path, job key (from the script) and dependencies."""
    out = []
    for c in calls(tmp):
        if c["tool"] != "sbatch":
            continue
        script = c["argv"][-1]
        text = open(script).read()
        stage = re.findall(r"--stage (\w+)", text)
        run = re.search(r"--run (\S+)", text)
        key = f"{run.group(1)}/{stage[0]}" if run else "report"
        deps = [a.split(":", 1)[1].split(":") for a in c["argv"]
                if a.startswith("--dependency=")]
        out.append({"id": c["id"], "key": key, "deps": set(deps[0]) if deps else set(),
                    "script": script, "text": text})
    return out


def test_dry_run(tmp: str) -> None:
    out = os.path.join(tmp, "paper_out")
    env = dict(os.environ, PATH="/usr/bin:/bin")  # no sbatch: a dry run needs none
    r = driver("--profile", "paper", "--scheduler", "slurm", "--dry-run", "--out", out,
               "--build", build_dir(), env=env)
    scripts = re.findall(r"^# ---- (\S+)", r.stdout, re.M)
    check(r.returncode == 0 and len(scripts) == 60 * 6 + 1,
          f"paper --dry-run: exit 0, one script per (run, stage) + 1 = 361 (got {r.returncode}, "
          f"{len(scripts)})")
    blocks = dict(zip(scripts, re.split(r"^# ---- \S+\n", r.stdout, flags=re.M)[1:]))
    train = blocks.get(os.path.join(out, "slurm", "softmax_s141-train.sbatch"), "")
    analyse = blocks.get(os.path.join(out, "slurm", "softmax_s141-analyse.sbatch"), "")
    check("#SBATCH --gres=gpu:1" in train and "#SBATCH --time=2-00:00:00" in train,
          "the train job asks for a GPU and the profile's 2-day limit")
    check("--gres" not in analyse and "#SBATCH --cpus-per-task=8" in analyse,
          "the analysis job asks for 8 CPUs and no GPU")
    finetune = blocks.get(os.path.join(out, "slurm", "softmax_s141-finetune.sbatch"), "")
    check("--dependency=afterok:<softmax_s141/train>" in finetune,
          "finetune's sbatch line waits for the same run's train job")
    check("nothing submitted" in r.stdout and "job graph of profile paper: 361 jobs" in r.stdout,
          "the dry run ends with the job graph and says nothing was submitted")
    check(not os.path.exists(out), "the dry run wrote nothing")


def test_submit_resume_wait(tmp: str) -> None:
    env = fake_env(tmp)
    build = fake_build(tmp)
    out = os.path.join(tmp, "smoke_out")
    r = driver("--profile", "smoke", "--build", build, "--out", out, "--scheduler", "slurm",
               env=env)
    jobs = sbatch_calls(tmp)
    check(r.returncode == 0 and len(jobs) == 19,
          f"smoke: 19 jobs submitted (got {r.returncode}, {len(jobs)}): {r.stderr.strip()}")
    ids = {j["key"]: j["id"] for j in jobs}
    after = {"train": [], "finetune": ["train"], "dump": ["finetune"], "score": ["train"],
             "analyse": ["dump"], "epoch_ranks": ["finetune"]}
    wrong = []
    for j in jobs:
        if j["key"] == "report":
            continue
        run, stage = j["key"].split("/")
        want = {ids[f"{run}/{a}"] for a in after[stage]}
        if j["deps"] != want:
            wrong.append((j["key"], j["deps"], want))
        if f"--stage {stage} --run {run}" not in j["text"]:
            wrong.append((j["key"], "script does not run its step"))
    check(not wrong, f"every per-run job waits for exactly the stages it reads ({wrong[:3]})")
    leaves = {ids[f"{r}/{s}"] for r in {k.split('/')[0] for k in ids if '/' in k}
              for s in ("score", "analyse", "epoch_ranks")}
    check(jobs[-1]["key"] == "report" and jobs[-1]["deps"] == leaves,
          f"the plot + tables job is last and waits for every run's score and analyse jobs "
          f"({len(jobs[-1]['deps'])} ids)")
    check("--stage plot --stage epoch_plot --stage tables" in jobs[-1]["text"],
          "the last job runs plot, epoch_plot and tables")

    # Resume: softmax's train is done; sigsoftmax's train job is still queued as job 999.
    run = os.path.join(out, "softmax_s141")
    for name in ("checkpoint.pt", "best.pt"):
        open(os.path.join(run, name), "w").close()
    with open(os.path.join(run, "stages.json"), "w") as f:
        json.dump({"train": {"seconds": 1.0}}, f)
    queued = os.path.join(out, "slurm", "sigsoftmax_s141-train.sbatch")
    with open(os.path.join(tmp, "queue"), "w") as f:
        f.write(f"999|{queued}\n")
    os.remove(os.path.join(tmp, "calls.jsonl"))
    r = driver("--profile", "smoke", "--build", build, "--out", out, "--scheduler", "slurm",
               env=env)
    jobs = sbatch_calls(tmp)
    keys = {j["key"]: j for j in jobs}
    check(r.returncode == 0 and "softmax_s141/train" not in keys and len(jobs) == 17,
          f"re-submission: no job for the done train stage, none for the queued one "
          f"({len(jobs)} submitted)")
    check(keys.get("softmax_s141/finetune", {}).get("deps") == set() and
          keys.get("softmax_s141/score", {}).get("deps") == set(),
          "the done stage's dependents are submitted without a dependency")
    check(keys.get("sigsoftmax_s141/finetune", {}).get("deps") == {"999"},
          "a job waiting for a still-queued job of the earlier submission uses its id")
    check(re.search(r"kept queued job 999 sigsoftmax_s141/train", r.stdout) is not None,
          "the kept job is reported with its id")

    # --wait: every job leaves the queue; the mixture's train job failed.
    os.remove(os.path.join(tmp, "calls.jsonl"))
    os.remove(os.path.join(tmp, "queue"))  # the jobs of the submissions above are gone
    shutil.rmtree(out)
    with open(os.path.join(tmp, "fail_key"), "w") as f:
        f.write("mos_s141-train.sbatch")
    r = driver("--profile", "smoke", "--build", build, "--out", out, "--scheduler", "slurm",
               "--wait", env=dict(env, SB_SLURM_POLL_SECONDS="0.01"))
    failed = [j for j in sbatch_calls(tmp) if j["key"] == "mos_s141/train"]
    log = os.path.join(out, "mos_s141", f"slurm-train-{failed[0]['id']}.log") if failed else ""
    check(r.returncode == 1 and f"mos_s141/train: FAILED (exit 2:0); log {log}" in r.stderr,
          f"--wait exits 1 naming the failed job, its state and log (got {r.returncode}: "
          f"{r.stderr.strip()[:300]})")
    check(r.stderr.count(": FAILED") == 1, "only the failed job is named")


def test_errors(tmp: str) -> None:
    bad = os.path.join(tmp, "bad.toml")
    base = ('name = "bad"\nscaled_down = "x"\nout = "x"\nconfig = "x"\nheads = ["softmax"]\n'
            'seeds = [1]\n')
    for table, field in (('[slurm]\ntrain = { mem = "16 GB" }\n', "slurm.train.mem"),
                         ('[slurm]\ntrian = { cpus = 2 }\n', "slurm.trian"),
                         ('[slurm]\ndefault = { cpus = 0 }\n', "slurm.default.cpus"),
                         ('[slurm]\ndefault = { time = "2 days" }\n', "slurm.default.time"),
                         ('[gpu_throughput]\ntokens_per_s = { softmax = -1 }\n',
                          "gpu_throughput.tokens_per_s")):
        with open(bad, "w") as f:
            f.write(base + table)
        r = driver("--profile", bad, "--scheduler", "slurm", "--dry-run")
        check(r.returncode == 2 and f"{bad}: field '{field}': expected" in r.stderr and
              len(r.stderr.strip().splitlines()) == 1,
              f"bad {field}: exit 2, one line naming the file and field ({r.stderr.strip()})")
    r = driver("--profile", "smoke", "--stage", "bogus", "--out", os.path.join(tmp, "o"),
               "--build", fake_build(tmp))
    check(r.returncode == 2 and "--stage bogus: not a stage of profile smoke" in r.stderr,
          f"--stage bogus: exit 2 naming the profile's stages ({r.stderr.strip()})")
    r = driver("--profile", "smoke", "--stage", "train", "--run", "softmax_s1", "--out",
               os.path.join(tmp, "o"), "--build", fake_build(tmp))
    check(r.returncode == 2 and "--run softmax_s1: not a run of profile smoke" in r.stderr,
          f"--run typo: exit 2 naming the runs ({r.stderr.strip()})")
    out = os.path.join(tmp, "planned")
    r = driver("--profile", "smoke", "--stage", "train", "--run", "sigsoftmax_s141", "--plan",
               "--out", out, "--build", fake_build(tmp))
    check(r.returncode == 0 and "1 selected step (--stage), nothing run" in r.stdout and
          "--head sigsoftmax --seed 141" in r.stdout and not os.path.exists(out) and
          not calls(tmp),
          f"--plan with --stage prints the selection and runs nothing ({r.stdout.strip()})")
    r = driver("--profile", "smoke", "--scheduler", "slurm", "--out", os.path.join(tmp, "o"),
               "--build", fake_build(tmp), env=dict(os.environ, PATH="/nonexistent"))
    check(r.returncode == 2 and "sbatch not found" in r.stderr,
          f"no sbatch: exit 2 saying so ({r.stderr.strip()})")


def test_projection(tmp: str) -> None:
    r = driver("--profile", "paper", "--plan", "--build", build_dir())
    with open(os.path.join(ROOT, "pipeline", "profiles", "paper.toml"), "rb") as f:
        paper = tomllib.load(f)
    rate = paper["gpu_throughput"]["tokens_per_s"]["softmax"]
    tokens = paper["gpu_throughput"]["train_tokens_per_epoch"]
    line = (f"softmax: 10 runs x (1000 + 500) epochs x {tokens} tokens / {rate} tokens/s = "
            f"{10 * 1500 * tokens / rate / 3600:,.0f} GPU-hours")
    check(r.returncode == 0 and line in r.stdout,
          f"the paper plan projects softmax's GPU-hours from its measured tokens/s ({line})")
    prof = write_profile(os.path.join(tmp, "gpu.toml"), name="gpu", out="x", config=PAPER_CONFIG,
                         heads=["softmax", "mos:K=15"], seeds=[1, 2, 3],
                         tables="[overrides_by_head]\nmos = { epochs = 10 }\n"
                         "[gpu_throughput]\ntrain_tokens_per_epoch = 1000\nsource = \"test\"\n"
                         "tokens_per_s = { softmax = 250 }\n")
    r = driver("--profile", prof, "--plan", "--build", build_dir())
    hours = 3 * (1000 + 500) * 1000 / 250 / 3600  # 3 seeds x (epochs + finetune) x tokens / rate
    check(f"softmax: 3 runs x (1000 + 500) epochs x 1000 tokens / 250 tokens/s = {hours:,.0f} "
          "GPU-hours" in r.stdout, f"projection = runs x epochs x tokens / rate ({hours:.1f} h)")
    check("mos:K=15: 3 runs: tokens/s not measured" in r.stdout and
          f"total: {hours:,.0f} GPU-hours + the heads not measured (mos:K=15)" in r.stdout,
          "a head without a measurement is named, not guessed")


def test_mpi_analyse(tmp: str) -> None:
    """analysis.tasks = 2: the analyse job holds 2 tasks on 1 node, each with half the threads,
    and its command is srun -n 2 -N 1 rank_analysis ... --mpi inside the job, mpirun outside."""
    prof = write_profile(os.path.join(tmp, "mpi.toml"), name="mpi", out="x", config=PAPER_CONFIG,
                         threads=4, heads=["softmax"], seeds=[1],
                         tables='[analysis]\nmethod = "gram"\ntasks = 2\nnodes = 1\n')
    out = os.path.join(tmp, "mpi_out")
    r = driver("--profile", prof, "--scheduler", "slurm", "--dry-run", "--out", out,
               "--build", build_dir(), env=dict(os.environ, PATH="/usr/bin:/bin"))
    blocks = dict(zip(re.findall(r"^# ---- (\S+)", r.stdout, re.M),
                      re.split(r"^# ---- \S+\n", r.stdout, flags=re.M)[1:]))
    analyse = blocks.get(os.path.join(out, "slurm", "softmax_s1-analyse.sbatch"), "")
    train = blocks.get(os.path.join(out, "slurm", "softmax_s1-train.sbatch"), "")
    check(r.returncode == 0 and "#SBATCH --ntasks=2" in analyse and "#SBATCH --nodes=1" in analyse
          and "#SBATCH --cpus-per-task=2" in analyse
          and "srun -n 2 -N 1 rank_analysis --mpi" in analyse,
          "analysis.tasks = 2: the analyse job asks for 2 tasks of 2 CPUs on 1 node and says it "
          "runs srun -n 2 -N 1 rank_analysis --mpi")
    check("--ntasks" not in train and "#SBATCH --cpus-per-task=4" in train,
          "the other jobs keep one task with the profile's 4 threads")
    sys.path.insert(0, os.path.join(ROOT, "pipeline"))
    import repro_profile
    import stages

    class Driver:
        p = repro_profile.load_profile(prof)
        threads = 4
        bins = {"rank_analysis": "rank_analysis"}

    class Run:
        dir = "run"

    saved = os.environ.pop("SLURM_JOB_ID", None)
    local = stages.analyse_command(Driver, Run)
    os.environ["SLURM_JOB_ID"] = "42"
    in_job = stages.analyse_command(Driver, Run)
    os.environ.pop("SLURM_JOB_ID")
    if saved is not None:
        os.environ["SLURM_JOB_ID"] = saved
    check(in_job[:6] == ["srun", "--mpi=pmix", "-n", "2", "-N", "1"] and in_job[-1] == "--mpi"
          and in_job[in_job.index("--threads") + 1] == "2",
          f"in a Slurm job: {' '.join(in_job)}")
    check(local[:3] == ["mpirun", "-q", "-n"] and local[3] == "2" and local[-1] == "--mpi",
          f"outside Slurm: {' '.join(local)}")
    with open(prof, "a") as f:
        f.write("[slurm]\n")
    bad = os.path.join(tmp, "bad.toml")
    with open(prof) as f:
        text = f.read().replace("nodes = 1", "nodes = 3")
    with open(bad, "w") as f:
        f.write(text)
    r = driver("--profile", bad, "--plan", "--build", build_dir())
    check(r.returncode == 2 and "analysis.nodes" in r.stderr and len(r.stderr.splitlines()) == 1,
          f"nodes > tasks: exit 2, one line ({r.stderr.strip()})")


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        for name, test in (("dry", test_dry_run), ("submit", test_submit_resume_wait),
                           ("errors", test_errors), ("projection", test_projection),
                           ("mpi", test_mpi_analyse)):
            sub = os.path.join(tmp, name)
            os.makedirs(sub)
            test(sub)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
