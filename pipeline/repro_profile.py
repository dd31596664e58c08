"""A reproduction profile (pipeline/profiles/<name>.toml) and the plan it implies.

A profile names the heads, the seeds, the base trainer config (with optional `{name}` for the head's
registry name), the overrides, whether dynamic evaluation runs, how the analysis runs and a
sentence saying how the setting is scaled down from the paper. The plan is one Run per (head,
seed), each going through the per-run stages of stages.py that the profile enables, followed by
the profile-wide stages (plot, tables).
"""

from __future__ import annotations

from pipeline_errors import PipelineError
import dataclasses
import os
import tomllib

import head_facts
from run_config import load_toml
from gpu_projection import GpuTableError, parse_gpu_table
from slurm_resources import SlurmTable, SlurmTableError, parse_slurm_table
from stages import STAGE_NAMES
import trainer_kinds
from trainer_kinds import TrainerKind, TrainerKindError

_KEYS = {
    "name": str, "description": str, "scaled_down": str, "out": str, "config": str,
    "threads": int, "jobs": int, "heads": list, "seeds": list, "seeds_by_head": dict, "overrides": dict,
    "overrides_by_head": dict,
    "score_after_training": bool, "dyneval": dict, "analysis": dict, "epoch_ranks": dict,
    "estimate_seconds": dict,
    "run_here": bool, "requires": str, "slurm": dict, "gpu_throughput": dict, "trainer": str,
    "order": str, "sweep": dict, "prediction": str,
}
_REQUIRED = ("name", "scaled_down", "out", "config", "heads", "seeds")


class ProfileError(PipelineError, ValueError):
    """Bad profile: the message names the file and the field."""


@dataclasses.dataclass
class Run:
    head: str  # registry spec, e.g. "mos:K=3"
    seed: int
    config: str  # trainer config file
    dir: str  # run directory
    setting: dict = dataclasses.field(default_factory=dict)  # the sweep's value: {"emsize": 25}

    @property
    def name(self) -> str:
        """The head's registry name without options ("mos" for "mos:K=3")."""
        return self.head.split(":", 1)[0]

    @property
    def is_mixture(self) -> bool:
        """MoS / MoSS, as rank_analysis --list-heads reports common/head_spec.h's is_mixture."""
        return head_facts.registry().is_mixture(self.head)

    @property
    def label(self) -> str:
        swept = "".join(f" {k} = {v}" for k, v in self.setting.items())
        return f"{self.head}{swept} seed {self.seed}"


