#!/usr/bin/python3
"""A stage says "skipped" only when the files the next stage reads exist and are valid in this
checkout, and the driver prints why it skips or runs. No training: the trainers are stood in for
by a function that writes the files each `--until` stage writes. Argument 1: the build directory
(the head facts of its rank_analysis).

- A fresh clone (results/cpu/softmax_s141 as committed: final.json, stages.json recording every
  stage, score.json, rank.json; no checkpoint, no dump): train runs and says the run is trained
  again from the beginning; finetune then RUNS (before: "finetune: outputs present, skipped", and
  the dump stage finetuned), dump runs, score runs (its committed score.json has no best.pt
  beside it); the committed records of finetune and dump are forgotten when train starts over.
- A second pass skips train, finetune and dump, each naming the files that prove it.
- Interrupted train (checkpoint.pt and best.pt, no record): not done, "interrupted".
- A complete dump without the model final.json describes (best_finetune.pt): not done.
- A dump that disagrees with final.json: not done, saying so.
- A run directory made with other settings (config.toml's lr differs) with a checkpoint: the
  driver stops with exit status 2 naming the key instead of resuming or skipping it.
- train_nplm's one-stage kind on a committed run (final.json, no logprobs.h5): runs; one that
  dumps nothing (final.json's dump ""), its stage recorded finished: a committed result.
- `[analysis] keep_dumps = false`: a dump is removed once the stages that read it are done (the
  analysed seed's after analyse, the others' at once), stages.json records it, a second pass
  skips everything on that record (nothing is dumped again), and a run started over forgets it.
- Those runs as committed (no *.pt, *.h5: a fresh clone): every stage skipped as a committed
  result, the plot not drawn and saying why; nothing is trained again, also when stages.json
  lacks the removal record (runs made before the driver recorded it), unless keep_dumps = true,
  the analysed run's rank.json predates its dump, or config.toml has other settings.
"""

import io
import json
import os
import re
import shutil
import sys
import tempfile
from contextlib import redirect_stdout

import h5py
import numpy as np

from checks import ROOT, build_dir, check, finish, use_build  # noqa: E402

use_build()
import stages  # noqa: E402
from repro_profile import load_profile  # noqa: E402
from reproduce import Driver  # noqa: E402

COMMITTED = os.path.join(ROOT, "results", "cpu", "softmax_s141")


def copy_committed(run_dir: str) -> None:
    """The run directory as a clone has it: without the files .gitignore keeps out of git
    (dumps, checkpoints), which a checkout that has run `make reproduce` holds beside them."""
    shutil.copytree(COMMITTED, run_dir,
                    ignore=shutil.ignore_patterns("*.h5", "*.pt", "checkpoints"))


def write_dump(run_dir: str, trainer: str = "wordlm", model: str = "best_finetune.pt") -> None:
    """logprobs.h5 (T = 5 rows, M = 4) and a schema-2 final.json that agrees with it."""
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(5, 4))
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    targets = np.array([0, 1, 2, 3, 0])
    ppl = float(np.exp(-logp[np.arange(5), targets].mean()))
    with h5py.File(os.path.join(run_dir, "logprobs.h5"), "w") as f:
        f["log_probs"] = logp.astype(np.float32)
        f["targets"] = targets
        f.attrs["T"] = 5
        f.attrs["ppl"] = ppl
    final = {"event": "final", "schema": 2, "trainer": trainer, "head": "softmax",
             "dataset": "ptb", "seed": 141, "steps": 1,
             "best_model": os.path.join(run_dir, model), "valid_loss": 1.0,
             "dump": os.path.join(run_dir, "logprobs.h5"), "dump_ppl": ppl, "dump_rows": 5,
             trainer: {"test_ppl": ppl}}
    with open(os.path.join(run_dir, "final.json"), "w") as f:
        json.dump(final, f)


