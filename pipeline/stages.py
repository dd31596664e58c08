"""The stages of `make reproduce`, as one table: each row names a stage, says when a profile has
it, what it runs and how to tell that its outputs are complete (so a re-run skips it).

Per run (one head, one seed): train (the main SGD -> NT-ASGD phase), finetune, dump (the test-set
log-probabilities, batch size 1), score (the model before finetuning on valid and test, when the
profile asks), dyneval (when the profile asks), analyse (rank of the dump), epoch_ranks (the rank
of the first test rows after every epoch, when the profile asks: epoch_ranks.py). Per profile:
plot, epoch_plot (rank vs epoch, with epoch_ranks) and tables. The driver (reproduce.py) walks this table; repro_profile.py reads the stage names from it
to check a profile's estimate_seconds.

Every `run` and `done` function takes the driver `d` (its profile `d.p`, binaries `d.bins`,
threads `d.threads`, `d.execute(cmd, log)`) and the run (None for the profile-wide stages).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from typing import Callable


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
    # (profile, run) -> whether this run has the stage (per-run stages; default: every run)
    applies: Callable[[object, object], bool] = lambda _p, _r: True


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
    # train_nplm / train_charlm record the dump's own ppl (the dump may hold the first test rows
    # only); train_wordlm's test_ppl is the dump's.
    expected = float(final.get("dump_ppl", final.get("test_ppl", "nan")))
    return ok and math.isclose(ppl, expected, rel_tol=1e-9)


def trainer_cmd(d, run, until: str) -> list[str]:
    """The trainer command of a run: train_wordlm up to `until`; for a seed trainer (nplm,
    charlm) the one command that trains, evaluates and dumps (`until` does not apply); for the
    classifier, classifier_cmd."""
    if d.p.seed_trainer:
        cmd = [d.bins["train_" + d.p.trainer], "--config", run.config, "--head", run.head,
               "--seed", str(run.seed), "--out", run.dir, "--threads", str(d.threads)]
        for key, value in d.p.overrides_of(run.head).items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            cmd += [f"--{key}", text]
        if os.path.exists(os.path.join(run.dir, "checkpoint.pt")):
            cmd.append("--resume")
        return cmd
    if d.p.trainer == "classifier":
        return classifier_cmd(d, run)
    cmd = [d.bins["train_wordlm"], "--config", run.config, "--head", run.head,
           "--seed", str(run.seed), "--out", run.dir, "--threads", str(d.threads)]
    for key, value in d.p.overrides_of(run.head).items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        cmd += [f"--{key}", text]
    if epoch_dump_rows(d.p):
        cmd += ["--epoch_dump_rows", str(epoch_dump_rows(d.p))]
    cmd += ["--until", until]
    if os.path.exists(os.path.join(run.dir, "checkpoint.pt")):
        cmd.append("--resume")
    return cmd


def classifier_cmd(d, run) -> list[str]:
    """train_classifier for one run: train, evaluate the best model, dump (one stage)."""
    cmd = [d.bins["train_classifier"], "--config", run.config, "--head", run.head,
           "--seed", str(run.seed), "--out", run.dir, "--threads", str(d.threads)]
    for key, value in d.p.overrides_of(run.head).items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        cmd += [f"--{key}", text]
    if os.path.exists(os.path.join(run.dir, "checkpoint.pt")):
        cmd.append("--resume")
    return cmd


def classifier_dumps(run) -> bool:
    """Whether a classifier run writes logprobs.h5 (mse has no probabilities)."""
    return run.name != "mse"


def classifier_ranked(run) -> bool:
    """Whether its dump has a rank: sparse's -inf off the top k leaves it undefined."""
    return classifier_dumps(run) and run.name != "sparse"


def classified(run_dir: str, dumps: bool) -> bool:
    """final.json holds the test results and, where the run dumps, logprobs.h5 has its rows."""
    final = read_json(os.path.join(run_dir, "final.json"))
    if not final or "test_error_pct" not in final:
        return False
    if not dumps:
        return True
    try:
        import h5py
        with h5py.File(os.path.join(run_dir, "logprobs.h5"), "r") as f:
            return f["log_probs"].shape[0] == int(final["test_images"])
    except Exception:
        return False


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

