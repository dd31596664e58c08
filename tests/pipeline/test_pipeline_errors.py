#!/usr/bin/python3
"""pipeline_errors.PipelineError is the one base of the pipeline's refusals: every exception
class defined in pipeline/*.py derives from it (read from the source, so a new one that does not
fails here), reproduce.py catches it once, and a refusal from deep inside (a malformed final.json)
reaches the user as one line with exit 2, not a traceback."""

import ast
import glob
import json
import os
import subprocess
import tempfile

from checks import PIPELINE, check, finish, import_pipeline

import_pipeline()
import pipeline_errors  # noqa: E402

classes = []
for path in sorted(glob.glob(os.path.join(PIPELINE, "*.py"))):
    with open(path) as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(
                isinstance(b, ast.Name) and (b.id.endswith("Error") or b.id == "Exception")
                for b in node.bases) or (isinstance(node, ast.ClassDef) and
                                         node.name.endswith(("Error", "Busy"))):
            classes.append((os.path.basename(path), node.name))
check(len(classes) >= 12, f"the pipeline's exception classes found ({len(classes)})")
for module, name in classes:
    if module == "pipeline_errors.py":
        continue
    mod = __import__(module[:-3])
    cls = getattr(mod, name)
    check(issubclass(cls, pipeline_errors.PipelineError),
          f"{module}: {name} derives from PipelineError")

with open(os.path.join(PIPELINE, "reproduce.py")) as f:
    source = f.read()
check(source.count("except PipelineError") == 1 and "except (" not in source,
      "reproduce.py catches PipelineError once, no tuple of classes")

import final_json  # noqa: E402
with tempfile.TemporaryDirectory() as tmp:
    bad = os.path.join(tmp, "final.json")
    with open(bad, "w") as f:
        json.dump({"test_ppl": 1.0}, f)  # an old layout that names no trainer
    try:
        final_json.read_final(bad)
        check(False, "a final.json naming no trainer is refused")
    except pipeline_errors.PipelineError as e:
        check("\n" not in str(e) and "final.json" in str(e),
              f"a malformed final.json: one PipelineError line ({e})")
r = subprocess.run(["/usr/bin/python3", os.path.join(PIPELINE, "reproduce.py"), "--profile",
                    "no-such-profile", "--plan"], capture_output=True, text=True)
check(r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr,
      f"reproduce.py: a refusal is one line, exit 2 ({r.stderr.strip()})")
raise SystemExit(finish())
