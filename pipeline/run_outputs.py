"""Whether a run's trainer outputs are complete: final.json (read through final_json.py, any
layout) and, where it names a dump, logprobs.h5 with every row, agreeing with final.json on the
row count and the test perplexity. The done-check of every trainer's last stage (stages.py)."""

from __future__ import annotations

import math
import os

from final_json import read_final


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