@dataclasses.dataclass
class Profile:
    path: str
    name: str
    description: str
    scaled_down: str
    out: str
    config: str
    threads: int
    jobs: int  # runs trained at a time on this machine (0: as many as the cores hold, cores // threads)
    heads: list[str]
    seeds: list[int]
    seeds_by_head: dict[str, list[int]]
    order: str  # "head" (every seed of a head, then the next head) or "seed" (paired seeds first)
    overrides: dict[str, object]
    overrides_by_head: dict[str, dict[str, object]]
    score_after_training: bool
    dyneval: dict[str, object]
    analysis: dict[str, object]
    epoch_ranks: dict[str, object]  # rows (0 = off), method, keep_dumps: see epoch_ranks.py
    estimate_seconds: dict[str, float]
    run_here: bool
    requires: str
    slurm: SlurmTable  # [slurm]: partition, account, per-stage resources (slurm_resources.py)
    gpu_throughput: dict  # [gpu_throughput]: measured tokens/s for the plan (gpu_projection.py)
    trainer: str = "wordlm"  # which build/trainers/train_<trainer> runs (trainer_kinds.known())
    # [sweep] key = "emsize", values = [25, 50]: every head and seed once per value (a run
    # directory <head>_<key><value>_s<seed>); {} = no sweep.
    sweep: dict = dataclasses.field(default_factory=dict)
    prediction: str = ""  # what the runs are expected to show, written before them (reports print it)

    @property
    def kind(self) -> TrainerKind:
        """Its trainer kind, as the binary describes itself (trainer_kinds.py)."""
        return trainer_kinds.kind(self.trainer)

    def seeds_of(self, head: str) -> list[int]:
        return self.seeds_by_head.get(head, self.seeds_by_head.get(head.split(":")[0], self.seeds))

    def overrides_of(self, head: str) -> dict[str, object]:
        """The trainer keys set for every run, then those of the head (by spec or by name)."""
        out = dict(self.overrides)
        out.update(self.overrides_by_head.get(head.split(":", 1)[0], {}))
        out.update(self.overrides_by_head.get(head, {}))
        return out

    def run_overrides(self, run: Run) -> dict[str, object]:
        """The trainer keys the run's command sets: the head's overrides, then the sweep's."""
        return {**self.overrides_of(run.head), **run.setting}

    def sweep_values(self) -> list[dict]:
        """One setting per swept value ([{}] without a sweep)."""
        if not self.sweep:
            return [{}]
        return [{self.sweep["key"]: v} for v in self.sweep["values"]]

    def runs(self) -> list[Run]:
        runs = []
        names = [h.split(":", 1)[0] for h in self.heads]
        for head, name in zip(self.heads, names):
            # The bare name unless two heads share it (sparse:k=2, sparse:k=3): then the full
            # spelling with ':', '=' and ',' as '_' (docs/design.md, "One spelling of a head").
            label = name if names.count(name) == 1 else \
                head.replace(":", "_").replace("=", "_").replace(",", "_")
            for setting in self.sweep_values():
                swept = "".join(f"_{k}{v}" for k, v in setting.items())
                for seed in self.seeds_of(head):
                    runs.append(Run(head=head, seed=seed, config=self.config.format(name=name),
                                    dir=os.path.join(self.out, f"{label}{swept}_s{seed}"),
                                    setting=setting))
        if self.order == "seed":  # every head's first seed, then every head's second, ...
            position = {seed: i for i, seed in enumerate(self.seeds)}
            runs.sort(key=lambda r: position.get(r.seed, len(position)))  # stable: heads in order
        return runs

    def analysed(self, run: Run) -> bool:
        """Whether the full-test rank analysis covers this run: its seed is among the first
        `analysis.seeds` seeds of its head (0 = every seed)."""
        n = int(self.analysis.get("seeds", 0))
        return n == 0 or run.seed in self.seeds_of(run.head)[:n]

    def estimate(self, run: Run, stage: str, head_cost: bool) -> float:
        """Seconds the profile expects `stage` of `run` to take (before any measurement); a stage
        whose time scales with the head's cost is `mixture_cost` times longer for MoS / MoSS."""
        base = float(self.estimate_seconds.get(stage, 0.0))
        if head_cost and run.is_mixture:
            base *= float(self.estimate_seconds.get("mixture_cost", 1.0))
        return base


def _fail(path: str, field: str, expected: str, got: object) -> ProfileError:
    return ProfileError(f"{path}: field '{field}': expected {expected}, got {got!r}")


