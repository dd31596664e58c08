"""What the pipeline knows about a trainer kind, so that the stage table (stages.py), the driver
(reproduce.py) and the Slurm backend look a kind up instead of branching on its name.

Every fact a trainer binary can give comes from the binary: `train_<kind> --describe --json`
(trainers/runkit/trainer_descriptor.h) names its stages (and whether each is `--until STAGE` of
one resumable command), the files each stage hands to the next, the model final.json describes,
its own heads, whether it takes --epoch_dump_rows and whether dyneval scores its runs; and which
heads it takes, computed by the trainer's own `validate` over the run's config and overrides (so a
profile is refused when it is loaded, by the same rule the trainer would apply hours later). The
binaries are found in the build's trainers/ folder (`use`); a kind is any train_<kind> there that
describes itself, so a new trainer needs no edit here.

What stays here is the pipeline's own: which report a kind's runs feed (REPORTS: the stage that
writes summary.md, the function, whether the profile plots singular values). A kind without a row
gets the generic seed report (seed_summary.write_generic_summary).

The trainer's last stage writes final.json and the dump; it is done when run_outputs.py finds
them complete (final_json.py) and the model final.json describes is in the run directory. An
earlier stage (train, finetune of train_wordlm) is done when the files it hands to the next stage
are there (`hands_on`).
"""

from __future__ import annotations

from pipeline_errors import PipelineError
import contextlib
import dataclasses
import functools
import hashlib
import importlib
import json
import os
import subprocess

from atomic_io import write_json_atomically

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_trainers = os.path.join(ROOT, "build", "trainers")


class TrainerKindError(PipelineError, ValueError):
    """A trainer binary that is missing or does not describe itself: one line naming it."""


@dataclasses.dataclass(frozen=True)
class Report:
    stage: str  # the profile stage that writes summary.md: tables or classify_report
    function: tuple[str, str]  # (module, function): f(profile, runs, global_timings) -> path
    singular_value_plot: bool  # the profile stage `plot` (first seed's singular values)


# The pipeline's own fact about each kind: the report its runs feed.
REPORTS: dict[str, Report] = {
    "wordlm": Report("tables", ("summary", "write_summary"), True),
    "nplm": Report("tables", ("seed_summary", "write_nplm_summary"), True),
    "charlm": Report("tables", ("seed_summary", "write_charlm_summary"), True),
    "classifier": Report("classify_report", ("classify_summary", "write_summary"), False),
}
GENERIC_REPORT = Report("tables", ("seed_summary", "write_generic_summary"), True)


@dataclasses.dataclass(frozen=True)
class TrainerKind:
    name: str  # the profile's `trainer`, final.json's "trainer"
    path: str  # the binary
    summary: str
    stages: tuple[str, ...]  # its trainer stages in order; the last writes final.json + the dump
    until: bool  # each stage is `--until STAGE` of one resumable command (else one command)
    epoch_dumps: bool  # takes --epoch_dump_rows: the epoch_ranks and epoch_plot stages
    dyneval: bool  # its runs can be scored and dynamically evaluated by the dyneval binary
    dumps_logprobs: bool  # its last stage writes logprobs.h5
    hands_on: dict  # the files each stage before the last hands to the next one
    best_weights: str  # the model final.json describes, where it does not name one
    own_heads: tuple[str, ...]  # outputs of its own besides the registry heads (mse)
    keys: tuple[str, ...]  # its config keys

    @property
    def binary(self) -> str:
        return "train_" + self.name

    @property
    def binaries(self) -> tuple[str, ...]:
        """The binaries its stages run, besides rank_analysis (reproduce.py checks them)."""
        return (self.binary,) + (("dyneval",) if self.dyneval else ())

    @property
    def dump_stage(self) -> str:
        """The trainer stage that writes final.json and logprobs.h5 (analyse waits for it)."""
        return self.stages[-1]

    @property
    def report(self) -> Report:
        return REPORTS.get(self.name, GENERIC_REPORT)

    @property
    def report_stage(self) -> str:
        return self.report.stage

    @property
    def singular_value_plot(self) -> bool:
        return self.report.singular_value_plot and self.dumps_logprobs

    def command(self, d, run, stage: str) -> list[str]:
        """The trainer command of `run` for one of its stages: the run's config, head, seed,
        directory and threads, the profile's overrides for the head, then what the kind takes
        (--epoch_dump_rows, --until), and --resume where a checkpoint exists."""
        cmd = [d.bins[self.binary], "--config", run.config, "--head", run.head,
               "--seed", str(run.seed), "--out", run.dir, "--threads", str(d.threads)]
        cmd += override_args(d.p.run_overrides(run))
        rows = int(d.p.epoch_ranks.get("rows", 0))
        if self.epoch_dumps and rows:
            cmd += ["--epoch_dump_rows", str(rows)]
        if self.until:
            cmd += ["--until", stage]
        if os.path.exists(os.path.join(run.dir, "checkpoint.pt")):
            cmd.append("--resume")
        return cmd

    def refusals(self, config: str, overrides: dict, heads: list[str]) -> dict[str, str]:
        """Why the trainer refuses each head with this config file and these overrides ("" =
        takes it): its own validate, through --describe. Raises TrainerKindError when the
        settings themselves do not parse (an unknown key, a value of the wrong type)."""
        answer = _describe(self.path, config, tuple(override_args(overrides)), tuple(heads))
        return {h: answer["heads"][h]["why"] for h in heads}

    def write_report(self, profile, runs, global_timings: dict) -> str:
        """Writes <out>/summary.md with the kind's report function; returns its path."""
        module, function = self.report.function
        return getattr(importlib.import_module(module), function)(profile, runs, global_timings)


