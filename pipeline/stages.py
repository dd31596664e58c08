"""The stages of `make reproduce`, as one table: each row names a stage, says when a profile has
it, what it runs and how to tell that its outputs are complete (so a re-run skips it).

Per run (one head, one seed): the trainer stages of the profile's trainer kind (trainer_kinds.py:
train, finetune, dump for train_wordlm; train for train_nplm / train_charlm; classify for
train_classifier), score (the model before finetuning on valid and test, when the profile asks
and the kind has dyneval), dyneval (likewise), analyse (rank of the dump, for the heads whose dump
has one: head_facts.py), epoch_ranks (the rank of the first test rows after every epoch, when the
profile asks: epoch_ranks.py). Per profile: plot, epoch_plot (rank vs epoch, with epoch_ranks)
and the kind's report (tables, or classify_report). The driver (reproduce.py) walks this table;
repro_profile.py reads the stage names from it to check a profile's estimate_seconds. No row
names a trainer kind: each asks the profile's descriptor (`profile.kind`).

Every `run` and `done` function takes the driver `d` (its profile `d.p`, binaries `d.bins`,
threads `d.threads`, `d.execute(cmd, log)`) and the run (None for the profile-wide stages).
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Callable

import head_facts
from run_outputs import outputs_complete


class StageError(RuntimeError):
    pass


@dataclasses.dataclass(frozen=True)
class Stage:
    name: str
    per_run: bool  # once per (head, seed), else once per profile after every run
    enabled: Callable[[object], bool]  # profile -> is the stage in its plan
    run: Callable[[object, object], None]  # (driver, run) -> runs it, raises StageError
    done: Callable[[object, object], bool]  # (driver, run) -> its outputs are complete
    head_cost: bool = False  # its time scales with the head's cost (estimate_seconds.mixture_cost)
    # The earlier stages of the same run whose outputs it reads: a scheduler may start it once
    # those are done (pipeline/slurm.py: --dependency=afterok). The profile stages come after
    # every run's stages.
    after: tuple[str, ...] = ()
    # It reads the run's dump: it also waits for the trainer stage that writes it (the profile's
    # trainer kind's last stage: dump, train or classify).
    after_dump: bool = False
    # (profile, run) -> whether this run has the stage (per-run stages; default: every run)
    applies: Callable[[object, object], bool] = lambda _p, _r: True
    report: bool = False  # writes summary.md (it counts its own time as 0 while it writes)

    def needs(self, profile) -> tuple[str, ...]:
        """The earlier stages of the same run whose outputs it reads, for this profile."""
        return self.after + ((profile.kind.dump_stage,) if self.after_dump else ())


# ---- helpers

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


def epoch_dump_rows(profile) -> int:
    return int(profile.epoch_ranks.get("rows", 0))


def write_json_atomically(path: str, data: object) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def plot_inputs(d) -> list[str]:
    """The rank result of each head's first seed."""
    first: dict[str, str] = {}
    for run in d.runs:
        first.setdefault(run.head, os.path.join(run.dir, "logprobs.rank.h5"))
    return list(first.values())


def _in(run, name: str) -> str:
    return os.path.join(run.dir, name)


# ---- run and done functions, stage by stage

def _trainer_done(stage: str) -> Callable:
    """A trainer stage is done when the run's outputs are complete (final.json and the dump: a
    finished dump implies every earlier stage), or, for a stage before the kind's last, when
    stages.json records it and both checkpoints exist."""
    def done(d, run) -> bool:
        kind = d.p.kind
        if outputs_complete(run.dir, kind.name):
            return True
        if stage == kind.dump_stage:  # the stage that writes them: done only with them
            return False
        return stage in d.timings(run) and os.path.exists(_in(run, "checkpoint.pt")) and \
            os.path.exists(_in(run, "best.pt"))
    return done


def _trainer_run(stage: str) -> Callable:
    """Runs the kind's command for the stage; after its last stage the outputs must agree."""
    def run_it(d, run) -> None:
        kind = d.p.kind
        d.execute(kind.command(d, run, stage), d.log_of(run))
        if stage == kind.dump_stage and not outputs_complete(run.dir, kind.name):
            raise StageError(f"{run.dir}/final.json and logprobs.h5 incomplete or disagreeing "
                             f"after {kind.binary}")
    return run_it


