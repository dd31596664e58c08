#!/usr/bin/python3
"""make reproduce: train every head of a profile, dump, analyse, plot, tabulate.

    /usr/bin/python3 pipeline/reproduce.py [--profile cpu] [--build build] [--plan] [--force]
        [--scheduler local|slurm] [--dry-run] [--wait] [--partition P] [--account A]
        [--stage NAME ... [--run RUN]]

The stages are the table of stages.py: per run (one head, one seed) train (the main SGD ->
NT-ASGD phase), finetune, dump (the test-set log-probabilities, batch size 1), score (the
trained model before finetuning on valid and test, when the profile asks), dyneval (when the
profile asks) and analyse (rank of the dump); then plot and tables for the whole profile. Each
stage checks its outputs before it is skipped, so re-running after an interruption (Ctrl-C,
kill, reboot) resumes where it stopped: the trainer continues from its last checkpoint.
Output: <out>/<head>_s<seed>/ per run, <out>/singular_values.{png,svg}, <out>/summary.md.

--scheduler local (the default) runs the stages here: each run's stages one after the other, and
`jobs` runs at a time (the profile's key or --jobs; 0 = cores // threads), each with its own
`threads`, the longest runs first, the profile's stages once every run is done; --scheduler slurm
submits them to a Slurm cluster as a graph of jobs (slurm.py), each job running this driver with
--stage NAME --run RUN: one step, with the same command and done-check.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import signal
import queue
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dir_lock  # noqa: E402
import head_facts  # noqa: E402
import provenance  # noqa: E402
from durations import format_duration  # noqa: E402
from gpu_projection import projection_lines  # noqa: E402
from repro_profile import Profile, Run, check_runs, load_profile  # noqa: E402
from atomic_io import write_json_atomically, write_text_atomically  # noqa: E402
from stage_clock import Heartbeat  # noqa: E402
from stages import DUMP_REMOVED, STAGES, Stage, StageError, read_json, release_dump  # noqa: E402
from run_outputs import stages_of  # noqa: E402
import trainer_kinds  # noqa: E402
from pipeline_errors import PipelineError, EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK  # noqa: E402

PREFIX = "[reproduce]"


Step = tuple[Run | None, Stage]  # a per-run stage with its run, or a profile stage with None


@contextlib.contextmanager
def stages_locked(run_dir: str):
    """Holds the run's stages.json for one read-modify-write: two Slurm jobs of one run (score
    beside finetune) may finish at the same time. The lock file is hidden, as every lock beside
    a run is (.gitignore), so committed results carry none."""
    with open(os.path.join(run_dir, ".stages.json.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def failure_line(binary: str, code: int, last: str, log_path: str) -> str:
    """One line for a stage whose binary failed: its exit status or the signal that ended it
    (by name), its own last line (its error message), and where the whole output is."""
    if code < 0:
        try:
            how = f"killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"killed by signal {-code}"
    else:
        how = f"exit status {code}"
    said = f": {last[:300]}" if last else ""
    return f"{binary} failed ({how}){said}; its output is in {log_path}"


def lanes(threads: int, jobs: int, cores: int, runs: int) -> tuple[int, int]:
    """(threads per run, runs at a time) from the profile's `threads` and `jobs` (0 = automatic)
    on `cores` cores: jobs = 0 fills the cores with runs of `threads` threads (one run when
    threads is 0 too); threads = 0 shares the cores among the jobs. Never more jobs than runs.
    Training many small-GEMM runs side by side with one thread each gets more tokens/s from two
    cores than one run with two (results/bench/parallel_runs.md)."""
    if jobs == 0:
        jobs = max(1, cores // threads) if threads else 1
    threads = threads or max(1, cores // jobs)
    return threads, max(1, min(jobs, runs))


class Driver:
    def __init__(self, profile: Profile, build: str, allow_dirty: bool = False,
                 jobs: int | None = None):
        # The trainer kinds are this build's binaries, as they describe themselves.
        trainer_kinds.use(os.path.join(build, "trainers"))
        self.p = profile
        self.allow_dirty = allow_dirty
        # The tree at the start: a changed tree is refused before hours of training. Each stage
        # records the tree it started from (a checkout during a long profile moves it).
        self.source = provenance.source_state()
        self.what = "reproduce.py " + " ".join(sys.argv[1:])  # who holds a locked directory
        self.build = build
        self.runs = profile.runs()
        self.start = time.monotonic()
        self.measured = 0.0  # seconds of the stages run by this process
        self.estimated = 0.0  # what the profile estimated for those stages
        # threads = 0: the CPUs Slurm gave the job, else every core here (shared by the jobs).
        cores = int(os.environ.get("SLURM_CPUS_PER_TASK", 0)) or os.cpu_count() or 1
        self.threads, self.jobs = lanes(profile.threads, profile.jobs if jobs is None else jobs,
                                        cores, len(self.runs))
        self._said = threading.Lock()  # one line at a time from the lanes
        self._counted = threading.Lock()  # measured / estimated
        self._lane = threading.local()  # .tag: the run a lane's child output is from
        self._children: set[subprocess.Popen] = set()  # running binaries (Ctrl-C, SIGTERM)
        self.global_timings: dict = {}  # the profile-wide stages' times (<out>/stages.json)
        self.bins = {
            "dyneval": os.path.join(build, "trainers", "dyneval"),
            "rank_analysis": os.path.join(build, "analysis", "rank_analysis"),
        }
        # The head facts (is_mixture, rank_defined, ...) come from this build's rank_analysis.
        head_facts.use(self.bins["rank_analysis"])
        # Every head, parameter and trainer config checked before anything is written (the
        # trainer's own descriptor first: it says which binaries the stages run).
        check_runs(profile, head_facts.registry())
        self.bins[profile.kind.binary] = profile.kind.path
        # The binaries this profile's stages run (check_binaries).
        self.needed = profile.kind.binaries + ("rank_analysis",)

    # ---- bookkeeping
    def timings(self, run: Run) -> dict:
        return stages_of(run.dir)

    def record(self, run: Run, stage: str, seconds: float,
               source: provenance.SourceState | None = None) -> None:
        """Adds `seconds` to the stage's time. With `source`, the tree the stage started from, the
        stage has finished and is recorded with its commit; without, the time is kept as partial
        (an interrupted stage's) and counted when the stage finishes."""
        with stages_locked(run.dir):
            t = self.timings(run)
            partial = t.pop(stage + ".partial", {}).get("seconds", 0.0)
            if source is not None:
                t[stage] = {"seconds": round(seconds + partial, 1),
                            "finished": time.strftime("%FT%TZ", time.gmtime()),
                            "commit": source.label}
            else:
                t[stage + ".partial"] = {"seconds": round(seconds + partial, 1)}
            write_json_atomically(os.path.join(run.dir, "stages.json"), t)

    def record_removed(self, run: Run, record: dict) -> None:
        """Records in the run's stages.json that its dump was removed (stages.release_dump)."""
        with stages_locked(run.dir):
            t = self.timings(run)
            t[DUMP_REMOVED] = dict(record, seconds=0.0, commit=provenance.source_state().label,
                                          removed=time.strftime("%FT%TZ", time.gmtime()))
            write_json_atomically(os.path.join(run.dir, "stages.json"), t)

    def forget(self, run: Run, stages: tuple[str, ...]) -> None:
        """Drops these stages' records (finished or partial) from the run's stages.json: the
        run starts from the beginning, so they describe files that are about to be replaced."""
        if not os.path.exists(os.path.join(run.dir, "stages.json")):
            return
        with stages_locked(run.dir):
            t = self.timings(run)
            kept = {k: v for k, v in t.items()  # "dump.partial", "dump.removed" go with "dump"
                    if k.removesuffix(".partial").removesuffix(".removed") not in stages}
            if kept != t:
                write_json_atomically(os.path.join(run.dir, "stages.json"), kept)

    def estimate(self, run: Run, stage: Stage) -> float:
        return self.p.estimate(run, stage.name, stage.head_cost)

    def eta(self, pending: list[Step]) -> float:
        scale = self.measured / self.estimated if self.estimated > 0 else 1.0
        return scale * sum(self.estimate(run, s) for run, s in pending if run is not None) / \
            self.jobs

    def say(self, line: str) -> None:
        with self._said:
            print(line, flush=True)

    # ---- commands
    def log_of(self, run: Run) -> str:
        os.makedirs(run.dir, exist_ok=True)
        return os.path.join(run.dir, "reproduce.log")

    def execute(self, cmd: list[str], log_path: str, stdout_path: str | None = None) -> None:
        """Runs cmd, echoing its output and appending it to log_path; with stdout_path, stdout
        (a JSON document) goes to that file atomically instead and stderr is echoed."""
        self.say(f"{PREFIX} $ {' '.join(cmd)}")
        tag = getattr(self._lane, "tag", "")
        with open(log_path, "a") as log:
            log.write(f"$ {' '.join(cmd)}\n")
            log.flush()
            proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE if stdout_path else subprocess.STDOUT, text=True)
            self._children.add(proc)
            stream = proc.stderr if stdout_path else proc.stdout
            captured = []
            if stdout_path:
                import threading
                reader = threading.Thread(target=lambda: captured.append(proc.stdout.read()))
                reader.start()
            last = ""  # the child's last words: the one-line error of a binary that failed
            try:
                for line in stream:
                    with self._said:
                        sys.stdout.write(tag + line)
                        sys.stdout.flush()
                    log.write(line)
                    if line.strip():
                        last = line.strip()
                code = proc.wait()
            except KeyboardInterrupt:  # Ctrl-C reached the child too; SIGTERM (kill, Slurm's
                proc.send_signal(signal.SIGINT)  # time limit) may not have: the trainer saves
                code = proc.wait()
                raise
            finally:
                self._children.discard(proc)
            if stdout_path:
                reader.join()
        if code == EXIT_INTERRUPTED or code == -signal.SIGINT:
            raise KeyboardInterrupt
        if code != 0:
            raise StageError(failure_line(os.path.basename(cmd[0]), code, last, log_path))
        if stdout_path:
            write_text_atomically(stdout_path, captured[0] if captured else "")

    # ---- the loop
    def plan(self) -> list[Step]:
        """Every enabled stage of the table: the per-run ones for each run, then the rest."""
        enabled = [s for s in STAGES if s.enabled(self.p)]
        steps: list[Step] = [(r, s) for r in self.runs for s in enabled
                             if s.per_run and s.applies(self.p, r)]
        return steps + [(None, s) for s in enabled if not s.per_run]

    def select(self, stages: list[str], run: str | None) -> list[Step]:
        """The steps of the plan named by --stage (and --run for per-run stages)."""
        steps = self.plan()
        names = {s.name for _, s in steps}
        for name in stages:
            if name not in names:
                raise StageError(f"--stage {name}: not a stage of profile {self.p.name} "
                                 f"(its stages: {', '.join(dict.fromkeys(s.name for _, s in steps))})")
        keys = [os.path.basename(os.path.normpath(r.dir)) for r in self.runs]
        if run is not None and run not in keys:
            raise StageError(f"--run {run}: not a run of profile {self.p.name} (its runs: "
                             f"{', '.join(keys)})")
        return [(r, s) for r, s in steps if s.name in stages and
                (r is None or run is None or os.path.basename(os.path.normpath(r.dir)) == run)]

    def print_plan(self) -> None:
        p = self.p
        print(f"profile {p.name} ({p.path}): {p.description}")
        print(f"  {p.scaled_down}")
        if p.requires:
            print(f"  requires: {p.requires}")
        plural = "s" if self.threads != 1 else ""
        print(f"  output: {p.out}/; {len(self.runs)} runs, {self.threads} thread{plural} each, "
              f"{self.jobs} at a time")
        enabled = [s for s in STAGES if s.enabled(p)]
        for i, run in enumerate(self.runs, 1):
            per_run = " -> ".join(s.name for s in enabled if s.per_run and s.applies(p, run))
            print(f"  run {i}/{len(self.runs)}: {run.label}: {per_run}")
            print(f"    {' '.join(p.kind.command(self, run, p.kind.dump_stage))}")
        print(f"  then: {' -> '.join(s.name for s in enabled if not s.per_run)}")
        est = sum(self.estimate(r, s) for r, s in self.plan() if r is not None)
        print(f"  estimated time before any measurement: {format_duration(est / self.jobs)}"
              + (f" ({format_duration(est)} of run time, {self.jobs} runs at a time)"
                 if self.jobs > 1 else ""))
        for line in projection_lines(p):
            print(f"  {line}")

    def print_selection(self, steps: list[Step]) -> None:
        """--plan with --stage: the selected steps, the trainer's command beside its stage, and
        their estimate; nothing is run."""
        p = self.p
        print(f"profile {p.name} ({p.path}): {len(steps)} selected step"
              f"{'s' if len(steps) != 1 else ''} (--stage), nothing run")
        for run, stage in steps:
            print(f"  {run.label if run is not None else 'profile'}: {stage.name}")
            if run is not None and stage.name in p.kind.stages:
                print(f"    {' '.join(p.kind.command(self, run, stage.name))}")
        est = sum(self.estimate(r, s) for r, s in steps if r is not None)
        print(f"  estimated time: {format_duration(est)} (one at a time)")

    def check_binaries(self) -> None:
        for name in self.needed:
            path = self.bins[name]
            if not os.access(path, os.X_OK):
                raise StageError(f"{path} not built: run `make build` (or pass --build DIR)")

    def go(self, steps: list[Step] | None = None) -> None:
        """Runs `steps` (default: the whole plan) in order, skipping the done ones. The output
        directory is locked while steps of the whole profile are among them (a local run, the
        tables job), each run's directory while one of its stages is checked and run (what a
        Slurm job of one run holds): a second driver on the same directory is refused."""
        self.check_binaries()
        steps = self.plan() if steps is None else steps
        if self.source.dirty and not self.allow_dirty and any(not s.per_run for _, s in steps):
            raise StageError(self.source.refusal())  # before hours of training, not after
        whole = any(not s.per_run for _, s in steps)
        with dir_lock.holding(self.p.out, self.what) if whole else contextlib.nullcontext():
            self._go(steps)

    def _go(self, steps: list[Step]) -> None:
        """The per-run steps (`jobs` runs at a time), then the profile's steps. The wall time of
        the per-run part is added to <out>/stages.json ("runs_wall") for the report."""
        # On a fresh start (no run directory yet) the profile's times in stages.json belong to
        # runs that are gone (deleted to be made again), not to this one.
        fresh = not any(os.path.isdir(run.dir) for run in self.p.runs())
        self.global_timings = {} if fresh else (
            read_json(os.path.join(self.p.out, "stages.json")) or {})
        numbered = list(enumerate(steps))
        per_run = [(i, r, s) for i, (r, s) in numbered if r is not None]
        t_runs = time.monotonic()
        try:
            if self.jobs > 1 and len({id(r) for _, r, _ in per_run}) > 1:
                self._lanes(steps, per_run)
            else:
                for i, run, stage in per_run:
                    self._one(steps, i, run, stage)
        finally:
            if per_run:
                self._add_wall(time.monotonic() - t_runs,
                               list(dict.fromkeys(s.name for _, _, s in per_run)))
        for i, (run, stage) in numbered:
            if run is None:
                self._one(steps, i, None, stage)
        self.say(f"{PREFIX} {self.p.name}: finished in "
                 f"{format_duration(time.monotonic() - self.start)}; "
                 f"see {os.path.join(self.p.out, 'summary.md')}")

    def _add_wall(self, seconds: float, stages: list[str]) -> None:
        """Adds this invocation's wall time of the per-run steps (every invocation adds its own)
        and lists it with the stages it was asked for, so that the report can tell the run end
        to end from a later re-analysis. A total written before the list is one earlier entry
        without its stages."""
        before = self.global_timings.get("runs_wall", {})
        done = before.get("invocations")
        if done is None:
            done = [{"seconds": before["wall_seconds"]}] if before.get("wall_seconds") else []
        done.append({"seconds": round(seconds, 1), "stages": stages})
        self.global_timings["runs_wall"] = {
            "wall_seconds": round(before.get("wall_seconds", 0.0) + seconds, 1),
            "jobs": self.jobs, "threads": self.threads, "invocations": done}
        write_json_atomically(os.path.join(self.p.out, "stages.json"), self.global_timings)

    def _lanes(self, steps: list[Step], per_run: list) -> None:
        """`jobs` lanes, each taking the next run (its stages in order) until none is left, the
        longest runs (by the profile's estimate) first so that the lanes end together. A failed
        or interrupted stage stops every lane after its current stage; the first error is
        raised. Ctrl-C / SIGTERM reach the main thread: it passes SIGINT to the running
        binaries (each saves its checkpoint) and waits for the lanes."""
        groups: dict[int, list] = {}
        for i, run, stage in per_run:
            groups.setdefault(id(run), []).append((i, run, stage))
        work: queue.Queue = queue.Queue()
        for group in sorted(groups.values(),
                            key=lambda g: -sum(self.estimate(r, s) for _, r, s in g)):
            work.put(group)
        stop = threading.Event()
        failures: list[BaseException] = []

        def lane() -> None:
            while not stop.is_set():
                try:
                    group = work.get_nowait()
                except queue.Empty:
                    return
                self._lane.tag = f"[{os.path.basename(os.path.normpath(group[0][1].dir))}] "
                try:
                    for i, run, stage in group:
                        if stop.is_set():
                            return
                        self._one(steps, i, run, stage)
                except BaseException as e:  # noqa: B036 (StageError, Busy, an interrupted child)
                    failures.append(e)
                    stop.set()
                    return

        workers = [threading.Thread(target=lane, name=f"lane {k + 1}") for k in range(self.jobs)]
        for w in workers:
            w.start()
        try:
            while any(w.is_alive() for w in workers):
                for w in workers:
                    w.join(timeout=0.2)
        except KeyboardInterrupt:
            stop.set()
            for proc in list(self._children):
                proc.send_signal(signal.SIGINT)
            for w in workers:
                w.join()
            raise
        if failures:
            raise failures[0]

    def _one(self, steps: list[Step], i: int, run: Run | None, stage: Stage) -> None:
        """One step, its run's directory locked while it is checked and run."""
        where = f"run {self.runs.index(run) + 1}/{len(self.runs)} {run.label}" if run \
            else "profile"
        head = f"{PREFIX} {self.p.name} step {i + 1}/{len(steps)} | {where} | {stage.name}"
        with dir_lock.holding(run.dir, self.what) if run else contextlib.nullcontext():
            seconds = self._step(head, steps, i, run, stage)
        if seconds is not None:
            self.say(f"{head}: done in {format_duration(seconds)}")

    def _step(self, head: str, steps: list[Step], i: int, run: Run | None,
              stage: Stage) -> float | None:
        """Checks one step and runs it unless done: its seconds, None when it was skipped."""
        check = stage.done(self, run)
        if check:
            self.say(f"{head}: skipped ({check.why})")
            return None
        # What is left: the steps after this one, or with lanes (longest runs first) every step
        # not done yet, wherever it stands in the plan.
        pending = [(r, s) for k, (r, s) in enumerate(steps)
                   if (k >= i or self.jobs > 1) and not (r and s.done(self, r))]
        self.say(f"{head}: {check.why}: running | elapsed "
                 f"{format_duration(time.monotonic() - self.start)} | ETA "
                 f"{format_duration(self.eta(pending))}")
        t0 = time.monotonic()
        if run:
            source = provenance.source_state()  # the tree this stage starts from
            # The time so far goes to stages.json every minute: a killed driver loses <= 1 min.
            beat = Heartbeat(lambda s: self.record(run, stage.name, s))
            try:
                with beat:
                    stage.run(self, run)
            except KeyboardInterrupt:
                self.record(run, stage.name, beat.unrecorded())
                raise
            seconds = time.monotonic() - t0
            self.record(run, stage.name, beat.unrecorded(), source=source)
            released = release_dump(self, run)
            if released:
                self.say(f"{head}: {released}")
            with self._counted:
                self.measured += seconds
                self.estimated += self.estimate(run, stage)
        else:
            if stage.report:  # counts itself (written as made)
                self.global_timings["tables"] = {"seconds": 0.0}
            stage.run(self, None)
            self.global_timings[stage.name] = {"seconds": round(time.monotonic() - t0, 1)}
            write_json_atomically(os.path.join(self.p.out, "stages.json"), self.global_timings)
            seconds = time.monotonic() - t0
        return seconds


