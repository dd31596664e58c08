#!/usr/bin/python3
"""One writer per directory (pipeline/dir_lock.py): a second `reproduce.py` on the output
directory of a running one, or a Slurm-style `--stage train --run R` on a run a local driver is
training, exits 2 in one line naming the directory and the holder, before it writes anything;
a holder killed with SIGKILL leaves no stale lock (the next driver goes on at once)."""

import os
import signal
import subprocess
import sys
import tempfile

from checks import ROOT, check, fake_build, finish, import_pipeline

import_pipeline()
import dir_lock  # noqa: E402

with tempfile.TemporaryDirectory() as tmp:
    # The lock itself, across processes.
    d = os.path.join(tmp, "dir")
    holder = subprocess.Popen(
        [sys.executable, "-c", f"import sys, time; sys.path.insert(0, {os.path.join(ROOT, 'pipeline')!r}); "
         "import dir_lock\nwith dir_lock.holding(sys.argv[1], 'the first writer'):\n"
         "    print('holding', flush=True); time.sleep(60)", d],
        stdout=subprocess.PIPE, text=True)
    check(holder.stdout.readline().strip() == "holding", "a first process holds the directory")
    try:
        with dir_lock.holding(d, "the second writer"):
            check(False, "a second writer is refused")
    except dir_lock.Busy as e:
        check(f"pid {holder.pid} " in str(e) and "the first writer" in str(e) and d in str(e),
              f"the refusal names the directory, the holder's pid and what it is: {e}")
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    try:
        with dir_lock.holding(d, "the third writer"):
            taken = True
    except dir_lock.Busy:
        taken = False
    check(taken, "after SIGKILL of the holder the lock is free at once (never stale)")

    # The driver: a build whose train_wordlm announces itself and sleeps (a long training).
    build = fake_build(tmp, "echo training; exec sleep 60")
    out = os.path.join(tmp, "out")
    cmd = ["/usr/bin/python3", os.path.join(ROOT, "pipeline", "reproduce.py"), "--allow-dirty",
           "--profile", "smoke", "--build", build, "--out", out]

    def trains(proc) -> bool:
        """Whether the driver's output reaches the fake trainer's line (EOF: it exited)."""
        for line in proc.stdout:
            if line.strip() == "training":
                return True
        return False

    first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             cwd=ROOT, start_new_session=True)
    check(trains(first), "the first driver is training its first run")

    entries = sorted(os.listdir(out))
    second = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    lines = second.stderr.strip().splitlines()
    check(second.returncode == 2 and len(lines) == 1 and f"{out} is in use by pid {first.pid} "
          in lines[0] and "--profile smoke" in lines[0],
          f"a second driver on the same --out: exit 2, one line naming the directory and the "
          f"holder ({second.returncode}: {second.stderr.strip()[-300:]})")
    check(sorted(os.listdir(out)) == entries and "training" not in second.stdout,
          "the second driver wrote nothing and started no trainer")

    run = sorted(e for e in entries if os.path.isdir(os.path.join(out, e)))[0]
    job = subprocess.run(cmd + ["--stage", "train", "--run", run], capture_output=True, text=True,
                         cwd=ROOT)
    check(job.returncode == 2 and f"{os.path.join(out, run)} is in use by pid {first.pid}"
          in job.stderr,
          f"a one-run job (--stage train --run {run}) on the run being trained is refused "
          f"({job.returncode}: {job.stderr.strip()[-300:]})")

    os.killpg(first.pid, signal.SIGKILL)  # the driver and its trainer, as an OOM kill would
    first.wait()
    third = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             cwd=ROOT, start_new_session=True)
    check(trains(third),
          "after SIGKILL of the first driver a new one takes the directory over and trains")
    os.killpg(third.pid, signal.SIGKILL)
    third.wait()

sys.exit(finish())
