#!/usr/bin/python3
"""The pipeline keeps a trainer's `--describe --json` answers beside the binary
(pipeline/trainer_kinds.py `_answer`), and asks the binary again whenever the answer could
differ. A stand-in trainer (a script that counts its runs and echoes its config into each head's
verdict) in a scratch folder:
- the second driver process asking the same (fresh interpreter, so no in-memory cache) does not
  run the binary, and gets the same facts and verdicts;
- an edited config file, other overrides, or a rebuilt binary (its bytes replaced) run it again,
  and the new answer is the one returned;
- a refusal (exit 2) raises the trainer's line as a one-line TrainerKindError and is asked
  again next time (exit 2 is also what a passing failure gives); a crash (a signal) is not kept.
"""
import json
import os
import subprocess
import sys
import tempfile

from checks import PIPELINE, check, finish

FAKE = r'''#!/usr/bin/python3
# VERSION
import json, sys
with open(sys.argv[0] + ".runs", "a") as f:
    f.write("x")
args = sys.argv[1:]
config = args[args.index("--config") + 1] if "--config" in args else ""
text = open(config).read().strip() if config else ""
if text == "crash":
    import os, signal
    os.kill(os.getpid(), signal.SIGKILL)
if text == "bad":
    print("train_fake: " + config + ": field 'x': expected a number", file=sys.stderr)
    sys.exit(2)
heads = [args[i + 1] for i, a in enumerate(args) if a == "--describe-heads"]
why = "VERSION " + text + " " + " ".join(a for a in args if a.startswith("--lr"))
print(json.dumps({"kind": "fake", "summary": "VERSION", "stages": ["train"], "until": False,
                  "epoch_dumps": False, "dyneval": False, "dumps_logprobs": True,
                  "hands_on": {}, "best_weights": "model.pt", "own_heads": [], "keys": [],
                  "heads": {h: {"accepted": False, "why": why.strip()} for h in heads}}))
'''

# What one driver process does: read the kind, then ask for a head's verdict under a config.
ASK = r'''
import json, sys
sys.path.insert(0, sys.argv[1])
import trainer_kinds
trainer_kinds.use(sys.argv[2])
overrides = json.loads(sys.argv[4])
try:
    k = trainer_kinds.kind("fake")
    print(json.dumps({"summary": k.summary,
                      "why": k.refusals(sys.argv[3], overrides, ["softmax"])["softmax"]}))
except trainer_kinds.TrainerKindError as e:
    print(json.dumps({"error": str(e)}))
'''


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        trainers = os.path.join(tmp, "trainers")
        os.makedirs(trainers)
        binary = os.path.join(trainers, "train_fake")
        config = os.path.join(tmp, "run.toml")

        def build(version: str) -> None:
            with open(binary, "w") as f:
                f.write(FAKE.replace("VERSION", version))
            os.chmod(binary, 0o755)

        def runs() -> int:
            try:
                return len(open(binary + ".runs").read())
            except OSError:
                return 0

        def ask(text: str, overrides: dict | None = None) -> tuple[dict, int]:
            with open(config, "w") as f:
                f.write(text)
            before = runs()
            out = subprocess.run([sys.executable, "-c", ASK, PIPELINE, trainers, config,
                                  json.dumps(overrides or {})], capture_output=True, text=True,
                                 check=True).stdout
            return json.loads(out), runs() - before

        build("v1")
        first, n1 = ask("a = 1")
        again, n2 = ask("a = 1")
        check(n1 == 2 and first == {"summary": "v1", "why": "v1 a = 1"},
              f"the first driver runs the binary twice (bare, then with the config): {n1}, {first}")
        check(n2 == 0 and again == first,
              f"a second driver asking the same runs nothing and gets the same answer ({n2} runs)")
        edited, n3 = ask("a = 2")
        check(n3 == 1 and edited["why"] == "v1 a = 2",
              f"an edited config runs it again and its answer is the new one: {n3}, {edited}")
        lr, n4 = ask("a = 2", {"lr": 3})
        check(n4 == 1 and lr["why"] == "v1 a = 2 --lr",
              f"other overrides run it again: {n4}, {lr}")
        os.unlink(binary)  # a rebuild: other bytes (and inode, mtime) under the same name
        build("v2")
        rebuilt, n5 = ask("a = 2")
        check(n5 == 2 and rebuilt == {"summary": "v2", "why": "v2 a = 2"},
              f"a rebuilt binary is asked again, bare and with the config: {n5}, {rebuilt}")
        bad1, n6 = ask("bad")
        bad2, n7 = ask("bad")
        check(n6 == 1 and n7 == 1 and bad1 == bad2 and "field 'x'" in bad1.get("error", ""),
              f"a refusal raises the trainer's line and is asked again: {n6}, {n7}, {bad2}")
        ask("crash")
        _, n8 = ask("crash")
        check(n8 == 1, f"a crash is not kept: the next driver runs the binary again ({n8} run)")
        kept = os.listdir(os.path.join(trainers, ".describe"))
        check(all(k.endswith(".json") for k in kept) and len(kept) == 6,
              f"six descriptions kept (v1: bare, two configs, lr; v2: bare, a = 2), no refusal, "
              f"no temporary: {sorted(kept)}")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