def _profile_names() -> list[str]:
    """The shipped profiles, by name."""
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "profiles")
    return sorted(n[:-len(".toml")] for n in os.listdir(folder) if n.endswith(".toml"))


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=f"Profiles (pipeline/profiles/): {', '.join(_profile_names())}. Re-running "
               "resumes.")
    ap.add_argument("--profile", default="cpu",
                    help="a name from pipeline/profiles/ or a path to a profile TOML (default cpu)")
    ap.add_argument("--build", default="build", help="the CMake build directory (default build)")
    ap.add_argument("--out", default=None,
                    help="output directory instead of the profile's `out` (tests use this)")
    ap.add_argument("--plan", action="store_true", help="print the plan and exit")
    ap.add_argument("--force", action="store_true",
                    help="run a profile marked run_here = false (e.g. paper) on this machine")
    ap.add_argument("--scheduler", choices=("local", "slurm"), default="local",
                    help="local: run the stages here (default); slurm: submit them as sbatch "
                         "jobs chained with --dependency=afterok")
    ap.add_argument("--dry-run", action="store_true",
                    help="slurm: print the sbatch scripts and the job graph, submit nothing; "
                         "local: the same as --plan")
    ap.add_argument("--wait", action="store_true",
                    help="slurm: follow the jobs until they leave the queue; exit 1 naming the "
                         "failed ones and their logs")
    ap.add_argument("--partition", default="", help="slurm: partition (default: the profile's)")
    ap.add_argument("--account", default="", help="slurm: account (default: the profile's)")
    ap.add_argument("--stage", action="append", default=[],
                    help="run only this stage (repeatable; what a Slurm job runs)")
    ap.add_argument("--allow-dirty", action="store_true",
                    help="write the plot and tables from a tree with uncommitted changes (refused "
                         "otherwise); every table then says so")
    ap.add_argument("--jobs", type=int, default=None,
                    help="runs at a time here (default: the profile's `jobs`; 0 = cores // "
                         "threads); each run keeps the profile's threads")
    ap.add_argument("--run", default=None,
                    help="with --stage: only this run, by its directory name (softmax_s141)")
    return ap