def touch(run_dir: str, *names: str) -> None:
    for n in names:
        with open(os.path.join(run_dir, n), "wb") as f:
            f.write(b"stand-in")


class StandIn:
    """The trainer and dyneval: writes what each command's stage writes, records the stages."""

    def __init__(self):
        self.ran = []

    def __call__(self, cmd, log_path, stdout_path=None):
        run_dir = cmd[cmd.index("--run" if "--run" in cmd else "--out") + 1]
        if "--until" in cmd:
            stage = cmd[cmd.index("--until") + 1]
            self.ran.append(stage)
            if stage == "train":
                touch(run_dir, "checkpoint.pt", "best.pt")
            elif stage == "finetune":
                touch(run_dir, "checkpoint.pt", "best_finetune.pt")
            else:
                write_dump(run_dir)
        elif "--list-heads" not in cmd and cmd[0].endswith("rank_analysis"):
            self.ran.append("analyse")  # reads the dump: it must still be there
            assert os.path.exists(cmd[1]), f"analyse without its dump {cmd[1]}"
            touch(os.path.dirname(cmd[1]), "logprobs.rank.h5")
            with open(stdout_path, "w") as f:
                json.dump({"rank": 4, "verdict": "within_bound"}, f)
        elif "--static-only" in cmd:
            self.ran.append("score")
            with open(cmd[cmd.index("--out") + 1], "w") as f:
                json.dump({"static": {"valid_ppl": 1.0}}, f)
        else:
            raise AssertionError(f"unexpected command {cmd}")


def profile(tmp: str, trainer: str = "", config: str = "ptb_cpu.toml") -> str:
    path = os.path.join(tmp, f"p_{trainer or 'wordlm'}.toml")
    with open(path, "w") as f:
        f.write(f'name = "t"\nscaled_down = "tiny"\nout = "{tmp}/out"\n'
                f'config = "{ROOT}/trainers/configs/{config}"\nheads = ["softmax"]\n'
                f'seeds = [141]\nthreads = 1\nscore_after_training = true\n'
                + (f'trainer = "{trainer}"\n' if trainer else "")
                + '[epoch_ranks]\nrows = 2000\n')
    return path


def driver(path: str) -> Driver:
    d = Driver(load_profile(path), build_dir())
    d.check_binaries = lambda: None
    d.execute = StandIn()
    return d


def go(d: Driver, names: list[str]) -> list[str]:
    out = io.StringIO()
    with redirect_stdout(out):
        d.go(d.select(names, None))
    return [line for line in out.getvalue().splitlines() if " | " in line and "step" in line]


def line_of(lines: list[str], stage: str) -> str:
    return next((line for line in lines if f"| {stage}:" in line), "")


