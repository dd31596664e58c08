"""Rank during training: the `epoch_ranks` stage of make reproduce and what it writes.

With a profile's `[epoch_ranks] rows = N` the trainer dumps the first N test rows after every
epoch of the main phase and of finetuning (train_wordlm --epoch_dump_rows N: the final dump's
path, batch size 1, the weights just validated) to <run>/epochs/<phase>_<epoch>.h5. This stage
runs rank_analysis --json --check on each (`<phase>_<epoch>.rank.json` beside it, the singular
values in `<phase>_<epoch>.rank.h5`), deletes the dump unless the profile keeps them, and
collects <run>/rank_vs_epoch.json:

  {"head": "mos:K=2", "seed": 141, "rows": 2000, "d": 100, "bound": 102,
   "epochs": [{"phase": "main", "epoch": 1, "step": 1, "rank": 95, "spectral_gap": 1.03,
               "tol": ..., "sigma_max": ..., "subset_ppl": 420.1, "valid_ppl": 380.2,
               "mixture": {"prior_entropy": ..., "mean_prior_entropy": ...,
                           "max_prior_entropy": ..., "disagreement": ...}}, ...]}

`step` counts the epochs of both phases in order (main 1..E, then finetuning 1..F);
`subset_ppl` is the perplexity of the N dumped rows; `valid_ppl` and `mixture` come from the
run's metrics.jsonl (the same epoch's records; `mixture` for MoS / MoSS only).
"""

from __future__ import annotations

import json
import os

PHASES = ("main", "finetune")


def epochs_dir(run_dir: str) -> str:
    return os.path.join(run_dir, "epochs")


def metrics_by_epoch(run_dir: str) -> dict[tuple[str, int], dict]:
    """The last record of each (phase, epoch) per event in metrics.jsonl: a resumed run may have
    written an epoch's records twice (killed after them, before the checkpoint)."""
    out: dict[tuple[str, int], dict] = {}
    try:
        lines = open(os.path.join(run_dir, "metrics.jsonl")).read().splitlines()
    except OSError:
        return out
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        event = rec.get("event")
        if event in ("valid", "mixture", "epoch_dump") and "phase" in rec:
            out.setdefault((rec["phase"], int(rec["epoch"])), {})[event] = rec
    return out


def dumped_epochs(run_dir: str) -> list[tuple[str, int]]:
    """(phase, epoch) of every epoch dump the trainer reported, in training order."""
    keys = [k for k, v in metrics_by_epoch(run_dir).items() if "epoch_dump" in v]
    return sorted(keys, key=lambda k: (PHASES.index(k[0]), k[1]))


def stem(phase: str, epoch: int) -> str:
    return f"{phase}_{epoch}"


def rank_is_current(run_dir: str, phase: str, epoch: int) -> bool:
    """Its rank.json exists, parses, and is newer than the dump (if the dump is still there)."""
    base = os.path.join(epochs_dir(run_dir), stem(phase, epoch))
    try:
        with open(base + ".rank.json") as f:
            ok = "rank" in json.load(f)
    except (OSError, ValueError):
        return False
    h5 = base + ".h5"
    return ok and (not os.path.exists(h5) or
                   os.path.getmtime(base + ".rank.json") >= os.path.getmtime(h5))


def collect(run_dir: str, head: str, seed: int) -> dict:
    """rank_vs_epoch.json's content from the per-epoch rank results and metrics.jsonl."""
    metrics = metrics_by_epoch(run_dir)
    entries = []
    first: dict = {}
    for step, (phase, epoch) in enumerate(dumped_epochs(run_dir), 1):
        with open(os.path.join(epochs_dir(run_dir), stem(phase, epoch) + ".rank.json")) as f:
            r = json.load(f)
        first = first or r
        m = metrics[(phase, epoch)]
        entry = {"phase": phase, "epoch": epoch, "step": step, "rank": r["rank"],
                 "spectral_gap": r.get("spectral_gap"), "tol": r.get("tol"),
                 "sigma_max": r.get("sigma_max"), "subset_ppl": m["epoch_dump"].get("ppl"),
                 "valid_ppl": m.get("valid", {}).get("valid_ppl")}
        if "mixture" in m:
            entry["mixture"] = {k: m["mixture"][k] for k in
                                ("prior_entropy", "mean_prior_entropy", "max_prior_entropy",
                                 "disagreement", "contexts")}
        entries.append(entry)
    return {"head": head, "seed": seed, "rows": first.get("T"), "M": first.get("M"),
            "d": first.get("d"), "bound": first.get("bound"), "epochs": entries}


def is_complete(run_dir: str) -> bool:
    """rank_vs_epoch.json lists every epoch dump the trainer reported (at least one), each with a
    current rank result."""
    path = os.path.join(run_dir, "rank_vs_epoch.json")
    try:
        with open(path) as f:
            listed = [(e["phase"], e["epoch"], e["subset_ppl"]) for e in json.load(f)["epochs"]]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    metrics = metrics_by_epoch(run_dir)
    expected = [(p, e, metrics[(p, e)]["epoch_dump"].get("ppl")) for p, e in dumped_epochs(run_dir)]
    return bool(expected) and listed == expected and \
        all(rank_is_current(run_dir, p, e) for p, e, _ in expected)