def _run(args, path: str) -> int:
    """What main does once the arguments are read; raises PipelineError for a refusal."""
    profile = load_profile(path)
    if args.out:
        profile.out = args.out
    if args.jobs is not None and args.jobs < 0:
        raise StageError(f"--jobs {args.jobs}: expected an integer >= 0 (0 = cores // threads)")
    driver = Driver(profile, args.build, args.allow_dirty, args.jobs)
    if args.run is not None and not args.stage:
        raise StageError("--run needs --stage")
    if args.scheduler == "slurm":
        from slurm import SlurmBackend
        backend = SlurmBackend(driver, path, args.partition, args.account)
        poll = float(os.environ.get("SB_SLURM_POLL_SECONDS", 5))  # tests poll faster
        if driver.source.dirty and not args.allow_dirty and not args.dry_run:
            raise StageError(driver.source.refusal())  # the last job writes the tables
        return backend.dry_run() if args.dry_run else backend.submit(args.wait, poll)
    if args.stage:
        steps = driver.select(args.stage, args.run)
        if args.plan or args.dry_run:  # what the selection would run, nothing run
            driver.print_selection(steps)
        else:
            driver.go(steps)
        return EXIT_OK
    if args.plan or args.dry_run or (not driver.p.run_here and not args.force):
        driver.print_plan()
        if not driver.p.run_here and not (args.plan or args.dry_run):
            print(f"{PREFIX} profile {driver.p.name} is not meant for this machine "
                  f"({driver.p.requires or 'run_here = false'}): printed the plan only; "
                  f"--force runs it anyway, --scheduler slurm submits it to a cluster")
        return EXIT_OK
    driver.go()
    return EXIT_OK


def main() -> int:
    args = _parser().parse_args()
    path = args.profile if args.profile.endswith(".toml") else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "profiles", args.profile + ".toml")
    # A Slurm job at its time limit gets SIGTERM: stop like Ctrl-C (the trainer saves too).
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        return _run(args, path)
    except PipelineError as e:  # every refusal (pipeline_errors.py), caught once
        print(f"{PREFIX} error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"\n{PREFIX} interrupted: checkpoints are saved; run the same command again to "
              "resume", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