def _score(d, run) -> None:
    import summary  # config_value: the run's effective bptt
    bptt = summary.config_value(_in(run, "config.toml"), "bptt", 70)
    d.execute([d.bins["dyneval"], "--run", run.dir, "--weights", _in(run, "best.pt"),
               "--static-only", "--bptt", str(bptt), "--threads", str(d.threads),
               "--out", _in(run, "score.json")], d.log_of(run))


def _score_done(d, run) -> bool:
    s = read_json(_in(run, "score.json"))
    return bool(s and "static" in s) and newer(_in(run, "score.json"), _in(run, "best.pt"))


def _dyneval(d, run) -> None:
    args = [str(a) for a in d.p.dyneval.get("args", [])]
    d.execute([d.bins["dyneval"], "--run", run.dir, "--threads", str(d.threads)] + args,
              d.log_of(run))


def _dyneval_done(d, run) -> bool:
    s = read_json(_in(run, "dyneval.json"))
    return bool(s and "dynamic" in s) and newer(_in(run, "dyneval.json"), _in(run, "final.json"))


def _analyse(d, run) -> None:
    a = d.p.analysis
    cmd = [d.bins["rank_analysis"], _in(run, "logprobs.h5"), "--method",
           str(a.get("method", "auto")), "--json", "--threads", str(d.threads),
           "--out", _in(run, "logprobs.rank.h5")]
    if a.get("check", True):
        cmd.append("--check")
    d.execute(cmd, d.log_of(run), stdout_path=_in(run, "rank.json"))


def _analyse_done(d, run) -> bool:
    r = read_json(_in(run, "rank.json"))
    return bool(r and "rank" in r) and newer(_in(run, "rank.json"), _in(run, "logprobs.h5")) \
        and os.path.exists(_in(run, "logprobs.rank.h5"))


def _epoch_ranks(d, run) -> None:
    import epoch_ranks as er
    opts = d.p.epoch_ranks
    epochs = er.dumped_epochs(run.dir)
    if not epochs:
        raise StageError(f"{run.dir}/metrics.jsonl reports no epoch dumps (epoch_ranks.rows = "
                         f"{epoch_dump_rows(d.p)}): was the run trained before the profile asked "
                         "for them? Train it again in a fresh --out")
    for phase, epoch in epochs:
        if er.rank_is_current(run.dir, phase, epoch):
            continue
        base = os.path.join(er.epochs_dir(run.dir), er.stem(phase, epoch))
        if not os.path.exists(base + ".h5"):
            raise StageError(f"{base}.h5 is missing and has no rank result: train the run again "
                             "in a fresh --out")
        d.execute([d.bins["rank_analysis"], base + ".h5", "--method",
                   str(opts.get("method", "exact")), "--json", "--check", "--quiet",
                   "--threads", str(d.threads), "--out", base + ".rank.h5"],
                  d.log_of(run), stdout_path=base + ".rank.json")
        if not opts.get("keep_dumps", False):
            os.remove(base + ".h5")  # the singular values stay in .rank.h5
    write_json_atomically(_in(run, "rank_vs_epoch.json"), er.collect(run.dir, run.head, run.seed))


def _epoch_ranks_done(_d, run) -> bool:
    import epoch_ranks as er
    return er.is_complete(run.dir)


def _epoch_plot_inputs(d) -> list[str]:
    return [os.path.join(r.dir, "rank_vs_epoch.json") for r in d.runs]


def _epoch_plot(d, _run) -> None:
    d.execute(["/usr/bin/python3", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                "plot_rank_vs_epoch.py"),
               *_epoch_plot_inputs(d), "--out", os.path.join(d.p.out, "rank_vs_epoch"),
               "--title", f"{d.p.name} profile: rank of the first test rows after every epoch"],
              os.path.join(d.p.out, "reproduce.log"))


