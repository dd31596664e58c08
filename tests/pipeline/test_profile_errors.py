#!/usr/bin/python3
"""A bad profile is refused before anything is written: `reproduce.py --profile BAD` exits 2 with
one line on stderr naming the profile file, the field and what was expected, and creates no
directory. Argument 1: the build directory (the head registry is its rank_analysis
--list-heads --json; the trainers, where built, check the copy of the option rules).

- tests/bad_inputs/pipeline_cases.txt is what make_pipeline_inputs.py --cases prints, and every
  case in it holds: an unknown head, bad head options (mos:K=0, mos:Q=3, k=2.5, eps=0, eps=inf,
  "mos:K"), heads the trainer kind refuses (a mixture or sparse for train_nplm / train_charlm,
  sigsoftmax:b=1 for train_nplm, sparse k > 10 for train_classifier, mse or a single head with
  nhidlast != emsize for train_wordlm), a missing field, wrong types, repeated seeds, an unknown
  trainer, a missing config file, an empty scaled_down, an overrides_by_head typo, bad TOML;
- --plan and --scheduler slurm --dry-run refuse the same profile the same way;
- what the pipeline asks a trainer (`--describe --json --describe-heads ...`, trainer_kinds.py)
  is what the trainer does when it runs: each spec goes to train_wordlm (and train_nplm for the
  kind's own refusals) with a corpus directory that does not exist, so a spec the trainer takes
  stops at "corpus ... not found" and nothing is trained or written; and pipeline/head_spec.py
  (the option rules, which --list-heads does not expose) refuses what the C++ parser refuses;
- every shipped profile passes the same checks.
"""

import os
import shutil
import subprocess
import sys
import tempfile

from checks import ROOT, build_dir, check, finish, use_build  # noqa: E402

use_build()
import head_facts  # noqa: E402
import head_spec  # noqa: E402
from repro_profile import check_runs, load_profile  # noqa: E402
import trainer_kinds  # noqa: E402

MAKE = os.path.join(ROOT, "tests", "bad_inputs", "make_pipeline_inputs.py")
CASES = os.path.join(ROOT, "tests", "bad_inputs", "pipeline_cases.txt")


def corpus_cases(tmp: str) -> None:
    printed = subprocess.run(["/usr/bin/python3", MAKE, "--cases"], capture_output=True,
                             text=True).stdout
    committed = open(CASES).read()
    check(printed == committed, "pipeline_cases.txt is what make_pipeline_inputs.py --cases prints")
    lines = [line.split("\t") for line in committed.splitlines() if line.strip()]
    check(len(lines) >= 8 and all(len(f) == 4 for f in lines),
          f"pipeline_cases.txt: {len(lines)} cases of 4 tab-separated fields")
    subprocess.run(["/usr/bin/python3", MAKE, tmp], check=True)
    # The commands name {root}/build; this test's build may be elsewhere (ctest's binary dir).
    for case, command, status, substring in lines:
        cmd = command.replace("{root}/build", build_dir()).replace("{root}", ROOT) \
            .replace("{dir}", tmp)
        r = subprocess.run(cmd, shell=True, capture_output=True, text=True, cwd=ROOT)
        err = r.stderr.strip().splitlines()
        check(r.returncode == int(status) and len(err) == 1 and substring in err[0] and
              f"{tmp}/{case}.toml" in err[0] and not os.path.exists(f"{tmp}/out_{case}") and
              not r.stdout, f"{case}: exit {status}, one line naming the file and "
              f"'{substring[:60]}...', no directory (got {r.returncode}: {r.stderr.strip()})")
    for extra in (["--plan"], ["--scheduler", "slurm", "--dry-run"]):
        bad = os.path.join(tmp, "mos_K_zero.toml")
        r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "pipeline", "reproduce.py"),
                            "--profile", bad, "--build", build_dir(), *extra],
                           capture_output=True, text=True, cwd=ROOT)
        check(r.returncode == 2 and f"{bad}: field 'heads[0]'" in r.stderr and not r.stdout,
              f"{' '.join(extra)}: the same refusal ({r.returncode}: {r.stderr.strip()})")


