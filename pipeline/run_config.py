"""The one reader of TOML configs in the pipeline: a run's config.toml (what its trainer ran
with, written by the trainer beside its outputs) and the trainer config files that profiles name.

    run_config("results/cpu/softmax_s141")            # dict, {} before the trainer wrote it
    run_config_value("results/cpu/softmax_s141", "bptt", 70)
    load_toml("trainers/configs/ptb_cpu.toml")         # raises OSError / tomllib.TOMLDecodeError
"""
from __future__ import annotations

import os
import tomllib


def load_toml(path: str) -> dict:
    """A TOML file; OSError or tomllib.TOMLDecodeError for the caller to word."""
    with open(path, "rb") as f:
        return tomllib.load(f)


def read_toml(path: str) -> dict | None:
    """A TOML file, None when it is missing or unreadable."""
    try:
        return load_toml(path)
    except (OSError, tomllib.TOMLDecodeError):
        return None


def run_config(run_dir: str) -> dict | None:
    """The run's config.toml, None before its trainer wrote it."""
    return read_toml(os.path.join(run_dir, "config.toml"))


def run_config_value(run_dir: str, key: str, default=None):
    return (run_config(run_dir) or {}).get(key, default)
