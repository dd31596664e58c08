#!/usr/bin/python3
"""Every trainer describes itself (trainers/runkit/trainer_descriptor.h): `train_<kind> --describe
--json` exits 0 with one JSON object naming its kind (the binary's suffix), stages the pipeline's
stage table knows, the files each stage hands on, its keys (every key of --help), and a verdict
for every registry head (rank_analysis --list-heads) that is the trainer's own: a head --describe
refuses is refused by the trainer when it runs (exit 2, a line naming the head) and one it takes
gets past validation (to the data directory, which does not exist). The
verdicts follow the config and overrides (train_wordlm's nhidlast rule; train_classifier's
output_init_std for spherical); --describe writes nothing; a bad override is one line, exit 2.
--help lists the heads the trainer takes and the reason for each it refuses, the same verdicts.
Argument 1: the build directory."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures"))
from checks import check, finish, message_lines  # noqa: E402

build = os.path.abspath(sys.argv[1])
# The registry (the sb_trainer rows, cmake/Dependencies.cmake), as CMake wrote it: no list here.
KINDS = tuple(line.split()[0] for line in open(os.path.join(build, "trainer_registry.txt"))
              if line.strip())
check({"wordlm", "nplm", "charlm", "classifier", "transformer", "bigram"} <= set(KINDS),
      f"the registry lists every trainer ({', '.join(KINDS)})")
STAGES = {"train", "finetune", "dump", "classify"}  # pipeline/stages.py's trainer stages


def describe(kind, *args):
    r = subprocess.run([os.path.join(build, "trainers", f"train_{kind}"), "--describe", "--json",
                        *args], capture_output=True, text=True)
    return r, (json.loads(r.stdout) if r.returncode == 0 else None)


registry = json.loads(subprocess.run([os.path.join(build, "analysis", "rank_analysis"),
                                      "--list-heads", "--json"], capture_output=True,
                                     text=True).stdout)["heads"]
with tempfile.TemporaryDirectory() as tmp:
    for kind in KINDS:
        binary = os.path.join(build, "trainers", f"train_{kind}")
        out = os.path.join(tmp, f"{kind}_out")
        r, d = describe(kind, "--out", out)
        check(r.returncode == 0 and d is not None and d["kind"] == kind and
              d["binary"] == f"train_{kind}", f"train_{kind} --describe --json: one object of kind "
              f"{kind} (exit {r.returncode}: {r.stderr.strip()[-200:]})")
        if d is None:
            continue
        check(not os.path.exists(out), f"train_{kind} --describe writes nothing (no {out})")
        check(d["stages"] and set(d["stages"]) <= STAGES and
              set(d["hands_on"]) <= set(d["stages"][:-1]),
              f"train_{kind}: stages {d['stages']} known to the pipeline, hands_on "
              f"{sorted(d['hands_on'])} only from stages before the last")
        names = [k["name"] for k in d["keys"]]
        help_text = subprocess.run([binary, "--help"], capture_output=True, text=True).stdout
        check({"head", "seed", "threads", "out"} <= set(names) and
              all(f"--{n} " in help_text for n in names),
              f"train_{kind}: its {len(names)} keys, each an option of --help")
        # --help lists the heads it takes and refuses from the same verdicts (runkit::heads_text):
        # no config.cpp types a list of heads.
        takes = next((line.split("takes:", 1)[1].strip() for line in help_text.splitlines()
                      if line.strip().startswith("takes:")), None)
        accepted = [h for h, v in d["heads"].items() if v["accepted"]]
        check(takes == ", ".join(accepted) and
              help_text.count("refuses: ") == len(d["heads"]) - len(accepted),
              f"train_{kind} --help: takes {takes!r}, --describe {', '.join(accepted)!r}; a "
              "refusal line per refused head")
        # The run directory the descriptor computes is the one the `out` key promises.
        out_help = next((k["description"] for k in d["keys"] if k["name"] == "out"), "")
        promised = f'"" = results/{d["run_prefix"]}<dataset>_<head>'
        check(out_help.endswith(promised),
              f"train_{kind}: the out key says {out_help!r}, the descriptor {promised!r}")
        check(set(registry) <= set(d["heads"]) and d["heads"]["softmax"]["accepted"],
              f"train_{kind}: a verdict for each of the {len(registry)} registry heads; softmax "
              "taken")
        # The verdicts are the trainer's own: run it on the refused heads and two taken ones.
        refused = [h for h, v in d["heads"].items() if not v["accepted"]]
        taken = [h for h, v in d["heads"].items() if v["accepted"]][:2]
        wrong = []
        for head in refused + taken:
            device = ["--device", "cpu"] if kind == "wordlm" else []
            data = ["--data", os.path.join(tmp, "no_corpus")] if kind != "classifier" else \
                ["--data", os.path.join(tmp, "no_images")]
            rr = subprocess.run([binary, "--head", head, *device, *data, "--out",
                                 os.path.join(tmp, "no_run")], capture_output=True, text=True)
            said = rr.stderr.strip()
            run_refuses = rr.returncode == 2 and d["heads"][head]["why"] in said
            # Past validation, the run stops at the data it cannot find (the message names it).
            run_takes = rr.returncode == 2 and "head =" not in said and \
                os.path.join(tmp, "no_") in said
            if (head in refused and not run_refuses) or (head in taken and not run_takes):
                wrong.append(f"{head}: describe {'refuses' if head in refused else 'takes'}, "
                             f"the run says {said[-160:]!r}")
        check(not wrong and not os.path.exists(os.path.join(tmp, "no_run")),
              f"train_{kind}: --describe's {len(refused)} refusals and 2 acceptances are the "
              f"run's own{': ' + '; '.join(wrong) if wrong else ''}")
        text = subprocess.run([binary, "--describe"], capture_output=True, text=True).stdout
        check(text.startswith(f"train_{kind}: ") and
              all(h in text for h in d["heads"]), f"train_{kind} --describe: the text form "
              "lists every head")
        r, _ = describe(kind, "--lr", "abc")
        check(r.returncode == 2 and len(message_lines(r.stderr)) == 1 and "--lr" in r.stderr,
              f"train_{kind} --describe --lr abc: one line, exit 2 ({r.stderr.strip()[-120:]})")

    # The verdicts follow the settings.
    _, plain = describe("wordlm", "--describe-heads", "mos:K=2")
    _, wide = describe("wordlm", "--nhidlast", "50", "--describe-heads", "mos:K=2")
    check(plain and wide and plain["heads"]["softmax"]["accepted"] and
          not wide["heads"]["softmax"]["accepted"] and "nhidlast" in wide["heads"]["softmax"]["why"]
          and wide["heads"]["mos:K=2"]["accepted"],
          "train_wordlm --nhidlast 50: softmax refused (nhidlast needs a mixture), mos:K=2 taken")
    _, zero = describe("classifier", "--output_init_std", "0", "--describe-heads", "sparse:k=20")
    _, small = describe("classifier", "--output_init_std", "0.01")
    check(zero and small and not zero["heads"]["spherical"]["accepted"] and
          small["heads"]["spherical"]["accepted"] and not zero["heads"]["sparse:k=20"]["accepted"]
          and zero["heads"]["mse"]["accepted"],
          "train_classifier: spherical refused at output_init_std 0, taken at 0.01; sparse:k=20 "
          "refused (10 classes); its own head mse taken")
    _, own = describe("nplm", "--head", "mos:K=2")
    check(small["config"] == {"valid": True, "why": ""} and own and not own["config"]["valid"] and
          'head = "mos:K=2"' in own["config"]["why"],
          "the config's own verdict beside the heads': valid, or train_nplm's refusal of its "
          "head mos:K=2")
sys.exit(finish())
