#!/usr/bin/python3
"""pipeline/stage_clock.py: a running stage's time reaches stages.json while it runs. The beats
add up, with the last unrecorded piece, to the block's wall time (each beat's seconds measured by
the same monotonic clock: the sum equals the elapsed time to 1 ms, the tolerance covering the
clock reads around the block); a beat comes every `every` seconds; and a driver killed with
SIGKILL in the middle of a stage leaves that stage's time so far as <stage>.partial."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from checks import ROOT, check, finish

sys.path.insert(0, os.path.join(ROOT, "pipeline"))
from stage_clock import Heartbeat  # noqa: E402

beats = []
t0 = time.monotonic()
with Heartbeat(beats.append, every=0.05) as beat:
    time.sleep(0.33)
rest = beat.unrecorded()
elapsed = time.monotonic() - t0
check(2 <= len(beats) <= 6, f"a beat every 0.05 s over 0.33 s (fewer on a loaded machine): "
      f"{len(beats)} beats")
check(abs(sum(beats) + rest - elapsed) < 1e-3,
      f"beats + the rest = the wall time ({sum(beats) + rest:.4f} vs {elapsed:.4f} s)")
check(beat.unrecorded() < 0.05, "unrecorded() counts what it returns as recorded")

# A process that records like reproduce.py (stages.json's partial record, read-modify-write) and
# is killed with SIGKILL mid-stage: the time until the last beat is on disk.
with tempfile.TemporaryDirectory() as tmp:
    code = f"""
import json, os, sys, time
sys.path.insert(0, {os.path.join(ROOT, 'pipeline')!r})
from stage_clock import Heartbeat
path = os.path.join({tmp!r}, "stages.json")
def record(seconds):
    t = json.load(open(path)) if os.path.exists(path) else {{}}
    p = t.get("train.partial", {{}}).get("seconds", 0.0)
    t["train.partial"] = {{"seconds": p + seconds}}
    json.dump(t, open(path + ".tmp", "w")); os.replace(path + ".tmp", path)
with Heartbeat(record, every=0.2):
    print("running", flush=True)
    time.sleep(60)
"""
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    proc.stdout.readline()
    started = time.monotonic()
    time.sleep(1.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    ran = time.monotonic() - started
    with open(os.path.join(tmp, "stages.json")) as f:
        kept = json.load(f)["train.partial"]["seconds"]
    # At least one beat's time is kept, and never more than the process ran (the stage started
    # before "running" was read: its start-up is the only time not seen here, < 0.1 s).
    check(0.2 <= kept <= ran + 0.1, f"SIGKILL after {ran:.2f} s leaves {kept:.2f} s of the stage")

sys.exit(finish())
