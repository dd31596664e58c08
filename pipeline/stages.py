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

from pipeline_errors import PipelineError
import dataclasses
import math
import os
import time
from typing import Callable

from atomic_io import write_json_atomically
from final_json import read_final
from run_config import run_config_value
import run_outputs
from run_outputs import (COMMITTED, DUMP_REMOVED, analysed_run as _analysed_run,  # noqa: F401
                         committed_result, config_mismatch, dump_removed, epoch_dump_rows,
                         model_of as _model_of, outputs_complete, read_json, removal_record)
from analyse_command import analyse_command, mpi_launcher  # noqa: F401 (tests reach them here)


class StageError(PipelineError, RuntimeError):
    pass


@dataclasses.dataclass(frozen=True)
class Stage:
    name: str
    per_run: bool  # once per (head, seed), else once per profile after every run
    enabled: Callable[[object], bool]  # profile -> is the stage in its plan
    run: Callable[[object, object], None]  # (driver, run) -> runs it, raises StageError
    done: Callable[[object, object], "Check"]  # (driver, run) -> its outputs are complete, why
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

def newer(path: str, *than: str) -> bool:
    """path exists and is at least as new as every existing file of `than`."""
    if not os.path.exists(path):
        return False
    t = os.path.getmtime(path)
    return all(not os.path.exists(o) or os.path.getmtime(o) <= t for o in than)


def plotted_runs(d) -> list:
    """The runs the plot draws (run_outputs.plotted_runs)."""
    return run_outputs.plotted_runs(d.p, d.runs)


def plot_inputs(d) -> list[str]:
    """The rank result of each analysed head's first seed."""
    return [os.path.join(run.dir, "logprobs.rank.h5") for run in plotted_runs(d)]


def _in(run, name: str) -> str:
    return os.path.join(run.dir, name)


# ---- what a done-check answers

class Check:
    """A done-check's answer: `ok` when the stage's outputs are complete and valid in this
    checkout (the files the next stage reads), and `why`, what the driver prints after
    "skipped" or before "running": the files that prove it, or what is missing. True/False as
    a bool (the Slurm backend asks only that)."""

    def __init__(self, ok: bool, why: str):
        self.ok, self.why = ok, why

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return f"Check({self.ok}, {self.why!r})"


def _stamp(path: str) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(os.path.getmtime(path)))


def present(run_dir: str, names: list[str], note: str = "") -> Check:
    """Done: `names` exist in run_dir; why = the names and the newest one's time."""
    newest = max((os.path.join(run_dir, n) for n in names), key=os.path.getmtime)
    return Check(True, f"{', '.join(names)}{note}, {_stamp(newest)}")


def lacking(run_dir: str, names: list[str], also: tuple[str, ...] = ()) -> Check:
    """Not done: "<dir> has A, B but no C, D" over `also` + `names` (C, D: the missing ones)."""
    names = list(dict.fromkeys(also + tuple(names)))
    has = [n for n in names if os.path.exists(os.path.join(run_dir, n))]
    lacks = [n for n in names if n not in has]
    if not has:
        return Check(False, f"{run_dir} has no {', '.join(lacks)} yet")
    return Check(False, f"{run_dir} has {', '.join(has)} but no {', '.join(lacks)}")


# ---- the run's settings against the profile

def _check_settings(d, run) -> None:
    """Refuses to skip or resume a run whose files were made with other settings."""
    if not (os.path.exists(_in(run, "checkpoint.pt")) or os.path.exists(_in(run, "logprobs.h5"))):
        return  # nothing to reuse: the trainer starts the run from the beginning
    why = config_mismatch(d, run)
    if why:
        raise StageError(f"{run.dir}/config.toml: {why} ({d.p.path}): the run in {run.dir} was "
                         "made with other settings; move it away or pass --out DIR")


# ---- run and done functions, stage by stage

