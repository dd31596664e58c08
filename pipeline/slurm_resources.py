"""The [slurm] table of a profile: where and with what the Slurm backend (slurm.py) runs each job.

    [slurm]
    partition = "gpu"                 # sbatch --partition ("" = the cluster's default;
    account = ""                      #   --partition / --account of reproduce.py win)
    sbatch_args = ["--qos=normal"]    # passed to every sbatch as they are
    default = { cpus = 4, mem = "16G", time = "12:00:00" }   # every job
    train = { gres = "gpu:1", time = "2-00:00:00" }          # one stage's job, over default

A stage's table (one of stages.STAGE_NAMES) overrides `default` key by key; the one profile-wide
job (plot, then tables) merges plot's and tables' tables. Keys: cpus (sbatch --cpus-per-task, an
integer >= 1), mem (--mem, e.g. "500M", "16G"), time (--time, Slurm's forms: "30", "1:30:00",
"2-00:00:00"), gres (--gres, e.g. "gpu:1"; "" = none). A key not given is not passed: the
cluster's default applies. Errors name the file and the field, as the rest of the profile's.
"""

from __future__ import annotations

from pipeline_errors import PipelineError
import dataclasses
import re

from stages import STAGE_NAMES

_MEM = re.compile(r"^[1-9][0-9]*[KMGT]?$")
# Slurm's --time: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S.
_TIME = re.compile(r"^([0-9]+|[0-9]+:[0-9]{1,2}|[0-9]+:[0-9]{1,2}:[0-9]{1,2}|"
                   r"[0-9]+-[0-9]+(:[0-9]{1,2}){0,2})$")
_GRES = re.compile(r"^$|^[A-Za-z0-9_]+(:[A-Za-z0-9_.-]+)?(:[0-9]+)?$")
_RESOURCE_KEYS = {"cpus": "an integer >= 1", "mem": 'a size such as "500M" or "16G"',
                  "time": 'a Slurm time such as "30", "1:30:00" or "2-00:00:00"',
                  "gres": 'a generic resource such as "gpu:1" ("" = none)'}


class SlurmTableError(PipelineError, ValueError):
    """(field, expected, got) of a bad [slurm] entry; repro_profile.py adds the file."""

    def __init__(self, field: str, expected: str, got: object):
        super().__init__(field)
        self.field, self.expected, self.got = field, expected, got


@dataclasses.dataclass
class Resources:
    cpus: int | None = None
    mem: str | None = None
    time: str | None = None
    gres: str | None = None
    # Set by slurm.py, not by the table: the analyse job of a profile with analysis.tasks > 1.
    ntasks: int | None = None
    nodes: int | None = None

    def merged(self, over: "Resources") -> "Resources":
        return Resources(**{k: getattr(over, k) if getattr(over, k) is not None else v
                            for k, v in dataclasses.asdict(self).items()})

    def sbatch_options(self) -> list[str]:
        out = []
        if self.cpus is not None:
            out.append(f"--cpus-per-task={self.cpus}")
        if self.mem:
            out.append(f"--mem={self.mem}")
        if self.time:
            out.append(f"--time={self.time}")
        if self.gres:
            out.append(f"--gres={self.gres}")
        if self.ntasks:
            out += [f"--ntasks={self.ntasks}", f"--nodes={self.nodes or 1}"]
        return out


@dataclasses.dataclass
class SlurmTable:
    partition: str = ""
    account: str = ""
    sbatch_args: list[str] = dataclasses.field(default_factory=list)
    default: Resources = dataclasses.field(default_factory=Resources)
    stages: dict[str, Resources] = dataclasses.field(default_factory=dict)

    def resources(self, *stages: str) -> Resources:
        """`default`, then each named stage's table over it."""
        r = self.default
        for s in stages:
            r = r.merged(self.stages.get(s, Resources()))
        return r


def _resources(field: str, table: object) -> Resources:
    if not isinstance(table, dict):
        raise SlurmTableError(field, "a table of cpus, mem, time, gres", table)
    r = Resources()
    for key, value in table.items():
        f = f"{field}.{key}"
        if key not in _RESOURCE_KEYS:
            raise SlurmTableError(f, "one of " + ", ".join(_RESOURCE_KEYS), key)
        if key == "cpus":
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise SlurmTableError(f, _RESOURCE_KEYS[key], value)
        elif not isinstance(value, str) or not {"mem": _MEM, "time": _TIME,
                                                "gres": _GRES}[key].match(value):
            raise SlurmTableError(f, _RESOURCE_KEYS[key], value)
        setattr(r, key, value)
    return r


def parse_slurm_table(table: dict) -> SlurmTable:
    """Checks a profile's [slurm] table; raises SlurmTableError naming the field."""
    out = SlurmTable()
    for key, value in table.items():
        field = f"slurm.{key}"
        if key in ("partition", "account"):
            if not isinstance(value, str) or any(c.isspace() for c in value):
                raise SlurmTableError(field, "a name without spaces", value)
            setattr(out, key, value)
        elif key == "sbatch_args":
            if not isinstance(value, list) or not all(
                    isinstance(a, str) and a.startswith("--") for a in value):
                raise SlurmTableError(field, 'a list of sbatch options ("--qos=normal")', value)
            out.sbatch_args = list(value)
        elif key == "default":
            out.default = _resources(field, value)
        elif key in STAGE_NAMES:
            out.stages[key] = _resources(field, value)
        else:
            raise SlurmTableError(field, "partition, account, sbatch_args, default or a stage ("
                                  + ", ".join(STAGE_NAMES) + ")", key)
    return out