def _epoch_plot_done(d, _run) -> bool:
    prefix = os.path.join(d.p.out, "rank_vs_epoch")
    return all(newer(prefix + ext, *_epoch_plot_inputs(d)) for ext in (".png", ".svg"))


def _plot(d, _run) -> None:
    first = read_json(os.path.join(d.runs[0].dir, "rank.json")) or {}
    title = (f"{d.p.name} profile: {first.get('dataset', '?')} test set, "
             f"T = {first.get('T', '?')}, M = {first.get('M', '?')}, d = {first.get('d', '?')}")
    d.execute(["/usr/bin/python3", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                "plot_singular_values.py"),
               *plot_inputs(d), "--out", os.path.join(d.p.out, "singular_values"),
               "--title", title], os.path.join(d.p.out, "reproduce.log"))


def _plot_done(d, _run) -> bool:
    prefix = os.path.join(d.p.out, "singular_values")
    return all(newer(prefix + ext, *plot_inputs(d)) for ext in (".png", ".svg"))


def _report(d, _run) -> None:
    path = d.p.kind.write_report(d.p, d.runs, d.global_timings)
    print(f"[reproduce] wrote {path}", flush=True)


def _never_done(_d, _run) -> bool:
    return False  # cheap, always rewritten from the run outputs


def _has(stage: str) -> Callable[[object], bool]:
    """Whether the profile's trainer kind has this trainer stage."""
    return lambda p: stage in p.kind.stages


def _reports_in(stage: str) -> Callable[[object], bool]:
    """Whether the profile's trainer kind writes its summary.md in this stage."""
    return lambda p: p.kind.report_stage == stage


def _epoch_dumps(p) -> bool:
    return p.kind.epoch_dumps and epoch_dump_rows(p) > 0


def _analysed_run(p, run) -> bool:
    """The run's dump has a rank (its head is a registry head whose log-output cannot be -inf:
    rank_analysis --list-heads) and the profile analyses this seed."""
    return head_facts.registry().rank_defined(run.head) and p.analysed(run)


# Local order = table order. The trainer stages (train, finetune, dump for train_wordlm; train for
# train_nplm / train_charlm; classify for train_classifier) are the kind's (trainer_kinds.py).
# Data dependencies (`after`): finetune restarts from best.pt and the checkpoint of train; the
# dump reads the finetuned model; score reads best.pt, which finetuning does not rewrite (it
# writes best_finetune.pt); dyneval reads final.json and best_finetune.pt; analyse reads the dump
# (`after_dump`: the kind's last trainer stage); epoch_ranks the epoch dumps of finetune.
STAGES: tuple[Stage, ...] = (
    Stage("train", True, _has("train"), _trainer_run("train"), _trainer_done("train"),
          head_cost=True),
    Stage("finetune", True, _has("finetune"), _trainer_run("finetune"),
          _trainer_done("finetune"), head_cost=True, after=("train",)),
    Stage("dump", True, _has("dump"), _trainer_run("dump"), _trainer_done("dump"),
          head_cost=True, after=("finetune",)),
    Stage("classify", True, _has("classify"), _trainer_run("classify"),
          _trainer_done("classify"), head_cost=True),
    Stage("score", True, lambda p: p.kind.dyneval and p.score_after_training, _score,
          _score_done, head_cost=True, after=("train",)),
    Stage("dyneval", True, lambda p: p.kind.dyneval and bool(p.dyneval.get("enabled", False)),
          _dyneval, _dyneval_done, head_cost=True, after_dump=True),
    Stage("analyse", True, lambda _p: True, _analyse, _analyse_done, after_dump=True,
          applies=_analysed_run),
    Stage("epoch_ranks", True, _epoch_dumps, _epoch_ranks, _epoch_ranks_done,
          after=("finetune",)),
    Stage("plot", False, lambda p: p.kind.singular_value_plot, _plot, _plot_done),
    Stage("epoch_plot", False, _epoch_dumps, _epoch_plot, _epoch_plot_done),
    Stage("tables", False, _reports_in("tables"), _report, _never_done, report=True),
    Stage("classify_report", False, _reports_in("classify_report"), _report, _never_done,
          report=True),
)
STAGE_NAMES = tuple(s.name for s in STAGES)