def fresh_clone(tmp: str) -> None:
    run_dir = os.path.join(tmp, "out", "softmax_s141")
    copy_committed(run_dir)
    d = driver(profile(tmp))
    run = d.runs[0]
    train = stages.STAGES[0].done(d, run)
    check(not train and "has final.json but no logprobs.h5, checkpoint.pt, best.pt" in train.why
          and "trained again from the beginning" in train.why,
          f"fresh clone: train not done, saying what is there and what not ({train.why})")
    score = next(s for s in stages.STAGES if s.name == "score").done(d, run)
    check(not score and "has score.json but no best.pt, which it was computed from" in score.why,
          f"fresh clone: the committed score.json is not taken for this checkout's ({score.why})")
    lines = go(d, ["train", "finetune", "dump", "score"])
    for line in lines:
        print("     " + line)
    check(d.execute.ran == ["train", "finetune", "dump", "score"],
          f"fresh clone: train, finetune, dump and score each run in their own stage "
          f"({d.execute.ran})")
    fin = line_of(lines, "finetune")
    check("skipped" not in fin and "but no logprobs.h5, best_finetune.pt: running" in fin,
          f"fresh clone: finetune says what it lacks and runs ({fin})")
    score = line_of(lines, "score")
    check("score.json is older than best.pt: running" in score,
          f"fresh clone: score runs on this checkout's best.pt ({score})")
    timings = json.load(open(os.path.join(run_dir, "stages.json")))
    committed = json.load(open(os.path.join(COMMITTED, "stages.json")))
    check(all(timings[s] != committed[s] for s in ("train", "finetune", "dump")),
          "stages.json: train, finetune and dump records are this checkout's")
    visible = [f for f in os.listdir(run_dir) if f.endswith(".lock") and not f.startswith(".")]
    check(not visible, f"the stage records' lock is a hidden file, which .gitignore keeps out of "
                       f"committed results (visible locks: {visible})")

    d2 = driver(profile(tmp))
    lines = go(d2, ["train", "finetune", "dump", "score"])
    check(d2.execute.ran == [] and all("skipped (" in line for line in lines),
          f"second pass: every stage skipped ({lines})")
    check("skipped (dump's outputs are complete: final.json, logprobs.h5, best_finetune.pt "
          "agreeing" in line_of(lines, "train") and
          "skipped (final.json, logprobs.h5, best_finetune.pt agreeing" in line_of(lines, "dump")
          and "skipped (score.json newer than best.pt" in line_of(lines, "score"),
          f"second pass: each skip names its files ({lines})")

    # The dump complete but the model it describes gone: dump (and so train) not done.
    os.remove(os.path.join(run_dir, "best_finetune.pt"))
    c = stages.STAGES[2].done(d2, run)
    check(not c and "but no best_finetune.pt" in c.why, f"no best_finetune.pt: dump not done "
          f"({c.why})")
    touch(run_dir, "best_finetune.pt")
    # A dump that disagrees with final.json.
    final = json.load(open(os.path.join(run_dir, "final.json")))
    final["dump_ppl"] *= 1.01
    json.dump(final, open(os.path.join(run_dir, "final.json"), "w"))
    c = stages.STAGES[2].done(d2, run)
    check(not c and "disagrees with final.json" in c.why, f"disagreeing dump: not done ({c.why})")


def interrupted(tmp: str) -> None:
    run_dir = os.path.join(tmp, "out", "softmax_s141")
    copy_committed(run_dir)
    d = driver(profile(tmp))
    d.forget(d.runs[0], ("train", "finetune", "dump"))
    touch(run_dir, "checkpoint.pt", "best.pt")
    c = stages.STAGES[0].done(d, d.runs[0])
    check(not c and "does not record train as finished (interrupted)" in c.why,
          f"checkpoint without a record: train not done ({c.why})")
    c = stages.STAGES[1].done(d, d.runs[0])
    check(not c and "but no logprobs.h5, best_finetune.pt" in c.why,
          f"after train, finetune not done ({c.why})")

    # Other settings than the profile's, with a checkpoint to resume: refused, key named.
    cfg = os.path.join(run_dir, "config.toml")
    text, n = re.subn(r"\nlr = 30(\.0)?\n", "\nlr = 25\n", open(cfg).read())
    check(n == 1, f"the committed config.toml has the profile's lr = 30 ({cfg})")
    open(cfg, "w").write(text)
    import subprocess
    r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "pipeline", "reproduce.py"),
                        "--profile", profile(tmp), "--build", build_dir(), "--stage", "train"],
                       capture_output=True, text=True, cwd=ROOT)
    check(r.returncode == 2 and "config.toml: lr = 25 where the profile asks 30" in r.stderr
          and len(r.stderr.strip().splitlines()) == 1,
          f"other settings: exit 2 naming the key ({r.returncode}: {r.stderr.strip()[-300:]})")


