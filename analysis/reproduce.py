#!/usr/bin/python3
"""make reproduce: train every head of a profile, dump, analyse, plot, tabulate.

    /usr/bin/python3 analysis/reproduce.py [--profile cpu] [--build build] [--plan] [--force]

Stages of each run (one head, one seed): train (the main SGD -> NT-ASGD phase), finetune, dump
(the test-set log-probabilities, batch size 1), score (the trained model before finetuning on
valid and test, when the profile asks), dyneval (when the profile asks) and analyse (rank of
the dump); then plot and tables for the whole profile. Each stage checks its outputs before it
is skipped, so re-running after an interruption (Ctrl-C, kill, reboot) resumes where it stopped:
the trainer continues from its last checkpoint. Output: <out>/<head>_s<seed>/ per run,
<out>/singular_values.{png,svg}, <out>/summary.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from repro_profile import GLOBAL_STAGES, Profile, ProfileError, Run, load_profile  # noqa: E402
import summary  # noqa: E402

PREFIX = "[reproduce]"


class StageError(RuntimeError):
    pass


def hms(seconds: float) -> str:
    if not math.isfinite(seconds) or seconds < 0:
        return "?"
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def write_json_atomically(path: str, data: object) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def read_json(path: str) -> dict | None:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def newer(path: str, *than: str) -> bool:
    """path exists and is at least as new as every existing file of `than`."""
    if not os.path.exists(path):
        return False
    t = os.path.getmtime(path)
    return all(not os.path.exists(o) or os.path.getmtime(o) <= t for o in than)


def dump_is_valid(run_dir: str) -> bool:
    """final.json and logprobs.h5 agree: complete row count, the same test perplexity."""
    final = read_json(os.path.join(run_dir, "final.json"))
    h5 = os.path.join(run_dir, "logprobs.h5")
    if not final or not os.path.exists(h5):
        return False
    try:
        import h5py
        with h5py.File(h5, "r") as f:
            rows = f["log_probs"].shape[0]
            ok = rows == int(f.attrs["num_tokens"]) and rows == f["targets"].shape[0]
            ppl = float(f.attrs["ppl"])
    except Exception:  # unreadable or truncated: redo the dump
        return False
    return ok and math.isclose(ppl, float(final["test_ppl"]), rel_tol=1e-9)


class Driver:
    def __init__(self, profile: Profile, build: str):
        self.p = profile
        self.build = build
        self.runs = profile.runs()
        self.start = time.monotonic()
        self.measured = 0.0  # seconds of the stages run by this process
        self.estimated = 0.0  # what the profile estimated for those stages
        self.threads = profile.threads or os.cpu_count() or 1
        self.bins = {
            "train_wordlm": os.path.join(build, "trainers", "train_wordlm"),
            "dyneval": os.path.join(build, "trainers", "dyneval"),
            "rank_analysis": os.path.join(build, "analysis", "rank_analysis"),
        }

    # ---- bookkeeping
    def timings(self, run: Run) -> dict:
        return read_json(os.path.join(run.dir, "stages.json")) or {}

    def record(self, run: Run, stage: str, seconds: float, finished: bool = True) -> None:
        """Adds `seconds` to the stage's time; an interrupted stage's time is kept as partial
        and counted when the stage finishes."""
        t = self.timings(run)
        partial = t.pop(stage + ".partial", {}).get("seconds", 0.0)
        if finished:
            t[stage] = {"seconds": round(seconds + partial, 1),
                        "finished": time.strftime("%FT%TZ", time.gmtime())}
        else:
            t[stage + ".partial"] = {"seconds": round(seconds + partial, 1)}
        write_json_atomically(os.path.join(run.dir, "stages.json"), t)

    def eta(self, pending: list[tuple[Run | None, str]]) -> float:
        scale = self.measured / self.estimated if self.estimated > 0 else 1.0
        return scale * sum(self.p.estimate(run, s) for run, s in pending if run is not None)

    # ---- stage checks: True when the stage's outputs are complete
    def done(self, run: Run, stage: str) -> bool:
        d = run.dir
        f = lambda name: os.path.join(d, name)  # noqa: E731
        if dump_is_valid(d):  # a finished dump implies train and finetune
            if stage in ("train", "finetune", "dump"):
                return True
        if stage in ("train", "finetune"):
            return stage in self.timings(run) and os.path.exists(f("checkpoint.pt")) and \
                os.path.exists(f("best.pt"))
        if stage == "dump":
            return False
        if stage == "score":
            s = read_json(f("score.json"))
            return bool(s and "static" in s) and newer(f("score.json"), f("best.pt"))
        if stage == "dyneval":
            s = read_json(f("dyneval.json"))
            return bool(s and "dynamic" in s) and newer(f("dyneval.json"), f("final.json"))
        if stage == "analyse":
            r = read_json(f("rank.json"))
            return bool(r and "rank" in r) and newer(f("rank.json"), f("logprobs.h5")) and \
                os.path.exists(f("logprobs.rank.h5"))
        raise ValueError(stage)

    def plot_inputs(self) -> list[str]:
        first = {}
        for run in self.runs:
            first.setdefault(run.head, os.path.join(run.dir, "logprobs.rank.h5"))
        return list(first.values())

    def global_done(self, stage: str) -> bool:
        if stage == "plot":
            prefix = os.path.join(self.p.out, "singular_values")
            return all(newer(prefix + ext, *self.plot_inputs()) for ext in (".png", ".svg"))
        return False  # tables: cheap, always rewritten from the run outputs

    # ---- commands
    def trainer_cmd(self, run: Run, until: str) -> list[str]:
        cmd = [self.bins["train_wordlm"], "--config", run.config, "--head", run.head,
               "--seed", str(run.seed), "--out", run.dir, "--threads", str(self.threads)]
        for key, value in self.p.overrides_of(run.head).items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            cmd += [f"--{key}", text]
        cmd += ["--until", until]
        if os.path.exists(os.path.join(run.dir, "checkpoint.pt")):
            cmd.append("--resume")
        return cmd

    def execute(self, cmd: list[str], log_path: str, stdout_path: str | None = None) -> None:
        """Runs cmd, echoing its output and appending it to log_path; with stdout_path, stdout
        (a JSON document) goes to that file atomically instead and stderr is echoed."""
        print(f"{PREFIX} $ {' '.join(cmd)}", flush=True)
        with open(log_path, "a") as log:
            log.write(f"$ {' '.join(cmd)}\n")
            log.flush()
            proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE if stdout_path else subprocess.STDOUT, text=True)
            stream = proc.stderr if stdout_path else proc.stdout
            captured = []
            if stdout_path:
                import threading
                reader = threading.Thread(target=lambda: captured.append(proc.stdout.read()))
                reader.start()
            try:
                for line in stream:
                    sys.stdout.write(line)
                    sys.stdout.flush()
                    log.write(line)
                code = proc.wait()
            except KeyboardInterrupt:  # the child got the SIGINT too: let it save and exit
                code = proc.wait()
                raise
            if stdout_path:
                reader.join()
        if code == 130 or code == -signal.SIGINT:
            raise KeyboardInterrupt
        if code != 0:
            raise StageError(f"exit status {code} from {os.path.basename(cmd[0])}; its output "
                             f"is in {log_path}")
        if stdout_path:
            tmp = f"{stdout_path}.tmp{os.getpid()}"
            with open(tmp, "w") as f:
                f.write(captured[0] if captured else "")
            os.replace(tmp, stdout_path)

    def run_stage(self, run: Run, stage: str) -> None:
        os.makedirs(run.dir, exist_ok=True)
        log = os.path.join(run.dir, "reproduce.log")
        d = run.dir
        if stage in ("train", "finetune"):
            self.execute(self.trainer_cmd(run, stage), log)
        elif stage == "dump":
            self.execute(self.trainer_cmd(run, "dump"), log)
            if not dump_is_valid(d):
                raise StageError(f"{d}/logprobs.h5 and final.json disagree after the dump")
        elif stage == "score":
            config_bptt = summary.config_value(os.path.join(d, "config.toml"), "bptt", 70)
            self.execute([self.bins["dyneval"], "--run", d, "--weights",
                          os.path.join(d, "best.pt"), "--static-only", "--bptt",
                          str(config_bptt), "--threads", str(self.threads), "--out",
                          os.path.join(d, "score.json")], log)
        elif stage == "dyneval":
            args = [str(a) for a in self.p.dyneval.get("args", [])]
            self.execute([self.bins["dyneval"], "--run", d, "--threads", str(self.threads)] +
                         args, log)
        elif stage == "analyse":
            a = self.p.analysis
            cmd = [self.bins["rank_analysis"], os.path.join(d, "logprobs.h5"), "--method",
                   str(a.get("method", "auto")), "--json", "--threads", str(self.threads),
                   "--out", os.path.join(d, "logprobs.rank.h5")]
            if a.get("check", True):
                cmd.append("--check")
            self.execute(cmd, log, stdout_path=os.path.join(d, "rank.json"))

    def run_global(self, stage: str, timings: dict) -> None:
        if stage == "plot":
            inputs = self.plot_inputs()
            first = read_json(os.path.join(self.runs[0].dir, "rank.json")) or {}
            title = (f"{self.p.name} profile: {first.get('dataset', '?')} test set, "
                     f"T = {first.get('T', '?')}, M = {first.get('M', '?')}, "
                     f"d = {first.get('d', '?')}")
            self.execute(["/usr/bin/python3", os.path.join(os.path.dirname(__file__),
                                                           "plot_singular_values.py"),
                          *inputs, "--out", os.path.join(self.p.out, "singular_values"),
                          "--title", title], os.path.join(self.p.out, "reproduce.log"))
        else:
            path = summary.write_summary(self.p, self.runs, timings)
            print(f"{PREFIX} wrote {path}", flush=True)

    # ---- the loop
    def plan(self) -> list[tuple[Run | None, str]]:
        steps: list[tuple[Run | None, str]] = [(r, s) for r in self.runs for s in r.stages]
        return steps + [(None, s) for s in GLOBAL_STAGES]

    def print_plan(self) -> None:
        p = self.p
        print(f"profile {p.name} ({p.path}): {p.description}")
        print(f"  {p.scaled_down}")
        if p.requires:
            print(f"  requires: {p.requires}")
        print(f"  output: {p.out}/; {len(self.runs)} runs, {self.threads} threads each")
        for i, run in enumerate(self.runs, 1):
            print(f"  run {i}/{len(self.runs)}: {run.label}: {' -> '.join(run.stages)}")
            print(f"    {' '.join(self.trainer_cmd(run, 'dump'))}")
        print(f"  then: {' -> '.join(GLOBAL_STAGES)}")
        est = sum(self.p.estimate(r, s) for r, s in self.plan() if r is not None)
        print(f"  estimated time before any measurement: {hms(est)}")

    def check_binaries(self) -> None:
        for name, path in self.bins.items():
            if not os.access(path, os.X_OK):
                raise StageError(f"{path} not built: run `make build` (or pass --build DIR)")

    def go(self) -> None:
        self.check_binaries()
        os.makedirs(self.p.out, exist_ok=True)
        steps = self.plan()
        global_timings = read_json(os.path.join(self.p.out, "stages.json")) or {}
        for i, (run, stage) in enumerate(steps):
            where = f"run {self.runs.index(run) + 1}/{len(self.runs)} {run.label}" if run \
                else "profile"
            head = f"{PREFIX} {self.p.name} step {i + 1}/{len(steps)} | {where} | {stage}"
            done = self.done(run, stage) if run else self.global_done(stage)
            if done:
                print(f"{head}: outputs present, skipped", flush=True)
                continue
            pending = [s for s in steps[i:] if not (s[0] and self.done(*s))]
            print(f"{head} | elapsed {hms(time.monotonic() - self.start)} | ETA "
                  f"{hms(self.eta(pending))}", flush=True)
            t0 = time.monotonic()
            if run:
                try:
                    self.run_stage(run, stage)
                except KeyboardInterrupt:
                    self.record(run, stage, time.monotonic() - t0, finished=False)
                    raise
                seconds = time.monotonic() - t0
                self.record(run, stage, seconds)
                self.measured += seconds
                self.estimated += self.p.estimate(run, stage)
            else:
                if stage == "tables":
                    global_timings["tables"] = {"seconds": 0.0}
                self.run_global(stage, global_timings)
                global_timings[stage] = {"seconds": round(time.monotonic() - t0, 1)}
                write_json_atomically(os.path.join(self.p.out, "stages.json"), global_timings)
            print(f"{head}: done in {hms(time.monotonic() - t0)}", flush=True)
        print(f"{PREFIX} {self.p.name}: finished in {hms(time.monotonic() - self.start)}; "
              f"see {os.path.join(self.p.out, 'summary.md')}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Profiles: analysis/profiles/{smoke,cpu,paper}.toml. Re-running resumes.")
    ap.add_argument("--profile", default="cpu",
                    help="a name from analysis/profiles/ or a path to a profile TOML (default cpu)")
    ap.add_argument("--build", default="build", help="the CMake build directory (default build)")
    ap.add_argument("--out", default=None,
                    help="output directory instead of the profile's `out` (tests use this)")
    ap.add_argument("--plan", action="store_true", help="print the plan and exit")
    ap.add_argument("--force", action="store_true",
                    help="run a profile marked run_here = false (e.g. paper) on this machine")
    args = ap.parse_args()
    path = args.profile if args.profile.endswith(".toml") else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "profiles", args.profile + ".toml")
    try:
        profile = load_profile(path)
        if args.out:
            profile.out = args.out
        driver = Driver(profile, args.build)
        if args.plan or (not driver.p.run_here and not args.force):
            driver.print_plan()
            if not driver.p.run_here and not args.plan:
                print(f"{PREFIX} profile {driver.p.name} is not meant for this machine "
                      f"({driver.p.requires or 'run_here = false'}): printed the plan only; "
                      f"--force runs it anyway")
            return 0
        driver.go()
    except (ProfileError, StageError) as e:
        print(f"{PREFIX} error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\n{PREFIX} interrupted: checkpoints are saved; run the same command again to "
              "resume", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