def _outputs_check(d, run) -> Check:
    """The kind's last trainer stage: final.json and the dump agree (run_outputs.py) and the
    model they describe is in this checkout (results are committed, models are not)."""
    kind = d.p.kind
    final = read_final(_in(run, "final.json"), kind.name)
    if not final:
        return lacking(run.dir, ["final.json"], ("logprobs.h5",) if kind.name != "classifier"
                       else ())
    dump = ["logprobs.h5"] if final["dump"] else []
    if dump and not os.path.exists(_in(run, "logprobs.h5")):
        removed = removal_record(d, run)
        if not removed or removed.get("rows") != final.get("dump_rows"):
            return lacking(run.dir, dump, ("final.json",))
        model = _model_of(kind, final)  # removed after its readers: final.json and the record
        if committed_result(d, run):
            return present(run.dir, ["final.json"], COMMITTED)
        if not os.path.exists(_in(run, model)):
            return lacking(run.dir, [model], ("final.json",))
        return present(run.dir, ["final.json", model],
                       f" (logprobs.h5 removed (keep_dumps) {removed['removed']})")
    if not outputs_complete(run.dir, kind.name):
        return Check(False, f"{run.dir}/logprobs.h5 is unreadable or disagrees with final.json "
                            "(rows or ppl)")
    model = _model_of(kind, final)
    if not dump and committed_result(d, run):
        return present(run.dir, ["final.json"], COMMITTED)
    if not os.path.exists(_in(run, model)):
        return lacking(run.dir, [model], ("final.json", *dump))
    return present(run.dir, ["final.json", *dump, model],
                   " agreeing" if dump else " (no dump)")


def _hands_on(d, run, stage: str) -> tuple[str, ...]:
    """The files `stage` (before the kind's last) hands to the next one; finetune_epochs = 0
    writes no best_finetune.pt (the dump then reads best.pt)."""
    files = d.p.kind.hands_on[stage]
    if stage == "finetune" and run_config_value(run.dir, "finetune_epochs", 1) == 0:
        files = tuple(f for f in files if f != "best_finetune.pt")
    return files


def _trainer_done(stage: str) -> Callable:
    """The kind's last trainer stage is done when _outputs_check says so. An earlier one (train,
    finetune of train_wordlm) when the files it hands on exist and stages.json records it as
    finished in this run (the driver forgets those records when the run starts from the
    beginning, so a committed stages.json proves nothing), or when a later trainer stage is
    done. The run's config.toml must have the profile's settings."""
    def done(d, run) -> Check:
        kind = d.p.kind
        _check_settings(d, run)
        check = _earlier_done(d, run, stage) if stage != kind.dump_stage else \
            _outputs_check(d, run)
        if not check and stage == kind.stages[0] and \
                os.path.exists(_in(run, "final.json")) and \
                not os.path.exists(_in(run, "checkpoint.pt")):
            check.why += ("; the run is trained again from the beginning and its final.json "
                          "and the results computed from it are replaced")
        return check
    return done


def _earlier_done(d, run, stage: str) -> Check:
    """A trainer stage before the kind's last (_trainer_done)."""
    kind = d.p.kind
    last = _outputs_check(d, run)
    if last:
        return Check(True, f"{kind.dump_stage}'s outputs are complete: {last.why}")
    for later in kind.stages[kind.stages.index(stage) + 1:-1]:  # a finished later stage
        check = done_by_own_files(d, run, later)  # implies this one
        if check:
            return Check(True, f"{later} is done: {check.why}")
    check = done_by_own_files(d, run, stage)
    if check:
        return check
    files = _hands_on(d, run, stage)
    if all(os.path.exists(_in(run, f)) for f in files):
        return Check(False, f"{run.dir} has {', '.join(files)} but stages.json does not "
                            f"record {stage} as finished (interrupted)")
    # A final.json without its dump (a committed result) is named beside the missing files.
    committed = ("final.json", "logprobs.h5") if os.path.exists(_in(run, "final.json")) else ()
    return lacking(run.dir, list(files), committed)


