"""Projected GPU-hours of a profile from measured training throughput (the [gpu_throughput]
table), for the plan that reproduce.py prints:

    [gpu_throughput]
    train_tokens_per_epoch = 929589     # PTB's training split with <eos> (the trainer's count)
    source = "bench/gpu_throughput.sh on ..., commit ..."   # where the numbers come from
    tokens_per_s = { softmax = ..., sigsoftmax = ..., "mos:K=15" = ... }   # by head spec or name

A run's training needs at most (epochs + finetune_epochs) x train_tokens_per_epoch tokens (its
config's maxima; the non-monotone trigger usually ends finetuning earlier); divided by the head's
tokens/s this is the projection. Validation passes, the dump, score and dyneval are not in it.
A head without a measured tokens/s is reported as "not measured": nothing is guessed.
"""

from __future__ import annotations

from pipeline_errors import PipelineError
import os

from run_config import read_toml


class GpuTableError(PipelineError, ValueError):
    def __init__(self, field: str, expected: str, got: object):
        super().__init__(field)
        self.field, self.expected, self.got = field, expected, got


def parse_gpu_table(table: dict) -> dict:
    """The checked table ({} for a profile without one, e.g. the CPU profiles)."""
    if not table:
        return {}
    out = {"train_tokens_per_epoch": 0, "source": "", "tokens_per_s": {}}
    for key, value in table.items():
        field = f"gpu_throughput.{key}"
        if key == "train_tokens_per_epoch":
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise GpuTableError(field, "an integer >= 1", value)
        elif key == "source":
            if not isinstance(value, str):
                raise GpuTableError(field, "a string", value)
        elif key == "tokens_per_s":
            if not isinstance(value, dict) or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
                    for v in value.values()):
                raise GpuTableError(field, "a table of head = tokens/s > 0", value)
        else:
            raise GpuTableError(field, "train_tokens_per_epoch, source or tokens_per_s", key)
        out[key] = value
    return out


def _epochs(profile, run) -> tuple[int | None, int | None]:
    """The run's epochs and finetune_epochs: its config file, then the profile's overrides."""
    config = read_toml(run.config) or {}
    config.update(profile.run_overrides(run))
    return config.get("epochs"), config.get("finetune_epochs")


def projection_lines(profile) -> list[str]:
    """The plan's lines about GPU-hours (each without indentation); none without the table."""
    g = profile.gpu_throughput
    if not g:
        return []
    rates = g.get("tokens_per_s", {})
    if not rates:
        return ["projected GPU-hours: not measured (no GPU throughput in the profile's "
                "[gpu_throughput] table; measure it with bench/gpu_throughput.sh on a GPU "
                "machine and enter tokens_per_s there)"]
    per_epoch = g.get("train_tokens_per_epoch", 0)
    lines = [f"projected GPU-hours (training only, at most every configured epoch; tokens/s "
             f"from {g.get('source') or 'an unnamed source'}):"]
    total, missing = 0.0, []
    by_head: dict[str, list] = {}
    for run in profile.runs():
        by_head.setdefault(run.head, []).append(run)
    for head, runs in by_head.items():
        rate = rates.get(head, rates.get(head.split(":", 1)[0]))
        epochs, finetune = _epochs(profile, runs[0])
        if rate is None or not per_epoch or epochs is None or finetune is None:
            why = "tokens/s not measured" if rate is None else (
                "train_tokens_per_epoch not set" if not per_epoch else
                f"epochs / finetune_epochs not in {os.path.basename(runs[0].config)}")
            lines.append(f"  {head}: {len(runs)} runs: {why}")
            missing.append(head)
            continue
        hours = len(runs) * (epochs + finetune) * per_epoch / rate / 3600
        total += hours
        lines.append(f"  {head}: {len(runs)} runs x ({epochs} + {finetune}) epochs x {per_epoch} "
                     f"tokens / {rate:g} tokens/s = {hours:,.0f} GPU-hours")
    lines.append(f"  total: {total:,.0f} GPU-hours" +
                 (f" + the heads not measured ({', '.join(missing)})" if missing else ""))
    return lines
