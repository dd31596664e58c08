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
them complete (any layout of final.json: final_json.py) and the model final.json describes is in
the run directory. An earlier stage (train, finetune of train_wordlm) is done when the files it
hands to the next stage are there (`hands_on`).

Which heads a kind takes (`refusal`) repeats the trainers' own `validate` (trainers/*/config.cpp)
over the head facts of rank_analysis --list-heads, so a profile is refused when it is loaded;
tests/pipeline/test_profile_errors.py checks it against the trainers.
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
    # The files each stage before the last hands to the next one (its done-check).
    hands_on: dict = dataclasses.field(default_factory=dict)
    best_weights: str = "best.pt"  # the model final.json describes, where it does not name one
    single_heads: bool = False  # only single heads with finite log-outputs (no MoS, no sparse)
    learnable_bias: bool = True  # takes sigsoftmax:b=1
    own_heads: tuple[str, ...] = ()  # outputs of its own besides the registry heads (mse)
    classes: int = 0  # > 0: a sparse head's k must not exceed it
    nhidlast_rule: bool = False  # train_wordlm: nhidlast other than 0 / emsize needs a mixture
    adaptive_heads: bool = False  # takes the adaptive heads (a frequency-sorted vocabulary)

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
        for key, value in d.p.run_overrides(run).items():
            cmd += [f"--{key}", str(value).lower() if isinstance(value, bool) else str(value)]
        rows = int(d.p.epoch_ranks.get("rows", 0))
        if self.epoch_dumps and rows:
            cmd += ["--epoch_dump_rows", str(rows)]
        if self.until:
            cmd += ["--until", stage]
        if os.path.exists(os.path.join(run.dir, "checkpoint.pt")):
            cmd.append("--resume")
        return cmd

    def refusal(self, spec: str, registry, settings: dict) -> str | None:
        """Why this kind's trainer refuses the head `spec` (None: it takes it). `registry`:
        head_facts' HeadRegistry; `settings`: the run's trainer keys (base config + overrides)."""
        import head_spec
        if spec in self.own_heads:
            return None
        try:
            parsed = head_spec.check(spec, list(registry.facts))
        except head_spec.HeadSpecError as e:
            return str(e)
        facts = registry.of(spec)
        if facts.is_adaptive and not self.adaptive_heads:
            return "the adaptive heads train in train_wordlm"
        if self.single_heads and (facts.is_mixture or facts.may_output_neg_inf):
            return "a single head with finite log-outputs: no mixture, no head that may " \
                   "output -inf"
        if not self.learnable_bias and parsed.get("b"):
            return "no sigsoftmax:b=1 (the learnable bias)"
        if self.classes and parsed.name == "sparse" and parsed.get("k") > self.classes:
            return f"k must be <= {self.classes} classes"
        if self.nhidlast_rule and not facts.is_mixture:
            nhidlast, emsize = settings.get("nhidlast", 0), settings.get("emsize")
            if nhidlast not in (0, emsize):
                return f"nhidlast = {nhidlast} needs a mixture head (mos/moss): a single " \
                       f"head's decoder input is emsize = {emsize}"
        return None

    def write_report(self, profile, runs, global_timings: dict) -> str:
        """Writes <out>/summary.md with the kind's report function; returns its path."""
        module, function = self.report
        return getattr(importlib.import_module(module), function)(profile, runs, global_timings)


KINDS: dict[str, TrainerKind] = {k.name: k for k in (
    TrainerKind("wordlm", stages=("train", "finetune", "dump"), until=True, epoch_dumps=True,
                adaptive_heads=True,
                dyneval=True, singular_value_plot=True, report_stage="tables",
                report=("summary", "write_summary"),
                # finetune restarts from best.pt and the checkpoint; the dump reads the
                # checkpoint and best_finetune.pt (finetune_epochs = 0: best.pt).
                hands_on={"train": ("checkpoint.pt", "best.pt"),
                          "finetune": ("checkpoint.pt", "best_finetune.pt")},
                best_weights="best_finetune.pt", nhidlast_rule=True),
    TrainerKind("nplm", stages=("train",), until=False, epoch_dumps=False, dyneval=False,
                singular_value_plot=True, report_stage="tables",
                report=("seed_summary", "write_nplm_summary"), single_heads=True,
                learnable_bias=False),
    TrainerKind("charlm", stages=("train",), until=False, epoch_dumps=False, dyneval=False,
                singular_value_plot=True, report_stage="tables",
                report=("seed_summary", "write_charlm_summary"), single_heads=True),
    TrainerKind("classifier", stages=("classify",), until=False, epoch_dumps=False,
                dyneval=False, singular_value_plot=False, report_stage="classify_report",
                report=("classify_summary", "write_summary"), own_heads=("mse",), classes=10),
)}