def one_stage_kind(tmp: str) -> None:
    run_dir = os.path.join(tmp, "out", "softmax_s141")
    os.makedirs(run_dir)
    write_dump(run_dir, "nplm", "best.pt")
    os.remove(os.path.join(run_dir, "logprobs.h5"))
    d = Driver(load_profile(profile(tmp, "nplm", "nplm_ptb_cpu.toml")), build_dir())
    c = stages.STAGES[0].done(d, d.runs[0])
    check(not c and "has final.json but no logprobs.h5" in c.why and "trained again" in c.why,
          f"nplm, committed final.json only: train runs ({c.why})")
    write_dump(run_dir, "nplm", "best.pt")
    c = stages.STAGES[0].done(d, d.runs[0])
    check(not c and "but no best.pt" in c.why, f"nplm without best.pt: not done ({c.why})")
    touch(run_dir, "best.pt")
    c = stages.STAGES[0].done(d, d.runs[0])
    check(bool(c) and c.why.startswith("final.json, logprobs.h5, best.pt agreeing"),
          f"nplm complete: skipped ({c.why})")
    # A run that dumps nothing (the classifier's mse), committed: final.json names no dump and
    # no best.pt is there. Trained again unless stages.json records its stage finished.
    final = json.load(open(os.path.join(run_dir, "final.json")))
    final.update(dump="", dump_ppl=None, dump_rows=0)
    with open(os.path.join(run_dir, "final.json"), "w") as f:
        json.dump(final, f)
    for name in ("best.pt", "logprobs.h5"):
        os.remove(os.path.join(run_dir, name))
    c = stages.STAGES[0].done(d, d.runs[0])
    check(not c and "trained again" in c.why, f"no dump, no record, no model: runs ({c.why})")
    with open(os.path.join(run_dir, "stages.json"), "w") as f:
        json.dump({"train": {"seconds": 1.0, "finished": "2026-01-01T00:00:00Z"}}, f)
    c = stages.STAGES[0].done(d, d.runs[0])
    check(bool(c) and "a committed result" in c.why,
          f"no dump, its stage recorded finished, no model: a committed result ({c.why})")


def two_seed_profile(tmp: str, keep_dumps: str) -> str:
    """A softmax profile of seeds 141 and 142, the first analysed, with this keep_dumps."""
    path = os.path.join(tmp, "p_keep.toml")
    with open(path, "w") as f:
        f.write(f'name = "t"\nscaled_down = "tiny"\nout = "{tmp}/out"\n'
                f'config = "{ROOT}/trainers/configs/ptb_cpu.toml"\nheads = ["softmax"]\n'
                'seeds = [141, 142]\nthreads = 1\nscore_after_training = true\n'
                f'[analysis]\nseeds = 1\nkeep_dumps = {keep_dumps}\n[epoch_ranks]\nrows = 0\n')
    return path


