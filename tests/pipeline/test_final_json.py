#!/usr/bin/python3
"""pipeline/final_json.py reads every final.json in schema 2, and the other files the pipeline
now asks instead of knowing (argument 1: the build directory):

- read_final() on one file of each old layout, frozen in tests/fixtures/old_layouts (re-made
  results are schema 2): train_wordlm's, no trainer or head; nplm's and charlm's: flat with a
  trainer key; the classifier's: flat, no trainer key): the shared keys at the top, the trainer's keys in its
  section, each value equal to the file's own (read here with json), the dump's ppl where the
  old layout implied it; the committed files are left byte for byte as they were;
- a schema-2 file is read as written; an old layout with no trainer anywhere is refused;
- run_outputs.outputs_complete() on h5py-written dumps: a schema-2 run whose dump agrees, one
  whose ppl or row count disagrees, a run without a dump (mse), an old sparse run whose ppl is
  null (a label outside the top k) with an infinite ppl attribute;
- head_facts: the registry from rank_analysis --list-heads --json (mos and moss mixtures, sparse
  without a rank, mse not a head), refused with one line when the binary is missing;
- trainer_kinds: one descriptor per profile trainer, one command builder (wordlm's --until and
  --epoch_dump_rows, none for the others).
"""

import hashlib
import json
import math
import os
import sys
import tempfile
import types

from checks import ROOT, build_dir, check, finish, use_build  # noqa: E402

use_build()
import head_facts  # noqa: E402
import trainer_kinds  # noqa: E402
from final_json import SHARED, FinalJsonError, read_final, section  # noqa: E402
from run_outputs import outputs_complete  # noqa: E402

OLD = {  # one file per old layout, as its trainer wrote it: (path, the trainer the profile names)
    # copied from results/<profile>/ before the profile was re-made in schema 2
    "wordlm": ("tests/fixtures/old_layouts/wordlm_final.json", "wordlm"),
    "nplm": ("tests/fixtures/old_layouts/nplm_final.json", "nplm"),
    "charlm": ("tests/fixtures/old_layouts/charlm_final.json", "charlm"),
    "classifier": ("tests/fixtures/old_layouts/classifier_final.json", "classifier"),
}


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_old_layouts():
    before = {k: digest(os.path.join(ROOT, p)) for k, (p, _) in OLD.items()}
    for kind, (rel, trainer) in OLD.items():
        path = os.path.join(ROOT, rel)
        raw = json.load(open(path))
        f = read_final(path, trainer)
        check(f is not None and f["schema"] == 2 and f["trainer"] == kind,
              f"{rel}: read in schema 2 as trainer {kind}")
        if f is None:
            continue
        shared = {k: raw[k] for k in SHARED if k in raw}
        own = {k: v for k, v in raw.items() if k not in SHARED}
        check(all(f[k] == v for k, v in shared.items()) and section(f) == own and
              set(f) == set(SHARED) | {kind},
              f"{rel}: shared keys at the top, the {len(own)} others in section '{kind}'")
    cpu = read_final(os.path.join(ROOT, OLD["wordlm"][0]), "wordlm")
    raw = json.load(open(os.path.join(ROOT, OLD["wordlm"][0])))
    check(cpu["dump_ppl"] == raw["test_ppl"] and cpu["head"] == "" and cpu["seed"] is None and
          cpu["wordlm"]["asgd_epoch"] == raw["asgd_epoch"],
          "wordlm: dump_ppl = its test_ppl (the dump's), head and seed not recorded")
    nplm = read_final(os.path.join(ROOT, OLD["nplm"][0]), "charlm")  # the file's own trainer wins
    check(nplm["trainer"] == "nplm" and nplm["nplm"]["test_ppl"] > 0 and
          nplm["dump_ppl"] != nplm["nplm"]["test_ppl"],
          "nplm: its own trainer key, dump_ppl (first test rows) apart from test_ppl")
    char = read_final(os.path.join(ROOT, OLD["charlm"][0]), "charlm")
    check(char["charlm"]["M"] == 50 and "valid_bpc" in char["charlm"] and char["dump_rows"] > 0,
          "charlm: M and bpc in its section, dump_rows at the top")
    cls = read_final(os.path.join(ROOT, OLD["classifier"][0]), "classifier")
    check(cls["head"] == "sparse:k=2" and cls["dataset"] == "fashion-mnist" and
          cls["dump_ppl"] is None and cls["dump_rows"] == 10000 and
          cls["classifier"]["test_outside_support"] == 415,
          "classifier: head and dataset at the top, dump_rows = test_images, dump_ppl null")
    mse = read_final(os.path.join(ROOT, "tests/fixtures/old_layouts/classifier_mse_final.json"), "classifier")
    check(mse["dump"] == "" and mse["dump_rows"] is None, "classifier mse: no dump")
    after = {k: digest(os.path.join(ROOT, p)) for k, (p, _) in OLD.items()}
    check(before == after, "the old-layout files are unchanged")


