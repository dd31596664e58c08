#!/usr/bin/python3
"""Bad reproduction profiles, one per case of tests/bad_inputs/pipeline_cases.txt.

    /usr/bin/python3 tests/bad_inputs/make_pipeline_inputs.py DIR     writes DIR/<case>.toml
    /usr/bin/python3 tests/bad_inputs/make_pipeline_inputs.py --cases prints pipeline_cases.txt

Every profile is the cpu profile's shape with one thing wrong; its `out` is DIR/out_<case>, which
the driver must not create: `reproduce.py --profile DIR/<case>.toml` exits 2 with one line on
stderr naming the file and the field before anything is written. pipeline_cases.txt lines are
`<case>\\t<command>\\t<exit status>\\t<stderr substring>` with {root} for the repository root and
{dir} for DIR; tests/pipeline/test_profile_errors.py checks that the committed file is what
--cases prints, then runs every line.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(ROOT, "trainers", "configs", "ptb_cpu.toml")


def profile(case: str, out: str, heads='["softmax", "mos:K=2"]', trainer="", extra="",
            drop="", config=None, seeds="[141, 142]", scaled_down='"tiny"') -> str:
    fields = {
        "name": f'"{case}"', "scaled_down": scaled_down, "out": f'"{out}"',
        "config": f'"{config if config is not None else CONFIG}"', "heads": heads,
        "seeds": seeds, "threads": "1",
    }
    if trainer:
        fields["trainer"] = f'"{trainer}"'
    text = "".join(f"{k} = {v}\n" for k, v in fields.items() if k != drop)
    return text + extra


NPLM = os.path.join(ROOT, "trainers", "configs", "nplm_ptb_cpu.toml")
CHAR = os.path.join(ROOT, "trainers", "configs", "char_ptb_cpu.toml")
CLASSIFY = os.path.join(ROOT, "trainers", "configs", "classify_fashion.toml")



def field_case(kwargs: dict, field: str, expected: str):
    """A profile with one field wrong, and the line naming the file, the field and what it
    expects, in the driver's wording."""
    return kwargs, f"{{file}}: field '{field}': expected {expected}"


def spec_case(spec: str, why: str, file: bool = True):
    """A one-head list whose spelling common/head_spec.cpp refuses, and the line it gives."""
    return (dict(heads=f'["{spec}"]'),
            ("{file}: " if file else "") + "field 'heads[0]': expected a head spec as "
            f"common/head_spec.cpp parses it (head '{spec}': {why}")


def refused_case(trainer: str, config: str, heads: str, index: int, head: str, why: str,
                 file: bool = True):
    """A head the trainer's own validate refuses (its --describe verdict), and the line."""
    return (dict(trainer=trainer, config=config, heads=f"[{heads}]"),
            ("{file}: " if file else "") + f"field 'heads[{index}]': expected a head that "
            f"train_{trainer} takes with these settings (head = \"{head}\": {why}")