def dumps_removed(tmp: str) -> None:
    """`[analysis] keep_dumps = false`: each dump is removed once the stages that read it are
    done (analyse for the analysed first seed; at once for the second), stages.json records it,
    and a second pass skips every stage on final.json, the model and that record."""
    path = two_seed_profile(tmp, "false")
    names = ["train", "finetune", "dump", "score", "analyse"]
    d = driver(path)
    lines = go(d, names)
    check(d.execute.ran.count("analyse") == 1 and d.execute.ran.count("dump") == 2,
          f"two dumps, one analysis, the analysis before its dump's removal ({d.execute.ran})")
    removed = [line for line in lines if "keep_dumps = false" in line]
    check(len(removed) == 2, f"each removal printed ({removed})")
    for seed in (141, 142):
        run_dir = os.path.join(tmp, "out", f"softmax_s{seed}")
        record = json.load(open(os.path.join(run_dir, "stages.json"))).get(stages.DUMP_REMOVED)
        check(not os.path.exists(os.path.join(run_dir, "logprobs.h5")) and record and
              record["rows"] == 5 and record["bytes"] > 0 and "finished" not in record,
              f"s{seed}: logprobs.h5 removed, stages.json records rows and bytes ({record})")
    check(os.path.exists(os.path.join(tmp, "out", "softmax_s141", "rank.json")),
          "the analysed seed kept its rank.json")
    d2 = driver(path)
    lines = go(d2, names)
    check(d2.execute.ran == [] and all("skipped (" in line for line in lines),
          f"second pass: every stage skipped, nothing re-dumped ({d2.execute.ran})")
    check("logprobs.h5 removed (keep_dumps)" in line_of(lines, "dump") and
          "its dump removed after it" in line_of(lines, "analyse"),
          f"the skips name the removal ({line_of(lines, 'dump')}; {line_of(lines, 'analyse')})")
    # The runs as committed (results/ keeps no *.pt, *.h5): a fresh clone resumes from them.
    out = os.path.join(tmp, "out")
    shutil.copytree(out, out + ".clone", ignore=shutil.ignore_patterns("*.h5", "*.pt"))
    shutil.rmtree(out)
    os.rename(out + ".clone", out)
    d3 = driver(path)
    lines = go(d3, names)
    plot = next(s for s in stages.STAGES if s.name == "plot").done(d3, d3.runs[0])
    check(d3.execute.ran == [] and all("skipped (" in line for line in lines),
          f"fresh clone of committed runs whose dumps were removed: nothing trained again "
          f"({d3.execute.ran}; {lines})")
    check("a committed result" in line_of(lines, "dump") and
          "logprobs.rank.h5, are not in this checkout" in line_of(lines, "analyse") and
          plot and "not drawn" in plot.why,
          f"each skip says the run is a committed result ({line_of(lines, 'dump')}; "
          f"{line_of(lines, 'analyse')}; plot: {plot.why})")
    unrecorded_removals(tmp, path, names)
    touch(os.path.join(out, "softmax_s142"), "checkpoint.pt")  # a run of this checkout's again
    c = stages.STAGES[2].done(d3, d3.runs[1])
    check(not c and "but no best_finetune.pt" in c.why,
          f"a run with this checkout's checkpoint is no committed result ({c.why})")
    # Starting a run over forgets the record with the stages it describes.
    d2.forget(d2.runs[1], ("train", "finetune", "dump"))
    st = json.load(open(os.path.join(tmp, "out", "softmax_s142", "stages.json")))
    check(stages.DUMP_REMOVED not in st, f"forget drops the removal record with dump ({st})")
    # A value that is not a boolean is refused naming the field.
    bad = open(path).read().replace("keep_dumps = false", 'keep_dumps = "no"')
    with open(path, "w") as f:
        f.write(bad)
    try:
        load_profile(path)
        check(False, "keep_dumps = \"no\" refused")
    except Exception as e:  # ProfileError
        check("analysis.keep_dumps" in str(e) and 'true, false or "analysed"' in str(e),
              f"keep_dumps = \"no\": refused naming the field ({e})")
    # verdict_only: a boolean, only with the sketch (or auto), passed on as --verdict-only.
    for extra, field in (("verdict_only = 1", "analysis.verdict_only"),
                         ("budget_gb = -1", "analysis.budget_gb"),
                         ('budget_gb = "12"', "analysis.budget_gb"),
                         ('verdict_only = true\nmethod = "gram"', "analysis.method"),
                         # a head the profile does not run
                         ('method_by_head = { "moss:K=2" = "auto" }',
                          "analysis.method_by_head.moss:K=2"),
                         # a head's own method under the same rules as `method`
                         ('verdict_only = true\nmethod_by_head = { softmax = "gram" }',
                          "analysis.method_by_head.softmax"),
                         ('tasks = 2\nmethod_by_head = { softmax = "exact" }',
                          "analysis.method_by_head.softmax")):
        with open(path, "w") as f:
            f.write(bad.replace('keep_dumps = "no"', f"keep_dumps = false\n{extra}"))
        try:
            load_profile(path)
            check(False, f"{extra!r} refused")
        except Exception as e:  # ProfileError
            check(field in str(e), f"{extra!r}: refused naming {field} ({e})")
    with open(path, "w") as f:
        f.write(bad.replace('keep_dumps = "no"', 'keep_dumps = false\nverdict_only = true\n'
                            'method = "sketch"'))
    d3 = driver(path)
    cmd = stages.analyse_command(d3, d3.runs[0])
    check(cmd[cmd.index("--method") + 1] == "sketch" and "--verdict-only" in cmd,
          f"verdict_only = true: the analyse stage asks for --verdict-only ({' '.join(cmd)})")
    check("--budget-gb" not in cmd, f"no budget_gb: rank_analysis's own default ({' '.join(cmd)})")
    # budget_gb: passed on as --budget-gb, the memory auto plans for.
    with open(path, "w") as f:
        f.write(bad.replace('keep_dumps = "no"', "keep_dumps = false\nbudget_gb = 12.5"))
    d4 = driver(path)
    cmd = stages.analyse_command(d4, d4.runs[0])
    check(cmd[cmd.index("--budget-gb") + 1] == "12.5",
          f"budget_gb = 12.5: the analyse stage asks for --budget-gb 12.5 ({' '.join(cmd)})")
    # method_by_head: the named head's method in place of the profile's (a head the profile does
    # not run is refused naming the key, above).
    with open(path, "w") as f:
        f.write(bad.replace('keep_dumps = "no"', 'keep_dumps = false\nmethod = "sketch"\n'
                            'method_by_head = { softmax = "auto" }'))
    d5 = driver(path)
    cmd = stages.analyse_command(d5, d5.runs[0])
    check(cmd[cmd.index("--method") + 1] == "auto",
          f"method_by_head softmax = auto over method = sketch ({' '.join(cmd)})")