def schema2(tmp, **over):
    data = {"event": "final", "schema": 2, "trainer": "nplm", "head": "softmax",
            "dataset": "ptb", "seed": 141, "steps": 2000, "best_model": f"{tmp}/best.pt",
            "valid_loss": 5.75, "dump": f"{tmp}/logprobs.h5", "dump_ppl": 2.5, "dump_rows": 4,
            "nplm": {"d": 256, "epochs": 1, "test_loss": 5.69, "test_ppl": 297.3,
                     "valid_ppl": 315.1}}
    data.update(over)
    with open(os.path.join(tmp, "final.json"), "w") as f:
        json.dump(data, f)
    return data


def write_dump(tmp, rows=4, ppl=2.5):
    import h5py
    import numpy as np
    with h5py.File(os.path.join(tmp, "logprobs.h5"), "w") as f:
        f.create_dataset("log_probs", data=np.full((rows, 3), -1.0, dtype=np.float32))
        f.create_dataset("targets", data=np.zeros(rows, dtype=np.int64))
        f.attrs["num_tokens"] = rows
        f.attrs["ppl"] = ppl


def test_schema2_and_outputs(tmp):
    data = schema2(tmp)
    f = read_final(os.path.join(tmp, "final.json"), "wordlm")
    check(f == data, "schema 2: read as written (its own trainer, not the caller's)")
    check(read_final(os.path.join(tmp, "missing.json"), "nplm") is None, "missing file: None")
    write_dump(tmp)
    check(outputs_complete(tmp, "nplm"), "schema 2: final.json and an agreeing dump: complete")
    write_dump(tmp, ppl=2.6)
    check(not outputs_complete(tmp, "nplm"), "a dump whose ppl differs: not complete")
    write_dump(tmp, rows=5, ppl=2.5)
    check(not outputs_complete(tmp, "nplm"), "a dump with other than dump_rows rows: not complete")
    schema2(tmp, trainer="classifier", dump="", dump_ppl=None, dump_rows=0,
            classifier={"test_error_pct": 16.0})
    os.remove(os.path.join(tmp, "logprobs.h5"))
    check(outputs_complete(tmp, "classifier"), "a run without a dump (mse): complete")
    old = json.load(open(os.path.join(ROOT, OLD["classifier"][0])))
    with open(os.path.join(tmp, "final.json"), "w") as out:
        json.dump(old, out)
    write_dump(tmp, rows=10000, ppl=math.inf)
    check(outputs_complete(tmp, "classifier"),
          "old sparse classifier: ppl null and an infinite ppl attribute agree")
    with open(os.path.join(tmp, "final.json"), "w") as out:
        json.dump({"valid_ppl": 1.0}, out)
    try:
        read_final(os.path.join(tmp, "final.json"))
        check(False, "an old layout without any trainer is refused")
    except FinalJsonError as e:
        check("names no trainer" in str(e), f"an old layout without any trainer is refused ({e})")


def test_head_facts(tmp):
    facts = head_facts.registry()
    check(facts.is_mixture("mos:K=2") and facts.is_mixture("moss") and
          not facts.is_mixture("softmax"), "head facts: mos and moss are mixtures")
    check(not facts.rank_defined("sparse:k=2") and facts.rank_defined("taylor") and
          facts.of("sparse").may_output_neg_inf, "head facts: sparse may be -inf, no rank")
    check(facts.of("softmax").theorem2_bounded and not facts.of("sigsoftmax").theorem2_bounded,
          "head facts: softmax is bounded by Theorem 2, sigsoftmax is not")
    check(not facts.is_head("mse") and not facts.rank_defined("mse"),
          "head facts: mse (train_classifier's squared error) is not a registry head")
    try:
        head_facts._query(os.path.join(tmp, "no_rank_analysis"))
        check(False, "a missing rank_analysis is refused")
    except head_facts.HeadFactsError as e:
        check("not built" in str(e) and "--list-heads --json" in str(e),
              f"a missing rank_analysis is refused naming the query ({e})")


def test_kinds():
    from repro_profile import load_profile
    trainer_kinds.use(os.path.join(build_dir(), "trainers"))
    known = set(trainer_kinds.known())
    check(set(trainer_kinds.REPORTS) <= known,
          f"every kind with a report row is a binary that describes itself ({sorted(known)})")
    for name in trainer_kinds.REPORTS:
        k = trainer_kinds.kind(name)
        check(k.name == name and k.stages and k.dump_stage == k.stages[-1] and
              set(k.hands_on) <= set(k.stages[:-1]),
              f"train_{name} --describe --json: stages {k.stages}, hands_on {sorted(k.hands_on)}")
    for name, want in (("cpu", ["--epoch_dump_rows", "--until", "dump"]),
                       ("nplm", []), ("classify", [])):
        p = load_profile(os.path.join(ROOT, "pipeline", "profiles", name + ".toml"))
        run = p.runs()[0]
        d = types.SimpleNamespace(p=p, threads=2, bins={p.kind.binary: p.kind.binary})
        cmd = p.kind.command(d, run, p.kind.dump_stage)
        extra = [a for a in cmd if a in ("--until", "dump", "--epoch_dump_rows")]
        check(cmd[:3] == [p.kind.binary, "--config", run.config] and extra == want,
              f"{name}: {p.kind.binary} with {want or 'no --until / --epoch_dump_rows'}")


def main():
    test_old_layouts()
    with tempfile.TemporaryDirectory() as tmp:
        test_schema2_and_outputs(tmp)
        test_head_facts(tmp)
    test_kinds()
    print(f"build: {build_dir()}")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
