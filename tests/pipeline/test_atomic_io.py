#!/usr/bin/python3
"""pipeline/atomic_io.py, the one way the pipeline writes a file: a write that fails (a full
disk, simulated by RLIMIT_FSIZE in a child process, which makes write(2) fail with EFBIG as
ENOSPC would; a failing fsync; an exception of the writer; SIGKILL in the middle of a write)
leaves the previous file byte for byte, no temporary file, and an OSError naming the target.
And no pipeline module writes a file by hand (open + os.replace) any more."""

import errno
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

from checks import PIPELINE, check, finish, import_pipeline

import_pipeline()
import atomic_io  # noqa: E402

with tempfile.TemporaryDirectory() as tmp:
    target = os.path.join(tmp, "stages.json")

    # The ordinary case: the content, the usual file mode (umask), nothing else in the folder.
    atomic_io.write_json_atomically(target, {"train": {"seconds": 1.0}})
    with open(target) as f:
        check(json.load(f) == {"train": {"seconds": 1.0}}, "write_json_atomically writes the data")
    umask = os.umask(0)
    os.umask(umask)
    check(os.stat(target).st_mode & 0o777 == 0o666 & ~umask,
          f"the file has the umask's mode ({oct(0o666 & ~umask)}), not a temporary file's 0600")
    check(os.listdir(tmp) == ["stages.json"], "no temporary file is left beside the target")
    before = open(target, "rb").read()

    def leaves_old(what):
        check(open(target, "rb").read() == before, f"{what}: the previous file is intact")
        check(os.listdir(tmp) == ["stages.json"], f"{what}: no temporary file is left")

    # A full disk: a child whose files may not grow beyond 1000 bytes writes 100 kB.
    child = f"""
import resource, signal, sys
sys.path.insert(0, {PIPELINE!r})
import atomic_io
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # EFBIG from write(2) instead of the signal
resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
try:
    atomic_io.write_text_atomically({target!r}, "x" * 100000)
except OSError as e:
    print(f"{{e.errno}} {{e}}")
    sys.exit(2)
"""
    r = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
    check(r.returncode == 2, f"a full disk raises OSError (exit {r.returncode}, {r.stderr[-200:]!r})")
    check(r.stdout.startswith(f"{errno.EFBIG} ") and f"{target}: not written" in r.stdout,
          f"the error names the target and keeps errno: {r.stdout.strip()!r}")
    leaves_old("a full disk")

    # A failing fsync (EIO at the last moment, after every write succeeded).
    real_fsync = os.fsync

    def failing_fsync(fd):
        raise OSError(errno.EIO, "Input/output error")
    os.fsync = failing_fsync
    try:
        atomic_io.write_text_atomically(target, "new content")
        check(False, "a failing fsync raises")
    except OSError as e:
        check(e.errno == errno.EIO and target in str(e), f"a failing fsync raises naming the "
              f"target: {e}")
    finally:
        os.fsync = real_fsync
    leaves_old("a failing fsync")

    # The writer's own exception (a plot that fails half-way): re-raised as it is.
    try:
        with atomic_io.replacing(target) as f:
            f.write("half")
            raise ValueError("the writer failed")
    except ValueError as e:
        check(str(e) == "the writer failed", "the writer's exception reaches the caller unchanged")
    leaves_old("an exception in the block")

    # SIGKILL in the middle of a write: the target is the old file; the temporary file is the
    # only trace, a hidden name that no reader of the directory takes for a result.
    child = f"""
import os, sys, time
sys.path.insert(0, {PIPELINE!r})
import atomic_io
with atomic_io.replacing({target!r}) as f:
    f.write("partial")
    f.flush()
    print("writing", flush=True)
    time.sleep(60)
"""
    p = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    check(p.stdout.readline().strip() == "writing", "the killed writer was in the middle of a write")
    p.send_signal(signal.SIGKILL)
    p.wait()
    check(open(target, "rb").read() == before, "SIGKILL mid-write: the previous file is intact")
    left = sorted(os.listdir(tmp))
    check(all(n == "stages.json" or n.startswith(".stages.json.tmp") for n in left),
          f"SIGKILL mid-write: only a hidden temporary file beside it ({left})")

    # A figure goes through the same path.
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    ax.plot([1, 2, 3])
    png = os.path.join(tmp, "plot.png")
    atomic_io.save_figure_atomically(fig, png, dpi=50)
    check(open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n", "save_figure_atomically writes a PNG")

# No module of the pipeline renames a file into place by hand.
hand_rolled = []
for path in sorted(glob.glob(os.path.join(PIPELINE, "*.py"))):
    if os.path.basename(path) == "atomic_io.py":
        continue
    for n, line in enumerate(open(path), 1):
        if re.search(r"os\.replace\(|os\.rename\(|mkstemp\(", line):
            hand_rolled.append(f"{os.path.basename(path)}:{n}")
check(not hand_rolled, f"every pipeline write goes through atomic_io ({hand_rolled or 'none by hand'})")

sys.exit(finish())
