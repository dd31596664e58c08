"""Whether a run's trainer outputs are complete: final.json (read through final_json.py, any
layout) and, where it names a dump, logprobs.h5 with every row, agreeing with final.json on the
row count and the test perplexity. The done-check of every trainer's last stage (stages.py).
And what makes a run directory a committed result (committed_result): the run as a clone of
committed results has it, without its model and dump."""

from __future__ import annotations

import json
import math
import os

import head_facts
from final_json import read_final
from run_config import read_toml, run_config


def dump_agrees(h5_path: str, final: dict) -> bool:
    """The dump is complete (rows = T = targets, and final.json's dump_rows where it
    has one) and its ppl attribute is final.json's dump_ppl (None: not finite, e.g. a sparse
    head's test label outside the top k)."""
    try:
        import h5py
        with h5py.File(h5_path, "r") as f:
            rows = f["log_probs"].shape[0]
            # T since format 2; format 1 named it num_tokens.
            T = f.attrs["T"] if "T" in f.attrs else f.attrs["num_tokens"]
            ok = rows == int(T) and rows == f["targets"].shape[0]
            ppl = float(f.attrs["ppl"])
    except Exception:  # unreadable or truncated: redo the dump
        return False
    if final["dump_rows"] is not None and rows != int(final["dump_rows"]):
        return False
    expected = final["dump_ppl"]
    if expected is None:
        return ok and not math.isfinite(ppl)
    return ok and math.isclose(ppl, float(expected), rel_tol=1e-9)


def outputs_complete(run_dir: str, trainer: str) -> bool:
    """final.json exists with the trainer's section and, when it names a dump, the run's
    logprobs.h5 agrees with it. `trainer`: the kind that wrote it (for the old layouts)."""
    final = read_final(os.path.join(run_dir, "final.json"), trainer)
    if not final or not isinstance(final.get(final["trainer"]), dict):
        return False
    if not final["dump"]:
        return True  # a run without probabilities (train_classifier --head mse)
    return dump_agrees(os.path.join(run_dir, "logprobs.h5"), final)