def done_by_own_files(d, run, stage: str) -> Check:
    """A stage before the kind's last: its hand-on files exist and stages.json records it."""
    files = _hands_on(d, run, stage)
    if stage in d.timings(run) and all(os.path.exists(_in(run, f)) for f in files):
        return present(run.dir, list(files))
    return Check(False, "")


def _trainer_run(stage: str) -> Callable:
    """Runs the kind's command for the stage; after its last stage the outputs must agree. A
    run that starts from the beginning (no checkpoint.pt) first forgets the trainer stages that
    stages.json recorded (a committed result's, or an earlier run's in this directory)."""
    def run_it(d, run) -> None:
        kind = d.p.kind
        if not os.path.exists(_in(run, "checkpoint.pt")):
            d.forget(run, kind.stages)
        d.execute(kind.command(d, run, stage), d.log_of(run))
        if stage == kind.dump_stage and not outputs_complete(run.dir, kind.name):
            raise StageError(f"{run.dir}/final.json and logprobs.h5 incomplete or disagreeing "
                             f"after {kind.binary}")
    return run_it


def _score(d, run) -> None:
    if not os.path.exists(_in(run, "best.pt")):
        raise StageError(f"{run.dir}/best.pt (the model before finetuning, which score reads) "
                         "is missing: train the run again (move its directory away)")
    bptt = run_config_value(run.dir, "bptt", 70)  # the run's effective bptt
    d.execute([d.bins["dyneval"], "--run", run.dir, "--weights", _in(run, "best.pt"),
               "--static-only", "--bptt", str(bptt), "--threads", str(d.threads),
               "--out", _in(run, "score.json")], d.log_of(run))


def _derived(run_dir: str, out: str, valid: bool, inputs: list[str]) -> Check:
    """A result computed from `inputs` of the same run: valid, every input there, and newer."""
    if not valid:
        return lacking(run_dir, [out]) if not os.path.exists(os.path.join(run_dir, out)) else \
            Check(False, f"{run_dir}/{out} is incomplete")
    missing = [i for i in inputs if not os.path.exists(os.path.join(run_dir, i))]
    if missing:
        return Check(False, f"{run_dir} has {out} but no {', '.join(missing)}, which it was "
                            "computed from")
    if not newer(os.path.join(run_dir, out), *(os.path.join(run_dir, i) for i in inputs)):
        return Check(False, f"{run_dir}/{out} is older than {', '.join(inputs)}")
    return present(run_dir, [out], f" newer than {', '.join(inputs)}")


def _score_done(d, run) -> Check:
    s = read_json(_in(run, "score.json"))
    if s and "static" in s and committed_result(d, run):
        return present(run.dir, ["score.json"], COMMITTED)
    return _derived(run.dir, "score.json", bool(s and "static" in s), ["best.pt"])


def _dyneval_args(d) -> list[str]:
    """The profile's dyneval arguments as the command line gets them."""
    return [str(a) for a in d.p.dyneval.get("args", [])]


def _dyneval(d, run) -> None:
    d.execute([d.bins["dyneval"], "--run", run.dir, "--threads", str(d.threads)] +
              _dyneval_args(d), d.log_of(run))


def dyneval_setting_change(args: list[str], options: dict) -> str:
    """What differs between the profile's dyneval arguments (`--eps 2e-5 ...`) and the options
    a dyneval.json records it was made with ("" when nothing does): a changed setting makes the
    result stale, whatever the files' times say. Only the numeric keys the file records."""
    changed = []
    for flag, value in zip(args, args[1:]):
        key = flag[2:].replace("-", "_") if flag.startswith("--") else ""
        if key in options and isinstance(options[key], (int, float)):
            try:
                asked = float(value)
            except ValueError:
                continue
            if not math.isclose(asked, float(options[key]), rel_tol=1e-9, abs_tol=0.0):
                changed.append(f"{key} {options[key]:g}, the profile asks for {asked:g}")
    return "; ".join(changed)