# Specs on both sides of every rule of HeadSpec::parse.
SPECS = ["softmax", "softmax:", "bogus", "Softmax", "mos", "mos:K=2", "mos:K=0", "mos:K=-1",
         "mos:K=2,", "mos:,K=2", "mos:K", "mos:Q=3", "mos:k=2", "moss:K=15", "sparse:k=20",
         "sparse:k=0", "sparse:k=2.5", "sparse:k= 3", "sparse:k=3 ", "sparse:k=+3",
         "sparse:K=3", "sparse:k=99999999999999999999", "spherical:eps=0.0198",
         "spherical:eps=0", "spherical:eps=-1", "spherical:eps=inf", "spherical:eps=nan",
         "spherical:eps=1e-3", "spherical:eps=abc", "spherical:eps=1e400", "relu:eps=1e-8",
         "relu:eps=.5", "relu:eps=5.", "sigsoftmax:b=1", "sigsoftmax:b=0", "sigsoftmax:b=x",
         "taylor:eps=1", "sigmoid", "softmax_abs", "mse", "adaptive", "adaptive:cutoffs=50,500",
         "adaptive:cutoffs=500,50", "adaptive:cutoffs=0", "adaptive:cutoffs=50,x",
         "adaptive:cutoffs=50,,500", "adaptive:cutoffs=50,", "adaptive:div=0.5",
         "adaptive:div=2,cutoffs=5,10", "adaptive:cutoffs=5,10,div=2",
         "adaptive_sigsoftmax:cutoffs=50", "softmax:cutoffs=5", "adaptive:k=3"]


def trainer_refuses(binary: str, spec: str, tmp: str) -> tuple[bool, str]:
    """(refused for the head, stderr): the trainer's own validate, with no corpus to train on."""
    device = ["--device", "cpu"] if binary.endswith("train_wordlm") else []
    r = subprocess.run([binary, "--head", spec, *device, "--data",
                        os.path.join(tmp, "no_corpus"), "--out", os.path.join(tmp, "no_run")],
                       capture_output=True, text=True)
    err = r.stderr.strip()
    if r.returncode == 2 and "not found" in err and "head =" not in err:
        return False, err
    return r.returncode == 2 and f'head = "{spec}"' in err, err


def cross_check(tmp: str) -> None:
    registry = head_facts.registry()
    names = list(registry.facts)
    # train_wordlm: every rule of the parser; train_nplm: the kind's own refusals.
    nplm_specs = ["softmax", "mos:K=2", "moss:K=3", "sparse:k=5", "sigsoftmax:b=1",
                  "sigsoftmax:b=0", "spherical:eps=0.0198", "relu", "taylor", "mos:K=0",
                  "adaptive:cutoffs=50", "adaptive_sigsoftmax"]
    for trainer, specs in (("wordlm", SPECS), ("nplm", nplm_specs)):
        binary = os.path.join(build_dir(), "trainers", f"train_{trainer}")
        if not os.access(binary, os.X_OK):
            print(f"note: {binary} not built: the option rules are not compared with it")
            continue
        trainer_kinds.use(os.path.dirname(binary))
        described = trainer_kinds.kind(trainer).refusals("", {}, specs)
        disagree, python_parser = [], []
        for spec in specs:
            cxx_refuses, err = trainer_refuses(binary, spec, tmp)
            if bool(described[spec]) != cxx_refuses:
                disagree.append(f"{spec}: --describe {'refuses' if described[spec] else 'takes'}"
                                f", train_{trainer} says {err!r}")
            try:
                head_spec.check(spec, names)
            except head_spec.HeadSpecError:
                if not cxx_refuses:
                    python_parser.append(spec)
        check(not disagree and not os.path.exists(os.path.join(tmp, "no_run")),
              f"train_{trainer} --describe and train_{trainer} itself take and refuse the same "
              f"{len(specs)} head specs{': ' + '; '.join(disagree) if disagree else ''}")
        check(not python_parser, f"pipeline/head_spec.py refuses no spec train_{trainer} takes "
              f"({python_parser})")
    # The parser's own messages, word for word where the pipeline repeats them.
    for spec, reason in (("mos:K=0", "head 'mos:K=0': K must be >= 1"),
                         ("mos:Q=3", "head 'mos:Q=3': unknown option 'Q' for mos"),
                         ("spherical:eps=0", "head 'spherical:eps=0': eps must be > 0")):
        try:
            head_spec.check(spec, names)
            check(False, f"{spec} refused")
        except head_spec.HeadSpecError as e:
            check(str(e).startswith(reason), f"{spec}: {e}")
    parsed = head_spec.check("spherical", names)
    check(parsed.get("eps") == 0.0198 and head_spec.check("mos:K=3", names).get("K") == 3,
          "defaults and values as HeadSpec (spherical eps 0.0198, mos K=3)")


def shipped_profiles() -> None:
    registry = head_facts.registry()
    for f in sorted(os.listdir(os.path.join(ROOT, "pipeline", "profiles"))):
        p = load_profile(os.path.join(ROOT, "pipeline", "profiles", f))
        cwd = os.getcwd()
        os.chdir(ROOT)  # the profiles' config paths are relative to the repository root
        try:
            check_runs(p, registry)
            check(True, f"{f}: every head, option and config passes")
        except Exception as e:  # noqa: BLE001
            check(False, f"{f}: {e}")
        finally:
            os.chdir(cwd)


def main() -> int:
    tmp = tempfile.mkdtemp(prefix="profile_errors_")
    try:
        corpus_cases(tmp)
        cross_check(tmp)
        shipped_profiles()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