def unrecorded_removals(tmp: str, path: str, names: list[str]) -> None:
    """The committed runs of dumps_removed without stages.json's removal record (runs made before
    the driver recorded removals, as results/claims' first 29): still committed results, nothing
    trained again (before: every stage ran); with keep_dumps = true, whose dumps are outputs,
    the same files are trained again. Leaves the records as they were."""
    saved = {}
    for seed in (141, 142):
        st_path = os.path.join(tmp, "out", f"softmax_s{seed}", "stages.json")
        saved[st_path] = open(st_path).read()
        st = json.loads(saved[st_path])
        del st[stages.DUMP_REMOVED]
        with open(st_path, "w") as f:
            json.dump(st, f)
    d = driver(path)
    lines = go(d, names)
    check(d.execute.ran == [] and "a committed result" in line_of(lines, "dump"),
          f"committed runs without the removal record: nothing trained again ({d.execute.ran}; "
          f"{line_of(lines, 'dump')})")
    # The analysed seed's rank.json from before its run started over (analysed before the dump
    # it sits beside was written) is not this dump's: no removal inferred, the run trained again.
    first = os.path.join(tmp, "out", "softmax_s141", "stages.json")
    st = json.load(open(first))
    st["analyse"]["finished"] = "2000-01-01T00:00:00Z"
    with open(first, "w") as f:
        json.dump(st, f)
    d = driver(path)
    check(stages.removal_record(d, d.runs[0]) is None and not stages.STAGES[2].done(d, d.runs[0]),
          "a rank.json analysed before the dump was written infers no removal: dump runs again")
    # An empty removal record (a stages.json edited by hand) stands for nothing: the removal is
    # inferred from the files as without one, so here it is still refused.
    st[stages.DUMP_REMOVED] = {}
    with open(first, "w") as f:
        json.dump(st, f)
    check(stages.dump_removed(first[:-len("/stages.json")]) is None and
          stages.removal_record(driver(path), d.runs[0]) is None,
          "an empty dump.removed record is no record: the removal is inferred or refused as without")
    # A committed run whose config.toml differs from the profile (a profile edited since) is
    # trained again, not skipped on results of other settings.
    second = os.path.join(tmp, "out", "softmax_s142", "config.toml")  # the stand-in writes none
    check(stages.committed_result(d, d.runs[1]), "without config.toml: a committed result")
    with open(second, "w") as f:
        f.write("lr = 0.125\n")
    check(not stages.committed_result(d, d.runs[1]),
          "a committed run whose config.toml has another lr is no committed result")
    os.remove(second)
    kept = driver(path)
    kept.p.analysis["keep_dumps"] = True
    check(not stages.committed_result(kept, kept.runs[1]) and
          not stages.STAGES[0].done(kept, kept.runs[1]),
          "with keep_dumps = true the same run is no committed result: its dump is an output")
    for st_path, text in saved.items():
        with open(st_path, "w") as f:
            f.write(text)


