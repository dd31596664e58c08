"""The Slurm backend of make reproduce (reproduce.py --scheduler slurm): the stage table of
stages.py as a graph of sbatch jobs.

One job per (run, stage) that is not done yet, each running this same driver on that one step:

    reproduce.py --profile P --build B --out O --stage STAGE --run RUN

so the commands and the done-checks are the local backend's: a job whose stage is already complete
exits at once, and re-submitting skips every stage whose outputs are complete (resume). A stage
waits (--dependency=afterok) for the jobs of the stages it reads (Stage.needs: train -> finetune
-> dump -> dyneval, analyse; score after train; analyse after the trainer kind's dump stage); one last job runs plot and tables after every
other job. --kill-on-invalid-dep=yes cancels the jobs behind a failed one. A job of an earlier
submission that is still queued or running (same script path) is kept, not submitted twice.
Resources per stage come from the profile's [slurm] table (slurm_resources.py); partition and
account from it or from --partition / --account.

Scripts go to <out>/slurm/<job>.sbatch, logs to <run>/slurm-<stage>-<jobid>.log (the profile-wide
job: <out>/slurm-report-<jobid>.log). --dry-run prints the scripts and the job graph and submits
nothing; --wait follows the jobs until they leave the queue, then names every one that did not
complete with its state and log.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import shutil
import subprocess
import sys
import time

from atomic_io import write_text_atomically
from pipeline_errors import EXIT_NOT_DONE, EXIT_OK
from slurm_resources import Resources
from stages import STAGES, Stage, StageError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PREFIX = "[reproduce slurm]"


class SlurmError(StageError):
    pass


def run_key(run) -> str:
    """The run's directory name (softmax_s141): what --run takes."""
    return os.path.basename(os.path.normpath(run.dir))


@dataclasses.dataclass
class Job:
    key: str  # "<run key>/<stage>" or "report" (plot + tables)
    name: str  # the Slurm job name
    run: object | None
    stages: list[Stage]
    after: list[str]  # keys of the jobs it waits for
    resources: Resources
    script_path: str
    log: str  # with %j, as sbatch takes it
    id: str = ""  # once submitted (or found queued)
    queued_before: bool = False  # an earlier submission's job, still queued or running
    state: str = ""  # after --wait: COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
    exit_code: str = ""

    def log_path(self) -> str:
        return self.log.replace("%j", self.id or "<jobid>")


