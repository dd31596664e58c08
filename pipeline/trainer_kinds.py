"""One descriptor per trainer kind: what the pipeline needs to know about a trainer binary, so that
the stage table (stages.py), the driver (reproduce.py) and the Slurm backend look a kind up
instead of branching on its name.

A descriptor says which binary runs (build/trainers/train_<name>), which trainer stages a run has
and how each becomes a command line, which other stages the kind supports (dyneval's score and
dynamic evaluation, rank during training), whether the profile plots the singular values, and
which function writes the profile's summary.md (the report, in the stage `report_stage`).

    wordlm      train_wordlm: train -> finetune -> dump, one `--until STAGE` command each
                (resumable); score and dyneval through dyneval; --epoch_dump_rows
    nplm        train_nplm: one command trains, evaluates and dumps (stage train)
    charlm      train_charlm: likewise
    classifier  train_classifier: one command trains, tests the best model and dumps (stage
                classify); its report is classify_summary with the test-error plot

The trainer's last stage writes final.json and the dump; it is done when run_outputs.py finds
them complete (any layout of final.json: final_json.py).
"""

from __future__ import annotations

import dataclasses
import importlib
import os


@dataclasses.dataclass(frozen=True)
class TrainerKind:
    name: str  # the profile's `trainer`, final.json's "trainer" and the name of its section
    stages: tuple[str, ...]  # its trainer stages in order; the last writes final.json + the dump
    until: bool  # each stage is `--until STAGE` of one resumable command (else one command)
    epoch_dumps: bool  # takes --epoch_dump_rows: the epoch_ranks and epoch_plot stages
    dyneval: bool  # its runs can be scored and dynamically evaluated by the dyneval binary
    singular_value_plot: bool  # the profile stage `plot` (first seed's singular values)
    report_stage: str  # the profile stage that writes summary.md
    report: tuple[str, str]  # (module, function): f(profile, runs, global_timings) -> path

    @property
    def binary(self) -> str:
        return "train_" + self.name

    @property
    def binaries(self) -> tuple[str, ...]:
        """The binaries its stages run, besides rank_analysis (reproduce.py checks them)."""
        return (self.binary,) + (("dyneval",) if self.dyneval else ())

    @property
    def dump_stage(self) -> str:
        """The trainer stage that writes final.json and logprobs.h5 (analyse waits for it)."""
        return self.stages[-1]

    def command(self, d, run, stage: str) -> list[str]:
        """The trainer command of `run` for one of its stages: the run's config, head, seed,
        directory and threads, the profile's overrides for the head, then what the kind takes
        (--epoch_dump_rows, --until), and --resume where a checkpoint exists."""
        cmd = [d.bins[self.binary], "--config", run.config, "--head", run.head,
               "--seed", str(run.seed), "--out", run.dir, "--threads", str(d.threads)]
        for key, value in d.p.overrides_of(run.head).items():
            cmd += [f"--{key}", str(value).lower() if isinstance(value, bool) else str(value)]
        rows = int(d.p.epoch_ranks.get("rows", 0))
        if self.epoch_dumps and rows:
            cmd += ["--epoch_dump_rows", str(rows)]
        if self.until:
            cmd += ["--until", stage]
        if os.path.exists(os.path.join(run.dir, "checkpoint.pt")):
            cmd.append("--resume")
        return cmd

    def write_report(self, profile, runs, global_timings: dict) -> str:
        """Writes <out>/summary.md with the kind's report function; returns its path."""
        module, function = self.report
        return getattr(importlib.import_module(module), function)(profile, runs, global_timings)


KINDS: dict[str, TrainerKind] = {k.name: k for k in (
    TrainerKind("wordlm", stages=("train", "finetune", "dump"), until=True, epoch_dumps=True,
                dyneval=True, singular_value_plot=True, report_stage="tables",
                report=("summary", "write_summary")),
    TrainerKind("nplm", stages=("train",), until=False, epoch_dumps=False, dyneval=False,
                singular_value_plot=True, report_stage="tables",
                report=("seed_summary", "write_nplm_summary")),
    TrainerKind("charlm", stages=("train",), until=False, epoch_dumps=False, dyneval=False,
                singular_value_plot=True, report_stage="tables",
                report=("seed_summary", "write_charlm_summary")),
    TrainerKind("classifier", stages=("classify",), until=False, epoch_dumps=False,
                dyneval=False, singular_value_plot=False, report_stage="classify_report",
                report=("classify_summary", "write_summary")),
)}