def analysed_dumps_kept(tmp: str) -> None:
    """`[analysis] keep_dumps = "analysed"`: the analysed seed's dump stays (what a user opens
    with h5py), the other seed's is removed once complete, and a second pass skips every stage."""
    path = two_seed_profile(tmp, '"analysed"')
    names = ["train", "finetune", "dump", "score", "analyse"]
    d = driver(path)
    lines = go(d, names)
    removed = [line for line in lines if 'keep_dumps = "analysed"' in line]
    check(len(removed) == 1 and "softmax_s142" in removed[0],
          f"one removal printed, the second seed's ({removed})")
    kept = os.path.join(tmp, "out", "softmax_s141")
    check(os.path.exists(os.path.join(kept, "logprobs.h5")) and stages.DUMP_REMOVED not in
          json.load(open(os.path.join(kept, "stages.json"))),
          "the analysed seed keeps logprobs.h5 and records no removal")
    check(not os.path.exists(os.path.join(tmp, "out", "softmax_s142", "logprobs.h5")),
          "the second seed's logprobs.h5 removed")
    d2 = driver(path)
    go(d2, names)
    check(d2.execute.ran == [], f"second pass: nothing runs again ({d2.execute.ran})")


def dyneval_setting_changed(tmp: str) -> None:
    """A dyneval.json made with other settings than the profile's dyneval args is stale, even
    when it is newer than its model; the same settings (spelled as the profile spells them) are
    done."""
    path = profile(tmp)
    with open(path) as f:
        text = f.read().replace("[epoch_ranks]", '[dyneval]\nenabled = true\n'
                                'args = ["--lr", "5e-5", "--eps", "2e-5"]\n[epoch_ranks]')
    with open(path, "w") as f:
        f.write(text)
    d = driver(path)
    run = d.runs[0]
    os.makedirs(run.dir)
    write_dump(run.dir)
    touch(run.dir, "best_finetune.pt")
    done = next(s for s in stages.STAGES if s.name == "dyneval")
    for eps, ok in ((1e-3, False), (2e-5, True)):
        with open(os.path.join(run.dir, "dyneval.json"), "w") as f:
            json.dump({"dynamic": {"test_ppl": 1.0}, "static": {"test_ppl": 1.0},
                       "options": {"lr": 5e-05, "eps": eps, "lambda": 0.002, "bptt": 5}}, f)
        c = done.done(d, run)
        check(bool(c) == ok and (ok or "was made with eps 0.001, the profile asks for 2e-05"
                                 in c.why),
              f"dyneval.json with eps {eps:g} against the profile's 2e-5: "
              f"{'done' if ok else 'stale'} ({c.why})")
    check(stages.dyneval_setting_change(["--grid", "--lambda", "0.003"], {"lambda": 0.002}) ==
          "lambda 0.002, the profile asks for 0.003" and
          stages.dyneval_setting_change(["--stats-tokens", "0"], {"stats_tokens": 0}) == "",
          "dyneval arguments compared key by key (dashes as underscores, flags skipped)")


def main() -> int:
    for case in (fresh_clone, interrupted, one_stage_kind, dumps_removed, analysed_dumps_kept,
                 dyneval_setting_changed):
        with tempfile.TemporaryDirectory() as tmp:
            case(tmp)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