# case -> (profile keyword arguments, expected stderr substring; {file} = the profile's name)
CASES = {
    "unknown_head": field_case(dict(heads='["softmax", "bogus"]'), "heads[1]",
                               "a head that rank_analysis --list-heads lists"),
    "mos_K_zero": spec_case("mos:K=0", "K must be >= 1)"),
    "mos_unknown_option": spec_case("mos:Q=3", "unknown option 'Q'"),
    "option_not_key_value": spec_case("mos:K", "option 'K' is not key=value)"),
    "sparse_k_not_integer": spec_case("sparse:k=2.5", "k='2.5' is not an integer)", file=False),
    "spherical_eps_zero": spec_case("spherical:eps=0", "eps must be > 0)", file=False),
    "relu_eps_not_finite": spec_case("relu:eps=inf", "eps='inf' is not a finite number)",
                                     file=False),
    "nplm_refuses_mixture": refused_case("nplm", NPLM, '"softmax", "mos:K=2"', 1, "mos:K=2",
                                         "train_nplm takes a single head with finite "
                                         "log-outputs"),
    "charlm_refuses_sparse": refused_case("charlm", CHAR, '"sparse:k=20"', 0, "sparse:k=20",
                                          "train_charlm takes a single head with finite "
                                          "log-outputs"),
    "nplm_refuses_learnable_bias": refused_case("nplm", NPLM, '"sigsoftmax:b=1"', 0,
                                                "sigsoftmax:b=1",
                                                "sigsoftmax:b=1 is not supported here",
                                                file=False),
    "classifier_sparse_k_above_classes": refused_case("classifier", CLASSIFY, '"sparse:k=20"', 0,
                                                      "sparse:k=20", "k must be <= 10 classes",
                                                      file=False),
    "wordlm_mse": (dict(heads='["mse"]'), "field 'heads[0]': expected a head that rank_analysis "
                   "--list-heads lists"),
    "wordlm_nhidlast_single_head": (dict(heads='["softmax"]', extra="[overrides]\nnhidlast = 50\n"),
                                    "field 'heads[0]': expected a head that train_wordlm takes "
                                    "with these settings (nhidlast = 50 needs a mixture head"),
    "heads_missing": field_case(dict(drop="heads"), "heads", "a value (the field is required)"),
    "heads_empty": field_case(dict(heads="[]"), "heads", "a non-empty list"),
    "heads_wrong_type": field_case(dict(heads='"softmax"'), "heads", "a list, got 'softmax'"),
    "seeds_wrong_type": field_case(dict(seeds='"141"'), "seeds", "a list"),
    "seeds_repeated": field_case(dict(seeds="[141, 141]"), "seeds",
                                 "a non-empty list of distinct seeds"),
    "trainer_unknown": field_case(dict(trainer="mlp"), "trainer", "a trainer of this build ("),
    "config_missing": field_case(dict(config="{dir}/no_such_config.toml"), "config",
                                 "an existing trainer config file"),
    "scaled_down_empty": field_case(dict(scaled_down='""'), "scaled_down", "a non-empty string"),
    "overrides_by_head_typo": field_case(dict(extra="[overrides_by_head]\nmso = { lr = 20 }\n"),
                                         "overrides_by_head.mso",
                                         "a head of the profile's heads"),
    "jobs_negative": field_case(dict(extra="jobs = -2\n"), "jobs",
                                "an integer >= 0 (0 = cores // threads; 1 = one run at a time)"),
    "dyneval_gain_percent": field_case(
        dict(extra="[dyneval]\nenabled = true\npredicted_gain = 5\n"), "dyneval.predicted_gain",
        "a fraction in [0, 1) (0.05 = 5%)"),
    "dyneval_key_typo": field_case(dict(extra="[dyneval]\nenable = true\n"), "dyneval.enable",
                                   "one of enabled, args, predicted_gain"),
    "not_toml": (dict(extra="heads = [\n"), "{file}: not valid TOML"),
}


def case_line(case: str) -> str:
    file = "{dir}/" + case + ".toml"
    cmd = ("/usr/bin/python3 {root}/pipeline/reproduce.py --profile " + file +
           " --build {root}/build")
    # The substring names the file by its base name: it holds no {dir} to substitute.
    return "\t".join([case, cmd, "2", CASES[case][1].replace("{file}", case + ".toml")])


def write(directory: str) -> None:
    os.makedirs(directory, exist_ok=True)
    for case, (kwargs, _) in CASES.items():
        kwargs = dict(kwargs)
        if "config" in kwargs:
            kwargs["config"] = kwargs["config"].replace("{dir}", directory)
        with open(os.path.join(directory, case + ".toml"), "w") as f:
            f.write(profile(case, os.path.join(directory, "out_" + case), **kwargs))


def main() -> int:
    if sys.argv[1:] == ["--cases"]:
        for case in CASES:
            print(case_line(case))
        return 0
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        print("usage: make_pipeline_inputs.py DIR | --cases", file=sys.stderr)
        return 2
    write(sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