def _is_int(value: object, lo: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= lo


# The sub-tables' keys, each as (default, check, expected): the schema load_profile applies, in
# the manner of the trainers' key tables (trainers/runkit/config_table.h). `strict`: a key not
# listed is refused (analysis keeps unknown keys for the stages that read them, e.g. check).
_METHODS = ("auto", "exact", "gram", "sketch")  # rank_analysis --method
_TABLES = {
    "analysis": (False, {
        "method": ("auto", lambda v: v in _METHODS,
                   "auto, exact, gram or sketch"),
        # tasks > 1: the analyse stage runs rank_analysis --mpi under srun or mpirun.
        "tasks": (1, lambda v: _is_int(v, 1), "an integer >= 1"),
        "nodes": (1, lambda v: _is_int(v, 1), "an integer >= 1"),
        "seeds": (0, lambda v: _is_int(v, 0), "an integer >= 0 (0 = every seed)"),
        "verdict_only": (False, lambda v: isinstance(v, bool), "true or false"),
        # budget_gb: rank_analysis --budget-gb, the memory the analysis may use (0 = its default,
        # 8 GiB); auto picks the method that fits it (the Gram matrix of WikiText-2's M = 33278
        # takes 8.9 GB, ~10.4 GiB at peak).
        "budget_gb": (0, lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
                      and v >= 0, "a number of GiB >= 0 (0 = rank_analysis's default)"),
        "keep_dumps": (True, lambda v: v is True or v is False or v == "analysed",
                       'true, false or "analysed"'),
        # method_by_head: a head's own method in place of `method` ({"moss:K=2" = "auto"}), for
        # a head the profile's method cannot count in the time a run has (_check_analysis).
        "method_by_head": ({}, lambda v: isinstance(v, dict) and all(
            m in _METHODS for m in v.values()),
            'a table of head = "auto", "exact", "gram" or "sketch"'),
    }),
    "dyneval": (True, {
        "enabled": (False, lambda v: isinstance(v, bool), "true or false"),
        "args": ([], lambda v: isinstance(v, list), "a list of dyneval's arguments"),
        "predicted_gain": (0.0, lambda v: isinstance(v, (int, float)) and
                           not isinstance(v, bool) and 0 <= v < 1,
                           "a fraction in [0, 1) (0.05 = 5%)"),
    }),
    "epoch_ranks": (True, {
        "rows": (0, lambda v: _is_int(v, 0), "an integer >= 0 (0 = no epoch dumps)"),
        "method": ("exact", lambda v: v in ("auto", "exact", "gram"), "auto, exact or gram"),
        "keep_dumps": (False, lambda v: isinstance(v, bool), "true or false"),
    }),
}
# The trainer keys a profile sets itself: no override, no sweep of them.
_OWN_KEYS = ("head", "seed", "out", "threads", "epoch_dump_rows")


def _read(path: str) -> dict:
    try:
        data = load_toml(path)
    except FileNotFoundError:
        raise ProfileError(f"{path}: no such profile (see pipeline/profiles/)") from None
    except tomllib.TOMLDecodeError as e:
        raise ProfileError(f"{path}: not valid TOML: {e}") from None
    for key, value in data.items():
        if key not in _KEYS:
            raise _fail(path, key, "one of " + ", ".join(sorted(_KEYS)), key)
        if not isinstance(value, _KEYS[key]) or (_KEYS[key] is int and isinstance(value, bool)):
            raise _fail(path, key, f"a {_KEYS[key].__name__}", value)
    for key in _REQUIRED:
        if key not in data:
            raise _fail(path, key, "a value (the field is required)", None)
    for key in ("name", "out", "config", "scaled_down"):
        if not data[key].strip():
            raise _fail(path, key, "a non-empty string", data[key])
    return data


def _check_table(path: str, name: str, table: dict) -> dict:
    """One sub-table against _TABLES: every listed key's check, unknown keys where strict."""
    strict, schema = _TABLES[name]
    for key in table:
        if strict and key not in schema:
            raise _fail(path, f"{name}.{key}", "one of " + ", ".join(schema), key)
    for key, (default, ok, expected) in schema.items():
        if not ok(table.get(key, default)):
            raise _fail(path, f"{name}.{key}", expected, table.get(key))
    return dict(table)


def _check_analysis(path: str, analysis: dict, heads: list) -> None:
    """The rules between analysis keys, over every method a head gets (`method`, and each
    head's own in method_by_head)."""
    tasks, by_head = analysis.get("tasks", 1), analysis.get("method_by_head", {})
    for head in by_head:
        if head not in heads:
            raise _fail(path, f"analysis.method_by_head.{head}", "a head of the profile's heads ("
                        + ", ".join(heads) + ")", head)
    if analysis.get("nodes", 1) > tasks:
        raise _fail(path, "analysis.nodes", f"at most analysis.tasks = {tasks}",
                    analysis.get("nodes"))
    methods = [("analysis.method", analysis.get("method", "auto"))]
    methods += [(f"analysis.method_by_head.{h}", m) for h, m in by_head.items()]
    for field, method in methods:
        if tasks > 1 and method == "exact":
            raise _fail(path, field, "auto, gram or sketch with analysis.tasks > 1 (the exact "
                        "SVD runs in one process)", "exact")
        if analysis.get("verdict_only", False) and method not in ("auto", "sketch"):
            raise _fail(path, field, "sketch or auto with analysis.verdict_only (only the "
                        "sketch stops at the verdict)", method)


def _seed_list(path: str, field: str, value: object) -> list[int]:
    if (not isinstance(value, list) or not value or not all(_is_int(s, 0) for s in value)
            or len(set(value)) != len(value)):
        raise _fail(path, field, "a non-empty list of distinct seeds >= 0", value)
    return list(value)


def _check_overrides(path: str, field: str, table: object) -> dict:
    if not isinstance(table, dict):
        raise _fail(path, field, "a table of trainer keys", table)
    for key, value in table.items():
        if key in _OWN_KEYS:
            raise _fail(path, f"{field}.{key}", "a key the profile does not set itself", key)
        if isinstance(value, (dict, list)):
            raise _fail(path, f"{field}.{key}", "a scalar", value)
    return dict(table)


def _check_sweep(path: str, sweep: dict) -> dict:
    if not sweep:
        return {}
    if set(sweep) != {"key", "values"}:
        raise _fail(path, "sweep", "a table of key and values", sorted(sweep))
    if not isinstance(sweep["key"], str) or not sweep["key"] or sweep["key"] in _OWN_KEYS:
        raise _fail(path, "sweep.key", "a trainer key the profile does not set itself",
                    sweep["key"])
    values = sweep["values"]
    if not isinstance(values, list) or len(values) < 2 or len(set(values)) != len(values) or \
            not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise _fail(path, "sweep.values", "a list of at least two distinct numbers", values)
    return dict(sweep)


def _check_scalars(path: str, data: dict) -> None:
    """The top-level fields with a range: heads, threads, jobs, order, trainer, estimates."""
    heads = data["heads"]
    if not heads or not all(isinstance(h, str) and h for h in heads):
        raise _fail(path, "heads", "a non-empty list of head specs", heads)
    if len(set(heads)) != len(heads):
        raise _fail(path, "heads", "distinct heads", heads)
    if data.get("threads", 0) < 0:
        raise _fail(path, "threads", "an integer >= 0 (0 = number of cores)", data["threads"])
    if data.get("jobs", 1) < 0:
        raise _fail(path, "jobs", "an integer >= 0 (0 = cores // threads; 1 = one run at a time)",
                    data["jobs"])
    if data.get("order", "head") not in ("head", "seed"):
        raise _fail(path, "order", "head or seed", data["order"])
    trainer = data.get("trainer", "wordlm")
    if not isinstance(trainer, str) or not trainer.replace("_", "").isalnum():
        raise _fail(path, "trainer", "a trainer kind (build/trainers/train_<kind>, e.g. wordlm)",
                    trainer)
    for key, value in data.get("estimate_seconds", {}).items():
        if key not in STAGE_NAMES + ("mixture_cost",) or \
                not isinstance(value, (int, float)) or value < 0:
            raise _fail(path, f"estimate_seconds.{key}", "a stage name with seconds >= 0", value)


def load_profile(path: str) -> Profile:
    """Reads and checks a profile; raises ProfileError naming the file and the field."""
    data = _read(path)
    _check_scalars(path, data)
    tables = {name: _check_table(path, name, data.get(name, {})) for name in _TABLES}
    _check_analysis(path, tables["analysis"], list(data.get("heads", [])))
    try:
        slurm = parse_slurm_table(data.get("slurm", {}))
        gpu = parse_gpu_table(data.get("gpu_throughput", {}))
    except (SlurmTableError, GpuTableError) as e:
        raise _fail(path, e.field, e.expected, e.got) from None
    return Profile(
        path=path, name=data["name"], description=data.get("description", ""),
        scaled_down=" ".join(data["scaled_down"].split()), out=data["out"],
        config=data["config"], threads=data.get("threads", 0), jobs=data.get("jobs", 1),
        heads=list(data["heads"]), seeds=_seed_list(path, "seeds", data["seeds"]),
        seeds_by_head={h: _seed_list(path, f"seeds_by_head.{h}", s)
                       for h, s in data.get("seeds_by_head", {}).items()},
        order=data.get("order", "head"),
        overrides=_check_overrides(path, "overrides", data.get("overrides", {})),
        overrides_by_head={h: _check_overrides(path, f"overrides_by_head.{h}", t)
                           for h, t in data.get("overrides_by_head", {}).items()},
        score_after_training=data.get("score_after_training", False),
        dyneval=tables["dyneval"], analysis=tables["analysis"],
        epoch_ranks=tables["epoch_ranks"],
        estimate_seconds={k: float(v) for k, v in data.get("estimate_seconds", {}).items()},
        run_here=data.get("run_here", True), requires=data.get("requires", ""), slurm=slurm,
        gpu_throughput=gpu, trainer=data.get("trainer", "wordlm"),
        sweep=_check_sweep(path, data.get("sweep", {})),
        prediction=" ".join(data.get("prediction", "").split()))


def _check_head_spec(path: str, field: str, head: str, registry) -> None:
    """A head spec the C++ parser reads: its name in rank_analysis --list-heads' registry, its
    options by head_spec.py; else ProfileError naming the field."""
    import head_spec
    try:
        head_spec.check(head, list(registry.facts))
    except head_spec.HeadSpecError as e:
        if head.split(":", 1)[0] not in registry.facts:
            raise _fail(path, field, "a head that rank_analysis --list-heads lists ("
                        + ", ".join(registry.facts) + ", or name:key=value,...)", head) from None
        raise _fail(path, field, f"a head spec as common/head_spec.cpp parses it ({e})",
                    head) from None


def _trainer_config(profile: Profile, head: str, configs: dict[str, dict]) -> str:
    """The trainer config file of a head's runs (profile.config with {name}), loaded once into
    `configs`; ProfileError when it is missing or not TOML."""
    path = profile.path
    try:
        config = profile.config.format(name=head.split(":", 1)[0])
    except (KeyError, IndexError, ValueError):
        raise _fail(path, "config", "a path with at most {name} in braces",
                    profile.config) from None
    if config not in configs:
        try:
            configs[config] = load_toml(config)
        except OSError:
            where = "" if os.path.isabs(config) else f" (relative to {os.getcwd()})"
            raise _fail(path, "config", f"an existing trainer config file{where}",
                        config) from None
        except tomllib.TOMLDecodeError as e:
            raise _fail(path, "config", f"a TOML trainer config ({e})", config) from None
    return config


def check_runs(profile: Profile, registry) -> None:
    """What load_profile cannot check without the build: the trainer is a binary of the build
    that describes itself, every head is one the C++ parser reads (its name in `registry`,
    head_facts' answer of rank_analysis --list-heads, its options by head_spec.py) and the
    trainer takes with the run's config and overrides (its own validate, asked through
    `--describe`: trainer_kinds.py), every trainer config the runs name exists and is TOML, and
    the per-head tables name heads of the profile. Raises ProfileError naming the file and the
    field, before anything is written."""
    path = profile.path
    try:
        kind = profile.kind
    except TrainerKindError as e:
        raise _fail(path, "trainer", "a trainer of this build (" +
                    (", ".join(trainer_kinds.known()) or "none built") + f"): {e}",
                    profile.trainer) from None
    names = {h.split(":", 1)[0] for h in profile.heads}
    for field, table in (("seeds_by_head", profile.seeds_by_head),
                         ("overrides_by_head", profile.overrides_by_head)):
        for key in table:
            if key not in profile.heads and key not in names:
                raise _fail(path, f"{field}.{key}", "a head of the profile's heads "
                            f"({', '.join(profile.heads)}), by spelling or name", key)
    configs: dict[str, dict] = {}
    # (config file, overrides) -> the (field, head) pairs to ask the trainer about, in one call.
    asked: dict[tuple, list[tuple[str, str]]] = {}
    for i, head in enumerate(profile.heads):
        field = f"heads[{i}]"
        if head not in kind.own_heads:
            _check_head_spec(path, field, head, registry)
        config = _trainer_config(profile, head, configs)
        for setting in profile.sweep_values():
            if setting and next(iter(setting)) not in configs[config]:
                raise _fail(path, "sweep.key", f"a key of the trainer config {config}",
                            next(iter(setting)))
            asked.setdefault((config, tuple(sorted(
                {**profile.overrides_of(head), **setting}.items()))), []).append((field, head))
    for (config, overrides), heads in asked.items():
        try:
            why = kind.refusals(config, dict(overrides), [h for _, h in heads])
        except TrainerKindError as e:
            raise _fail(path, "overrides", f"settings {kind.binary} accepts ({e})",
                        dict(overrides)) from None
        for field, head in heads:
            if why[head]:
                raise _fail(path, field, f"a head that {kind.binary} takes with these settings "
                            f"({why[head]})", head)
