"""A run's final.json, read in one schema whatever wrote it.

Schema 2 (what the trainers write): the keys every trainer shares, and a section named after the
trainer with the keys of that trainer alone:

    {"event": "final", "schema": 2,
     "trainer": "wordlm" | "nplm" | "charlm" | "classifier",
     "head": str, "dataset": str, "seed": int, "steps": int,
     "best_model": str, "valid_loss": float,
     "dump": str (the path of logprobs.h5, "" when the run has none),
     "dump_ppl": float or null (the dump's ppl attribute), "dump_rows": int,
     "<trainer>": {...}}

  wordlm:     valid_ppl, test_ppl, asgd_epoch
  nplm:       d, epochs, test_loss, test_ppl, valid_ppl
  charlm:     M, d, epochs, test_bpc, test_loss, valid_bpc
  classifier: best_epoch, classes, d, split, epochs_run, final_lr, train_loss, valid_error_pct,
              test_error_pct, test_loss, test_nll, test_outside_support, test_ppl,
              train_images, valid_images, test_images

The results committed before schema 2 hold three older layouts, all flat (one level), without
"schema": train_wordlm's (no trainer, head, dataset, seed, dump_ppl or dump_rows: its test_ppl is
the dump's), train_nplm's and train_charlm's (with trainer, head, dump_ppl and dump_rows), and
train_classifier's (no trainer key; its test_ppl is the dump's, its dump holds test_images rows).
read_final() turns each into schema 2, so that no reader of final.json knows about layouts; what an
old file did not record is "" (strings) or None (numbers).
"""

from __future__ import annotations

from pipeline_errors import PipelineError
import json

SCHEMA = 2
# The keys every trainer writes at the top level; the rest is the trainer's section.
SHARED = ("event", "schema", "trainer", "head", "dataset", "seed", "steps", "best_model",
          "valid_loss", "dump", "dump_ppl", "dump_rows")
_EMPTY = {"event": "final", "schema": SCHEMA, "trainer": "", "head": "", "dataset": "",
          "seed": None, "steps": None, "best_model": "", "valid_loss": None, "dump": "",
          "dump_ppl": None, "dump_rows": None}


class FinalJsonError(PipelineError, ValueError):
    """A final.json that names no trainer when the caller gave none: the message names it."""


def read_final(path: str, trainer: str = "") -> dict | None:
    """final.json at `path` in schema 2, or None when the file is missing or not JSON.
    `trainer` is the kind that wrote it (the profile's), needed for the old layouts that do not
    name it; a file that names its trainer is read as its own."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    return normalise(data, trainer, path)


def normalise(data: dict, trainer: str = "", where: str = "final.json") -> dict:
    """A final.json object (schema 2 or an old flat layout) in schema 2."""
    if data.get("schema") == SCHEMA:
        out = dict(_EMPTY)
        out.update(data)
        out.setdefault(out["trainer"], {})
        return out
    kind = data.get("trainer") or trainer
    if not kind:
        raise FinalJsonError(f"{where}: an old layout that names no trainer, and none was given")
    out = dict(_EMPTY)
    out.update({k: v for k, v in data.items() if k in SHARED})
    out["schema"], out["trainer"] = SCHEMA, kind
    section = {k: v for k, v in data.items() if k not in SHARED}
    out[kind] = section
    # What the old layouts left out, from what they did record: train_wordlm's and
    # train_classifier's test_ppl is their dump's ppl attribute; the classifier dumps its test
    # split (test_images rows) whenever it names a dump.
    if "dump_ppl" not in data:
        out["dump_ppl"] = section.get("test_ppl")
    if "dump_rows" not in data and out["dump"] and "test_images" in section:
        out["dump_rows"] = section["test_images"]
    return out


def section(final: dict) -> dict:
    """The trainer's own keys of a schema-2 final.json."""
    return final.get(final.get("trainer", ""), {})