def _dyneval_done(d, run) -> Check:
    s = read_json(_in(run, "dyneval.json"))
    changed = dyneval_setting_change(_dyneval_args(d), (s or {}).get("options", {}))
    if s and "dynamic" in s and changed:
        return Check(False, f"{run.dir}/dyneval.json was made with {changed}")
    if s and "dynamic" in s and committed_result(d, run):
        return present(run.dir, ["dyneval.json"], COMMITTED)
    final = read_final(_in(run, "final.json"), d.p.kind.name) or {}
    return _derived(run.dir, "dyneval.json", bool(s and "dynamic" in s),
                    ["final.json", _model_of(d.p.kind, final)])


def _analyse(d, run) -> None:
    a = d.p.analysis
    cmd = analyse_command(d, run)
    if a.get("check", True):
        cmd.append("--check")
    d.execute(cmd, d.log_of(run), stdout_path=_in(run, "rank.json"))


def _analyse_done(d, run) -> Check:
    r = read_json(_in(run, "rank.json"))
    if r and "rank" in r and committed_result(d, run):
        return present(run.dir, ["rank.json"], " (its singular values, logprobs.rank.h5, are "
                       "not in this checkout: a committed result)")
    if r and "rank" in r and not os.path.exists(_in(run, "logprobs.rank.h5")):
        return lacking(run.dir, ["logprobs.rank.h5"], ("rank.json",))
    if r and "rank" in r and not os.path.exists(_in(run, "logprobs.h5")) and \
            removal_record(d, run):  # removed only once rank.json was done (release_dump)
        return present(run.dir, ["rank.json"], " (its dump removed after it)")
    return _derived(run.dir, "rank.json", bool(r and "rank" in r), ["logprobs.h5"])


# ---- dumps removed once read (`[analysis] keep_dumps = false` or "analysed"); the record of a
# removal and the committed results it makes are run_outputs.py's

def release_dump(d, run) -> str:
    """With the profile's `[analysis] keep_dumps = false`: once the run's dump is complete (its
    trainer stage done, final.json agreeing) and every stage of the run that reads it is done
    (analyse, for the analysed seeds), removes logprobs.h5 and records it in stages.json
    (d.record_removed); the dump stage then counts as done on final.json, the model and the
    record. `keep_dumps = "analysed"` keeps the dumps the analysis reads (the analysed seeds')
    and removes the others. A full-test dump is T x M float32: 3.3 GB on PTB, 32.7 GB on
    WikiText-2. Returns the line to print, "" when nothing was removed."""
    path = _in(run, "logprobs.h5")
    keep = d.p.analysis.get("keep_dumps", True)
    if keep is True or not os.path.exists(path):
        return ""
    readers = _analysed_run(d.p, run)  # analyse reads the dump
    if keep == "analysed" and readers:
        return ""
    analyse = next(s for s in STAGES if s.name == "analyse")
    if not _outputs_check(d, run) or (readers and not analyse.done(d, run)):
        return ""
    final = read_final(_in(run, "final.json"), d.p.kind.name) or {}
    size = os.path.getsize(path)
    d.record_removed(run, {"rows": final.get("dump_rows"), "bytes": size})
    os.remove(path)
    setting = "false" if keep is False else '"analysed"'
    return f"removed {path} ({size / 1e9:.1f} GB; [analysis] keep_dumps = {setting})"


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


def _epoch_ranks_done(_d, run) -> Check:
    import epoch_ranks as er
    if er.is_complete(run.dir):
        return present(run.dir, ["rank_vs_epoch.json"], " (every epoch dump of metrics.jsonl "
                       "ranked)")
    return Check(False, f"{run.dir}/rank_vs_epoch.json is missing or does not list every epoch "
                        "dump of metrics.jsonl with a current rank")