def override_args(overrides: dict) -> list[str]:
    """--key value pairs as the trainers read them (booleans lower case)."""
    out = []
    for key, value in overrides.items():
        out += [f"--{key}", str(value).lower() if isinstance(value, bool) else str(value)]
    return out


def use(trainers_dir: str) -> None:
    """Reads the trainers of this folder from now on (the driver's --build/trainers)."""
    global _trainers
    _trainers = os.path.abspath(trainers_dir)


def known() -> list[str]:
    """The kinds whose binaries are in the folder in use (train_<kind>)."""
    try:
        names = sorted(os.listdir(_trainers))
    except OSError:
        return []
    return [n[len("train_"):] for n in names if n.startswith("train_") and
            os.access(os.path.join(_trainers, n), os.X_OK)]


def kind(name: str) -> TrainerKind:
    """The kind `name` as its binary describes itself (read once per binary)."""
    return _kind(os.path.join(_trainers, "train_" + name), name)


@functools.lru_cache(maxsize=None)
def _kind(path: str, name: str) -> TrainerKind:
    d = _describe(path, "", (), ())
    if d.get("kind") != name:
        raise TrainerKindError(f"{path} --describe --json: kind {d.get('kind')!r}, expected "
                               f"{name!r} (a binary is train_<its kind>)")
    return TrainerKind(
        name=name, path=path, summary=d["summary"], stages=tuple(d["stages"]),
        until=d["until"], epoch_dumps=d["epoch_dumps"], dyneval=d["dyneval"],
        dumps_logprobs=d["dumps_logprobs"],
        hands_on={s: tuple(f) for s, f in d["hands_on"].items()},
        best_weights=d["best_weights"], own_heads=tuple(d["own_heads"]),
        keys=tuple(k["name"] for k in d["keys"]))


@functools.lru_cache(maxsize=None)
def _describe(path: str, config: str, args: tuple, heads: tuple) -> dict:
    if not os.access(path, os.X_OK):
        raise TrainerKindError(f"no {path}: run `make build` (or pass --build DIR)")
    cmd = [path, "--describe", "--json"] + (["--config", config] if config else []) + \
        list(args) + [a for h in heads for a in ("--describe-heads", h)]
    returncode, stdout, stderr = _answer(cmd, config)
    if returncode != 0:
        last = (stderr.strip().splitlines() or [f"exit status {returncode}"])[-1]
        raise TrainerKindError(f"{os.path.basename(path)} refuses these settings: {last}")
    try:
        return json.loads(stdout)
    except ValueError:
        raise TrainerKindError(f"{' '.join(cmd)}: not one JSON object") from None


def _answer(cmd: list[str], config: str) -> tuple[int, str, str]:
    """The describe command's exit status, stdout and stderr, kept on disk beside the binary.

    Starting a LibTorch binary costs ~0.6 s of CPU (its libraries' relocations and operator
    registration), and every driver invocation asks each kind once bare and once per config
    and override set: a profile's load was ~3 s of describes. The answer depends only on the
    binary, the command line and the config file's bytes (validate reads nothing else), so
    those are the key: a rebuilt binary (other size, mtime, ctime or inode) or an edited
    config asks again. Only a description (exit 0) is kept: a refusal (exit 2) is asked again,
    since the trainer's one mapping of errors also gives 2 to a passing failure (out of memory,
    a config it could not read), and a crash is never an answer; an unwritable folder only
    means no cache."""
    st = os.stat(cmd[0])
    key = hashlib.sha256(json.dumps([os.path.realpath(cmd[0]), st.st_size, st.st_mtime_ns,
                                     st.st_ctime_ns, st.st_ino, cmd]).encode())
    if config:
        try:
            with open(config, "rb") as f:
                key.update(f.read())
        except OSError:
            key.update(b"\0unreadable")
    cached = os.path.join(os.path.dirname(cmd[0]), ".describe", key.hexdigest()[:32] + ".json")
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        with open(cached) as f:
            a = json.load(f)
        return int(a["returncode"]), str(a["stdout"]), str(a["stderr"])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return r.returncode, r.stdout, r.stderr
    with contextlib.suppress(OSError):
        os.makedirs(os.path.dirname(cached), exist_ok=True)
        write_json_atomically(cached, {"command": cmd, "returncode": r.returncode,
                                       "stdout": r.stdout, "stderr": r.stderr})
    return r.returncode, r.stdout, r.stderr
