"""The facts about heads that the pipeline plans and tabulates by, read from the binary that owns
them: `rank_analysis --list-heads --json` prints common/head_spec.h's registry (every head name
with theorem2_bounded, is_mixture, is_adaptive, may_output_neg_inf, rank_defined). The pipeline
keeps no copy of these facts (docs/design.md, "Who may use whom": it knows the C++ side only
through command lines and files).

The binary is found the way the driver finds the others, `<build>/analysis/rank_analysis`:
reproduce.py calls use(path) with its --build; without that call, `build/` of this checkout. The
answer is read once per binary and process (cached).

A head is written `name[:key=value,...]` (docs/design.md, "One spelling of a head"); the facts
are the name's. A name the registry does not list (train_classifier's `mse`, a squared error over
the linear outputs) has no probabilities: no dump, no rank.
"""

from __future__ import annotations

from pipeline_errors import PipelineError
import dataclasses
import functools
import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_binary = os.path.join(ROOT, "build", "analysis", "rank_analysis")


class HeadFactsError(PipelineError, RuntimeError):
    """rank_analysis is missing or its --list-heads answer is unusable: the message says which."""


@dataclasses.dataclass(frozen=True)
class HeadFacts:
    """One registry head's facts (common/head_spec.h, the functions of the same names)."""
    name: str
    theorem2_bounded: bool  # its rank has a bound: d + 1 + bias (softmax, Theorem 2), plus one
    # per tail cluster (adaptive; common/head_spec.h, head_rank_bound)
    is_mixture: bool  # MoS / MoSS: K experts mixed by a prior
    is_adaptive: bool  # adaptive softmax / sigsoftmax: clusters over a frequency-sorted vocabulary
    may_output_neg_inf: bool  # its log-output can be -inf (sparse, off the top k)
    rank_defined: bool  # its dumps have a numerical rank (rank_analysis refuses -inf)


class HeadRegistry:
    """Every registry head's facts, looked up by a head spec ("mos:K=2" -> mos)."""

    def __init__(self, facts: dict[str, HeadFacts]):
        self.facts = facts

    def of(self, spec: str) -> HeadFacts | None:
        """The facts of the spec's head, or None for a name the registry does not list."""
        return self.facts.get(spec.split(":", 1)[0])

    def is_head(self, spec: str) -> bool:
        """A registry head (with probabilities), not a trainer's own output such as mse."""
        return self.of(spec) is not None

    def is_mixture(self, spec: str) -> bool:
        f = self.of(spec)
        return bool(f and f.is_mixture)

    def rank_defined(self, spec: str) -> bool:
        """Its run dumps log-probabilities that have a numerical rank."""
        f = self.of(spec)
        return bool(f and f.rank_defined)


def parse(text: str, source: str = "rank_analysis --list-heads --json") -> HeadRegistry:
    """The registry from the JSON object {"heads": {name: {fact: bool, ...}, ...}}."""
    try:
        heads = json.loads(text)["heads"]
        facts = {name: HeadFacts(name=name, **{f.name: bool(v[f.name])
                                               for f in dataclasses.fields(HeadFacts)
                                               if f.name != "name"})
                 for name, v in heads.items()}
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise HeadFactsError(f"{source}: not the expected {{\"heads\": {{name: {{fact: bool}}}}}} "
                             f"object ({type(e).__name__}: {e})") from None
    if not facts:
        raise HeadFactsError(f"{source}: lists no heads")
    return HeadRegistry(facts)


def use(rank_analysis: str) -> None:
    """Reads the facts from this rank_analysis binary from now on (the driver's --build)."""
    global _binary
    _binary = os.path.abspath(rank_analysis)


@functools.lru_cache(maxsize=None)
def _query(binary: str) -> HeadRegistry:
    if not os.access(binary, os.X_OK):
        raise HeadFactsError(f"{binary} not built: the pipeline reads the head facts from "
                             "`rank_analysis --list-heads --json`; run `make build` (or pass "
                             "--build DIR)")
    cmd = [binary, "--list-heads", "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise HeadFactsError(f"{' '.join(cmd)}: exit status {r.returncode}: "
                             f"{r.stderr.strip()[-300:]}")
    return parse(r.stdout, " ".join(cmd))


def registry() -> HeadRegistry:
    """The head facts of the binary in use, queried once."""
    return _query(_binary)