def _epoch_plot_inputs(d) -> list[str]:
    return [os.path.join(r.dir, "rank_vs_epoch.json") for r in d.runs]


def _epoch_plot(d, _run) -> None:
    d.execute(["/usr/bin/python3", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                "plot_rank_vs_epoch.py"),
               *_epoch_plot_inputs(d), "--out", os.path.join(d.p.out, "rank_vs_epoch"),
               "--title", f"{d.p.name} profile: rank of the first test rows after every epoch"],
              os.path.join(d.p.out, "reproduce.log"))


def _profile_outputs(d, prefix: str, inputs: list[str]) -> Check:
    """A profile-wide plot: both files there, every input there, and newer than each."""
    outs = [os.path.join(d.p.out, prefix + ext) for ext in (".png", ".svg")]
    missing = [i for i in inputs if not os.path.exists(i)]
    if missing:
        return Check(False, f"{len(missing)} of its inputs are not in this checkout "
                            f"({', '.join(missing[:2])}{', ...' if len(missing) > 2 else ''})")
    if not all(newer(o, *inputs) for o in outs):
        return Check(False, f"{outs[0]} missing or older than its inputs")
    return Check(True, f"{prefix}.png and .svg newer than their {len(inputs)} inputs, "
                       f"{_stamp(outs[0])}")


def _epoch_plot_done(d, _run) -> Check:
    return _profile_outputs(d, "rank_vs_epoch", _epoch_plot_inputs(d))


def _plot(d, _run) -> None:
    if not plot_inputs(d):
        return  # no head with a rank (_plot_done says so)
    first = read_json(os.path.join(plotted_runs(d)[0].dir, "rank.json")) or {}
    title = (f"{d.p.name} profile: {first.get('dataset', '?')} test set, "
             f"T = {first.get('T', '?')}, M = {first.get('M', '?')}, d = {first.get('d', '?')}")
    d.execute(["/usr/bin/python3", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                "plot_singular_values.py"),
               *plot_inputs(d), "--out", os.path.join(d.p.out, "singular_values"),
               "--title", title], os.path.join(d.p.out, "reproduce.log"))


def _plot_done(d, _run) -> Check:
    """Done when the plot is newer than its inputs; not drawn (counted as done, and said so) when
    an input is a committed result's, whose singular values are not in this checkout."""
    if not plot_inputs(d):
        return Check(True, "nothing to draw: no head of the profile has a rank")
    committed = [r.dir for r in plotted_runs(d)
                 if not os.path.exists(_in(r, "logprobs.rank.h5")) and committed_result(d, r)]
    if committed:
        return Check(True, f"not drawn: {len(committed)} of its inputs are committed results "
                           f"whose logprobs.rank.h5 is not in this checkout ({committed[0]}, ...); "
                           "the committed plot, if any, stays")
    return _profile_outputs(d, "singular_values", plot_inputs(d))


def _report(d, _run) -> None:
    if d.p.sweep:  # a swept profile has runs of several settings per head and seed
        import sweep_summary
        path = sweep_summary.write_summary(d.p, d.runs, d.global_timings)
    else:
        path = d.p.kind.write_report(d.p, d.runs, d.global_timings)
    print(f"[reproduce] wrote {path}", flush=True)


def _never_done(_d, _run) -> Check:
    return Check(False, "always rewritten from the run outputs")  # cheap


def _has(stage: str) -> Callable[[object], bool]:
    """Whether the profile's trainer kind has this trainer stage."""
    return lambda p: stage in p.kind.stages


def _reports_in(stage: str) -> Callable[[object], bool]:
    """Whether the profile's trainer kind writes its summary.md in this stage."""
    return lambda p: p.kind.report_stage == stage


def _epoch_dumps(p) -> bool:
    return p.kind.epoch_dumps and epoch_dump_rows(p) > 0


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
