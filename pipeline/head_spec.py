"""A head spec `name[:key=value,...]` checked before anything runs, so that a profile naming a head
the trainers would refuse fails when it is loaded, not at its train stage.

The head NAMES come from the binary (`rank_analysis --list-heads --json`, head_facts.py). The
OPTION rules do not: that answer lists names and facts, not options, so `check()` repeats
common/head_spec.cpp's HeadSpec::parse here, the one C++ rule the pipeline copies:

    sparse      k=INT >= 1        (default 20)
    mos, moss   K=INT >= 1        (default 15)
    relu        eps=NUMBER > 0    (finite; default 1e-8)
    spherical   eps=NUMBER > 0    (finite; default 0.0198)
    sigsoftmax  b=INT             (non-zero: the learnable bias of Theorem 4)
    adaptive, adaptive_sigsoftmax
                cutoffs=INT,INT,...  (increasing, >= 1; default 2000,6000: the items after
                                      cutoffs= that hold no '=' extend the list)
                div=NUMBER >= 1   (default 4)
    any other registry head takes no option.

An integer is what std::stoll reads in full (leading blanks, a sign, digits), a number what
std::stod reads in full and is finite. tests/pipeline/test_profile_errors.py feeds the same specs
to this function and to the trainers' own parser (train_wordlm, train_nplm) and checks that both
accept and refuse the same ones, so the copy cannot drift unnoticed.
"""

from __future__ import annotations

from pipeline_errors import PipelineError
import dataclasses
import math
import re
import sys

# head name -> {option key: kind ("int", "number") and its default}
_OPTIONS: dict[str, dict[str, tuple[str, object]]] = {
    "sparse": {"k": ("int", 20)},
    "mos": {"K": ("int", 15)},
    "moss": {"K": ("int", 15)},
    "relu": {"eps": ("number", 1e-8)},
    "spherical": {"eps": ("number", 0.0198)},
    "sigsoftmax": {"b": ("int", 0)},
    "adaptive": {"cutoffs": ("ints", [2000, 6000]), "div": ("number", 4.0)},
    "adaptive_sigsoftmax": {"cutoffs": ("ints", [2000, 6000]), "div": ("number", 4.0)},
}
_VALID = ("valid: sparse k, mos/moss K, relu/spherical eps, sigsoftmax b=0|1, adaptive "
          "cutoffs=c1,c2,... and div")
_INT = re.compile(r"\s*[+-]?[0-9]+")
_NUMBER = re.compile(r"\s*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INT64 = (-(2 ** 63), 2 ** 63 - 1)


class HeadSpecError(PipelineError, ValueError):
    """A spec the C++ parser refuses; the message is the parser's reason."""


@dataclasses.dataclass(frozen=True)
class HeadSpec:
    name: str  # the registry name
    options: dict  # every option of the head with its value (defaults filled in)

    def get(self, key: str):
        return self.options.get(key)


def _int(text: str, key: str, spec: str) -> int:
    if not _INT.fullmatch(text) or not _INT64[0] <= int(text) <= _INT64[1]:
        raise HeadSpecError(f"head '{spec}': {key}='{text}' is not an integer")
    return int(text)


def _number(text: str, key: str, spec: str) -> float:
    value = float(text) if _NUMBER.fullmatch(text) else math.nan
    # std::stod throws on overflow and on a result below the smallest normal double (ERANGE).
    if not math.isfinite(value) or (value != 0 and abs(value) < sys.float_info.min):
        raise HeadSpecError(f"head '{spec}': {key}='{text}' is not a finite number")
    return value


def check(spec: str, names) -> HeadSpec:
    """The spec parsed as HeadSpec::parse does, with `names` the registry's head names; raises
    HeadSpecError with the parser's reason."""
    name, colon, rest = spec.partition(":")
    if name not in names:
        raise HeadSpecError(f"unknown head '{name}'; valid heads: {', '.join(names)}")
    rules = _OPTIONS.get(name, {})
    options = {key: default for key, (_, default) in rules.items()}
    items = rest.split(",") if colon else []
    if items and items[-1] == "":  # std::getline yields no trailing empty item
        items.pop()
    in_cutoffs = False
    for item in items:
        key, eq, value = item.partition("=")
        if not eq and in_cutoffs:
            options["cutoffs"] = options["cutoffs"] + [_int(item, "cutoffs", spec)]
            continue
        in_cutoffs = False
        if not eq:
            raise HeadSpecError(f"head '{spec}': option '{item}' is not key=value")
        if key not in rules:
            raise HeadSpecError(f"head '{spec}': unknown option '{key}' for {name} ({_VALID})")
        kind = rules[key][0]
        if kind == "ints":
            options[key] = [_int(value, key, spec)]
            in_cutoffs = True
        else:
            options[key] = _int(value, key, spec) if kind == "int" else _number(value, key, spec)
    cutoffs = options.get("cutoffs")
    if cutoffs is not None and any(c < 1 or (i and c <= cutoffs[i - 1])
                                   for i, c in enumerate(cutoffs)):
        raise HeadSpecError(f"head '{spec}': cutoffs must be increasing integers >= 1, e.g. "
                            "cutoffs=2000,6000")
    if "div" in options and not options["div"] >= 1:
        raise HeadSpecError(f"head '{spec}': div must be >= 1")
    for key, why in (("k", "k must be >= 1"), ("K", "K must be >= 1")):
        if key in options and options[key] < 1:
            raise HeadSpecError(f"head '{spec}': {why}")
    if "eps" in options and not options["eps"] > 0:
        raise HeadSpecError(f"head '{spec}': eps must be > 0")
    return HeadSpec(name=name, options=options)