def read_json(path: str) -> dict | None:
    """The JSON object in `path`, None when it is missing or unreadable."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def epoch_dump_rows(profile) -> int:
    return int(profile.epoch_ranks.get("rows", 0))


def config_mismatch(d, run) -> str:
    """"" when the run's config.toml (what its trainer ran with) has the settings the profile
    asks for this run (its trainer config, the overrides, head, seed, epoch_dump_rows), else the
    first difference; "" also when there is no config.toml yet."""
    written = run_config(run.dir) or {}
    if not written:
        return ""
    want = {**(read_toml(run.config) or {}), **d.p.run_overrides(run),
            "head": run.head, "seed": run.seed}
    if d.p.kind.epoch_dumps and epoch_dump_rows(d.p):
        want["epoch_dump_rows"] = epoch_dump_rows(d.p)
    for key, value in want.items():
        if key in ("out", "threads", "data", "device") or key not in written:
            continue  # where it ran, not what it computed (or a key its trainer does not write)
        if written[key] != value:
            return f"{key} = {written[key]!r} where the profile asks {value!r}"
    return ""


def model_of(kind, final: dict) -> str:
    """The model file final.json describes (its best_model, else the kind's)."""
    return os.path.basename(final.get("best_model") or "") or kind.best_weights


def analysed_run(p, run) -> bool:
    """The run's dump has a rank (its head is a registry head whose log-output cannot be -inf:
    rank_analysis --list-heads) and the profile analyses this seed: the analyse stage reads it."""
    return head_facts.registry().rank_defined(run.head) and p.analysed(run)


def first_runs(runs: list) -> list:
    """Each head's first run (its first seed), in the profile's order."""
    first: dict[str, object] = {}
    for run in runs:
        first.setdefault(run.head, run)
    return list(first.values())


def plotted_runs(p, runs: list) -> list:
    """The runs the singular-value plot draws: each head's first run whose dump has a rank
    (sparse top-k's -inf entries have none: its runs are not analysed, so not plotted). The
    plot stage draws them and the summary names those whose spectrum is missing."""
    return [run for run in first_runs(runs) if analysed_run(p, run)]


# ---- committed results: a run as a clone has it (results/ keeps no *.pt or *.h5)

# stages.json's record of a removed dump (stages.release_dump): {"rows", "bytes", "removed",
# "commit", "seconds": 0}. No "finished" key: it is not a stage (provenance counts stages by it).
DUMP_REMOVED = "dump.removed"


def _entry(stages: dict, key: str) -> dict:
    """stages.json's object under `key` ({} when none or not an object)."""
    record = stages.get(key)
    return record if isinstance(record, dict) else {}


def stages_of(run_dir: str) -> dict:
    """The run's stages.json ({} when none or unreadable): every stage's record."""
    return read_json(os.path.join(run_dir, "stages.json")) or {}


def dump_removed(run_dir: str) -> dict | None:
    """The run's record of its removed dump, None while the dump is kept (or never written)."""
    return _entry(stages_of(run_dir), DUMP_REMOVED) or None


def stage_record(run_dir: str, stage: str) -> dict:
    """stages.json's record of `stage` in the run ({} when none)."""
    return _entry(stages_of(run_dir), stage)


def removal_record(d, run) -> dict | None:
    """The run's record of its removed dump (dump_removed), else, for a run whose dump the driver
    removed before it recorded removals (results/claims' runs made at 12292ed), the record
    inferred from the facts it stands for, all on disk: the profile removes this run's dump
    (keep_dumps false, or "analysed" with no analyse stage reading the run), stages.json records
    the trainer's dump stage finished, final.json names a dump, no logprobs.h5 is there, and
    where the analyse stage reads the dump its rank.json holds a rank, recorded as analysed after
    the dump was written. Without this, a fresh
    clone trained those runs again. The inferred record has final.json's rows and says in
    "removed" that it was not recorded."""
    stages = stages_of(run.dir)  # read once: the removal, the dump and the analyse records
    if record := _entry(stages, DUMP_REMOVED):
        return record
    keep = d.p.analysis.get("keep_dumps", True)
    analysed = analysed_run(d.p, run)
    if keep is True or (keep == "analysed" and analysed) or \
            os.path.exists(os.path.join(run.dir, "logprobs.h5")):
        return None
    dumped = _entry(stages, d.p.kind.dump_stage).get("finished")
    analysed_at = _entry(stages, "analyse").get("finished")
    final = read_final(os.path.join(run.dir, "final.json"), d.p.kind.name) or {}
    rank = read_json(os.path.join(run.dir, "rank.json")) or {}
    if not dumped or not final.get("dump"):
        return None
    # An analysed run's rank must be of this dump: analysed after it was written (ISO times),
    # not a rank left from before the run started over.
    if analysed and ("rank" not in rank or not analysed_at or analysed_at < dumped):
        return None
    return {"rows": final.get("dump_rows"), "removed": f"(not recorded; dumped {dumped})"}


# What a done-check of a committed result says (stages.py).
COMMITTED = (" (a committed result: its model and dump are not in this checkout; move the run "
             "directory away or pass --out DIR to train it again)")


def committed_result(d, run) -> bool:
    """A run trained elsewhere whose results were committed without its model and dump: its
    stages count as done on their committed outputs, so a long profile run in pieces resumes on
    a fresh clone instead of training them again. final.json names a dump recorded (or
    inferred: removal_record) as removed with the same rows, or names no dump (the classifier's
    mse) and stages.json records the trainer's last stage finished; and none of the trainer's
    files (checkpoint.pt, the model final.json names, logprobs.h5) is in the run directory, and its
    config.toml has the profile's settings (config_mismatch: after a profile edit it is trained
    again). A kept dump (keep_dumps true, "analysed") is an output of the profile: its run is no committed
    result, and a clone trains it again."""
    kind = d.p.kind
    final = read_final(os.path.join(run.dir, "final.json"), kind.name)
    if not final:
        return False
    if final.get("dump"):
        removed = removal_record(d, run)
        if not removed or removed.get("rows") != final.get("dump_rows"):
            return False
    elif "finished" not in stage_record(run.dir, kind.dump_stage):
        return False
    trainer_files = ("checkpoint.pt", "logprobs.h5", model_of(kind, final))
    if any(os.path.exists(os.path.join(run.dir, f)) for f in trainer_files):
        return False
    return not config_mismatch(d, run)  # made with the profile's settings, else trained again
