#!/usr/bin/python3
"""The toy fifth trainer (tests/trainers/bigram/: one folder, one registry row in
tests/CMakeLists.txt) runs through the pipeline with no pipeline edit: a profile with
trainer = "bigram" and two heads goes through `reproduce.py` (the driver finds train_bigram in the
build, reads its --describe --json, runs its one stage per run, analyses each dump and writes the
generic report); softmax's rank is at most d + 2 (Theorem 2 with a decoder bias) and certified
within the bound; a head the trainer refuses (mos:K=2: its validate) stops the profile before
anything is written, with the trainer's own reason. Argument 1: the build directory."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures"))
from checks import ROOT, check, finish, skip_without_corpus  # noqa: E402

build = os.path.abspath(sys.argv[1])
reproduce = os.path.join(ROOT, "pipeline", "reproduce.py")
skip_without_corpus("ptb")
D = 8


def profile(tmp: str, heads: str) -> str:
    config = os.path.join(tmp, "bigram.toml")
    with open(config, "w") as f:
        f.write(f"d = {D}\nepochs = 2\ntrain_tokens = 20000\nvalid_tokens = 3000\n"
                "test_tokens = 1000\nlr = 0.5\n")
    path = os.path.join(tmp, "profile.toml")
    with open(path, "w") as f:
        f.write(f'name = "bigram"\ntrainer = "bigram"\nscaled_down = "a toy"\n'
                f'out = "{tmp}/out"\nconfig = "{config}"\nthreads = 1\nheads = {heads}\n'
                'seeds = [1]\n[analysis]\nmethod = "gram"\ncheck = true\n')
    return path


with tempfile.TemporaryDirectory() as tmp:
    r = subprocess.run(["/usr/bin/python3", reproduce, "--profile",
                        profile(tmp, '["softmax", "sigsoftmax"]'), "--build", build,
                        "--allow-dirty"], capture_output=True, text=True, cwd=ROOT)
    check(r.returncode == 0, f"make reproduce of a bigram profile: exit 0 (got {r.returncode}: "
          f"{r.stderr.strip()[-400:]})")
    out = os.path.join(tmp, "out")
    summary = os.path.join(out, "summary.md")
    text = open(summary).read() if os.path.exists(summary) else ""
    check("## Test metrics" in text and "| softmax | 1 |" in text and "| sigsoftmax | 1 |" in text
          and "test_ppl" in text, "summary.md: the generic report with both heads' test_ppl")
    for head in ("softmax", "sigsoftmax"):
        final = os.path.join(out, f"{head}_s1", "final.json")
        f = json.load(open(final)) if os.path.exists(final) else {}
        check(f.get("trainer") == "bigram" and f.get("schema") == 2 and
              0 < f.get("bigram", {}).get("test_ppl", 0) < 10000,
              f"{head}: final.json of trainer bigram, test ppl below the uniform model's 10000 "
              f"({f.get('bigram', {}).get('test_ppl')})")
    rank_path = os.path.join(out, "softmax_s1", "rank.json")
    rank = json.load(open(rank_path)) if os.path.exists(rank_path) else {}
    check(rank.get("bound") == D + 2 and 0 < rank.get("rank", 10**9) <= D + 2 and
          rank.get("verdict") == "within_bound",
          f"softmax's rank {rank.get('rank')} <= d + 2 = {D + 2}, within_bound (Theorem 2)")

    bad = profile(os.path.join(tmp), '["softmax", "mos:K=2"]')
    r = subprocess.run(["/usr/bin/python3", reproduce, "--profile", bad, "--build", build,
                        "--allow-dirty"], capture_output=True, text=True, cwd=ROOT)
    err = r.stderr.strip().splitlines()
    check(r.returncode == 2 and len(err) == 1 and "field 'heads[1]'" in err[0] and
          "train_bigram takes a single head" in err[0],
          f"a head train_bigram refuses: exit 2, one line with its own reason ({r.stderr.strip()})")
sys.exit(finish())