class SlurmBackend:
    def __init__(self, driver, profile_path: str, partition: str = "", account: str = ""):
        self.d = driver
        self.p = driver.p
        self.profile_path = os.path.abspath(profile_path)
        self.out = os.path.abspath(self.p.out)
        self.build = os.path.abspath(driver.build)
        self.partition = partition or self.p.slurm.partition
        self.account = account or self.p.slurm.account
        self.script_dir = os.path.join(self.out, "slurm")

    # ---- the graph
    def jobs(self) -> list[Job]:
        """A job per (run, stage) not done yet, in plan order, then the plot + tables job."""
        enabled = [s for s in STAGES if s.enabled(self.p)]
        jobs: list[Job] = []
        for run in self.d.runs:
            key = run_key(run)
            pending = {s.name for s in enabled
                       if s.per_run and s.applies(self.p, run) and not s.done(self.d, run)}
            for s in enabled:
                if s.per_run and s.name in pending:
                    jobs.append(self._job(f"{key}/{s.name}", f"{key}-{s.name}", run, [s],
                                          [f"{key}/{a}" for a in s.needs(self.p)
                                           if a in pending],
                                          os.path.join(os.path.abspath(run.dir),
                                                       f"slurm-{s.name}-%j.log")))
        # The report waits for the jobs no other job waits for: through afterok, that is every job.
        waited_for = {k for j in jobs for k in j.after}
        profile_stages = [s for s in enabled if not s.per_run]
        jobs.append(self._job("report", "report", None, profile_stages,
                              [j.key for j in jobs if j.key not in waited_for],
                              os.path.join(self.out, "slurm-report-%j.log")))
        return jobs

    def _job(self, key, suffix, run, stages, after, log) -> Job:
        name = f"sb-{self.p.name}-{suffix}"
        return Job(key=key, name=name, run=run, stages=stages, after=after,
                   resources=self._resources(stages), log=log,
                   script_path=os.path.join(self.script_dir, f"{suffix}.sbatch"))

    def _resources(self, stages: list[Stage]) -> Resources:
        r = self.p.slurm.resources(*(s.name for s in stages))
        tasks = int(self.p.analysis.get("tasks", 1))
        if any(s.name == "analyse" for s in stages) and tasks > 1:
            # rank_analysis --mpi under srun: the job holds the tasks, each with its share of
            # the threads.
            r = dataclasses.replace(r, ntasks=tasks, nodes=int(self.p.analysis.get("nodes", 1)))
            if r.cpus is None and self.p.threads > 0:
                r = dataclasses.replace(r, cpus=max(1, self.p.threads // tasks))
        if r.cpus is None and self.p.threads > 0:
            r = dataclasses.replace(r, cpus=self.p.threads)
        return r

    def script(self, job: Job) -> str:
        opts = [f"--job-name={job.name}", f"--output={job.log}", f"--chdir={ROOT}",
                *job.resources.sbatch_options()]
        if self.partition:
            opts.append(f"--partition={self.partition}")
        if self.account:
            opts.append(f"--account={self.account}")
        opts += ["--kill-on-invalid-dep=yes", *self.p.slurm.sbatch_args]
        cmd = [sys.executable, os.path.join(ROOT, "pipeline", "reproduce.py"),
               "--profile", self.profile_path, "--build", self.build, "--out", self.out]
        if self.d.allow_dirty:
            cmd.append("--allow-dirty")
        for s in job.stages:
            cmd += ["--stage", s.name]
        what = f"stage {job.stages[0].name} of run {job.run.label}" if job.run else \
            "plot and tables after every run"
        if job.run:
            cmd += ["--run", run_key(job.run)]
        mpi = []
        if job.resources.ntasks:
            mpi = [f"# analyse runs `srun -n {job.resources.ntasks} -N {job.resources.nodes} "
                   "rank_analysis --mpi ...` in this allocation (profile analysis.tasks / nodes)."]
        lines = ["#!/bin/bash", *(f"#SBATCH {o}" for o in opts),
                 f"# make reproduce PROFILE={self.p.name}, {what} (written by pipeline/slurm.py).",
                 *mpi,
                 "# The stage is skipped when its outputs are complete; a failure exits non-zero,",
                 "# which cancels the jobs that wait for this one (afterok).",
                 "exec " + shlex.join(cmd)]
        return "\n".join(lines) + "\n"

    def sbatch_command(self, job: Job, ids: dict[str, str]) -> list[str]:
        cmd = ["sbatch", "--parsable"]
        deps = [ids[k] for k in job.after if ids.get(k)]
        if deps:
            cmd.append("--dependency=afterok:" + ":".join(deps))
        return cmd + [job.script_path]

    # ---- dry run
    def dry_run(self) -> int:
        jobs = self.jobs()
        symbolic = {j.key: f"<{j.key}>" for j in jobs}
        for j in jobs:
            print(f"# ---- {j.script_path}")
            print(self.script(j), end="")
            print("$ " + shlex.join(self.sbatch_command(j, symbolic)) + "\n")
        self.print_graph(jobs, {})
        print(f"{PREFIX} dry run: nothing submitted")
        return EXIT_OK

    def print_graph(self, jobs: list[Job], ids: dict[str, str]) -> None:
        """One line per job: [id] key, resources, the jobs it waits for (ids once submitted)."""
        done = len(self.d.plan()) - sum(len(j.stages) for j in jobs)
        print(f"{PREFIX} job graph of profile {self.p.name}: {len(jobs)} jobs"
              f"{f' ({done} steps already done: no job)' if done else ''}; "
              f"partition {self.partition or '(cluster default)'}, account "
              f"{self.account or '(default)'}")
        width = max(len(j.key) for j in jobs)
        for j in jobs:
            after = " ".join(ids.get(k, k) for k in j.after)
            if j.key == "report" and len(j.after) > 2:
                after = f"the last job of every run ({len(j.after)} jobs)"
            res = " ".join(j.resources.sbatch_options()) or "cluster defaults"
            print(f"  {(ids[j.key] + ' ') if j.key in ids else ''}{j.key:<{width}}  {res}"
                  + (f"  <- afterok {after}" if after else ""))

    # ---- submission
    def _require(self) -> None:
        for tool in ("sbatch", "squeue", "scontrol"):
            if shutil.which(tool) is None:
                raise SlurmError(f"{tool} not found: --scheduler slurm needs the Slurm client "
                                 "commands (Debian: slurm-client) and a cluster (SLURM_CONF); "
                                 "--dry-run prints the scripts without them")

    def queued(self) -> dict[str, str]:
        """Script path -> job id of this user's jobs still queued or running."""
        r = subprocess.run(["squeue", "-h", "--me", "-o", "%i|%o"], capture_output=True,
                           text=True)
        if r.returncode != 0:
            raise SlurmError(f"squeue failed (exit {r.returncode}): {r.stderr.strip()}")
        out = {}
        for line in r.stdout.splitlines():
            job_id, _, command = line.partition("|")
            out[command.strip()] = job_id.strip()
        return out

    def submit(self, wait: bool = False, poll_seconds: float = 5.0) -> int:
        self._require()
        self.d.check_binaries()
        jobs = self.jobs()
        os.makedirs(self.script_dir, exist_ok=True)
        for r in self.d.runs:
            os.makedirs(r.dir, exist_ok=True)  # sbatch does not create the log's directory
        queued = self.queued()
        ids: dict[str, str] = {}
        for j in jobs:
            if j.script_path in queued:
                j.id, j.queued_before = queued[j.script_path], True
            else:
                write_text_atomically(j.script_path, self.script(j))
                cmd = self.sbatch_command(j, ids)
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    raise SlurmError(f"{shlex.join(cmd)} failed (exit {r.returncode}): "
                                     f"{r.stderr.strip()}; {len(ids)} jobs were submitted before "
                                     "it (re-running resumes)")
                j.id = r.stdout.strip().split(";")[0]
            ids[j.key] = j.id
            print(f"{PREFIX} {'kept queued' if j.queued_before else 'submitted'} job {j.id} "
                  f"{j.key}: log {j.log_path()}", flush=True)
        self.print_graph(jobs, ids)
        if not wait:
            print(f"{PREFIX} follow with: squeue --me; re-run the same command to resume after a "
                  "failure (done stages are skipped)", flush=True)
            return EXIT_OK
        return self.wait(jobs, poll_seconds)

    # ---- --wait
    def job_state(self, job_id: str) -> tuple[str, str]:
        r = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True,
                           text=True)
        fields = dict(f.split("=", 1) for f in r.stdout.split() if "=" in f)
        return fields.get("JobState", "UNKNOWN"), fields.get("ExitCode", "")

    def outputs_done(self, job: Job) -> bool:
        """The job's stages pass their done-checks (tables, never done, by summary.md)."""
        if job.run is None:
            return all(s.done(self.d, None) for s in job.stages if s.name != "tables") and \
                os.path.exists(os.path.join(self.out, "summary.md"))
        return all(s.done(self.d, job.run) for s in job.stages)

    def wait(self, jobs: list[Job], poll_seconds: float) -> int:
        active = {j.id: j for j in jobs}
        last = ""
        while active:
            queued = set(self.queued().values())
            for job_id in [i for i in active if i not in queued]:
                j = active.pop(job_id)
                j.state, j.exit_code = self.job_state(job_id)
                if j.state == "UNKNOWN" and self.outputs_done(j):  # purged from scontrol
                    j.state = "COMPLETED"
                if j.state != "COMPLETED":
                    print(f"{PREFIX} job {j.id} {j.key}: {j.state} (exit {j.exit_code}); log "
                          f"{j.log_path()}", flush=True)
            line = f"{len(jobs) - len(active)}/{len(jobs)} jobs finished"
            if line != last:
                print(f"{PREFIX} {line}", flush=True)
                last = line
            if active:
                time.sleep(poll_seconds)
        bad = [j for j in jobs if j.state != "COMPLETED"]
        if not bad:
            print(f"{PREFIX} every job completed; see {os.path.join(self.out, 'summary.md')}",
                  flush=True)
            return EXIT_OK
        print(f"{PREFIX} {len(bad)} of {len(jobs)} jobs did not complete:", file=sys.stderr)
        for j in bad:
            why = "its dependency failed" if j.state == "CANCELLED" and not os.path.exists(
                j.log_path()) else f"exit {j.exit_code}"
            print(f"  job {j.id} {j.key}: {j.state} ({why}); log {j.log_path()}",
                  file=sys.stderr)
        print(f"{PREFIX} re-run the same command to resubmit what is not done", file=sys.stderr)
        return EXIT_NOT_DONE