def _trained(stage: str) -> Callable:
    def done(d, run) -> bool:
        if dump_is_valid(run.dir):  # a finished dump implies train and finetune
            return True
        if d.p.seed_trainer:  # train is the whole run: done only with its dump
            return False
        return stage in d.timings(run) and os.path.exists(_in(run, "checkpoint.pt")) and \
            os.path.exists(_in(run, "best.pt"))
    return done


def _train(until: str) -> Callable:
    def run_it(d, run) -> None:
        d.execute(trainer_cmd(d, run, until), d.log_of(run))
        if d.p.seed_trainer and not dump_is_valid(run.dir):
            raise StageError(f"{run.dir}/logprobs.h5 and final.json disagree after training")
    return run_it


def _dump(d, run) -> None:
    d.execute(trainer_cmd(d, run, "dump"), d.log_of(run))
    if not dump_is_valid(run.dir):
        raise StageError(f"{run.dir}/logprobs.h5 and final.json disagree after the dump")


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


def _tables(d, _run) -> None:
    if d.p.seed_trainer:
        import seed_summary as summary
    else:
        import summary
    path = summary.write_summary(d.p, d.runs, d.global_timings)
    print(f"[reproduce] wrote {path}", flush=True)


def _always(_profile) -> bool:
    return True


def _wordlm(profile) -> bool:
    return profile.trainer == "wordlm"


def _classifier(profile) -> bool:
    return profile.trainer == "classifier"


def _classify(d, run) -> None:
    d.execute(classifier_cmd(d, run), d.log_of(run))
    if not classified(run.dir, classifier_dumps(run)):
        raise StageError(f"{run.dir}/final.json or logprobs.h5 incomplete after train_classifier")


def _analysed_run(p, run) -> bool:
    if p.trainer == "classifier" and not classifier_ranked(run):
        return False
    return p.analysed(run)


def _classify_report(d, _run) -> None:
    import classify_summary
    path = classify_summary.write_summary(d.p, d.runs, d.global_timings)
    print(f"[reproduce] wrote {path}", flush=True)


def _never_done(_d, _run) -> bool:
    return False  # cheap, always rewritten from the run outputs


# Local order = table order. Data dependencies (`after`): finetune restarts from best.pt and the
# checkpoint of train; the dump reads the finetuned model; score reads best.pt, which finetuning
# does not rewrite (it writes best_finetune.pt); dyneval reads final.json and best_finetune.pt;
# analyse reads logprobs.h5.
def _not_classifier(profile) -> bool:
    """train_wordlm and the seed trainers (nplm, charlm): stage train, the plot and summary.md."""
    return profile.trainer != "classifier"


#
# A classifier profile (trainer = "classifier") has one trainer stage per run, classify
# (train_classifier: training, the best model on the test split, the dump), then analyse for the
# heads whose dump has a rank (not mse: no dump; not sparse: -inf), and classify_report (the
# summary table and the test-error plot) for the profile.
STAGES: tuple[Stage, ...] = (
    Stage("train", True, _not_classifier, _train("train"), _trained("train"), head_cost=True),
    Stage("finetune", True, _wordlm, _train("finetune"), _trained("finetune"), head_cost=True,
          after=("train",)),
    Stage("dump", True, _wordlm, _dump, lambda d, run: dump_is_valid(run.dir), head_cost=True,
          after=("finetune",)),
    Stage("classify", True, _classifier, _classify,
          lambda d, run: classified(run.dir, classifier_dumps(run)), head_cost=True),
    Stage("score", True, lambda p: _wordlm(p) and p.score_after_training, _score, _score_done,
          head_cost=True, after=("train",)),
    Stage("dyneval", True, lambda p: _wordlm(p) and bool(p.dyneval.get("enabled", False)),
          _dyneval, _dyneval_done, head_cost=True, after=("dump",)),
    Stage("analyse", True, _always, _analyse, _analyse_done, after=("dump", "classify"),
          applies=_analysed_run),
    Stage("epoch_ranks", True, lambda p: _wordlm(p) and epoch_dump_rows(p) > 0, _epoch_ranks,
          _epoch_ranks_done, after=("finetune",)),
    Stage("plot", False, _not_classifier, _plot, _plot_done),
    Stage("epoch_plot", False, lambda p: _wordlm(p) and epoch_dump_rows(p) > 0, _epoch_plot,
          _epoch_plot_done),
    Stage("tables", False, _not_classifier, _tables, _never_done),
    Stage("classify_report", False, _classifier, _classify_report, _never_done),
)
STAGE_NAMES = tuple(s.name for s in STAGES)
