#!/usr/bin/python3
"""A full disk while writing an HDF5 output (rank_analysis --out, synthetic_logprobs --out): exit
2 with one line naming the file, no crash, no file under the final name, no temporary left, and a
previous file of that name intact. The disk is a tmpfs of a few sizes mounted here (root; the test
says SKIPPED otherwise), so the failure comes at different moments of the write: the datasets,
the attributes, the flush at close. A log-output file (LogProbWriter) first checks that the
filesystem can hold T x M float32: on a disk too small it is refused before anything is created,
naming what it needs and what is free; SB_SKIP_SPACE_CHECK=1 skips that check, so that the
failure inside the write is tested too."""
import os
import subprocess
import sys
import tempfile

from checks import check, finish, message_lines

build = os.path.abspath(sys.argv[1])
rank = os.path.join(build, "analysis", "rank_analysis")
synth = os.path.join(build, "trainers", "synthetic_logprobs")


def mount(path: str, size: str) -> bool:
    os.makedirs(path, exist_ok=True)
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", path],
                          capture_output=True).returncode == 0


def umount(path: str) -> None:
    subprocess.run(["umount", path], capture_output=True)


with tempfile.TemporaryDirectory() as tmp:
    src = os.path.join(tmp, "lp.h5")
    r = subprocess.run([synth, "--head", "softmax", "--T", "2000", "--M", "3000", "--d", "20",
                        "--seed", "0", "--out", src], capture_output=True, text=True)
    check(r.returncode == 0, "a 2000 x 3000 log-output file to analyse")
    disk = os.path.join(tmp, "disk")
    if not mount(disk, "16k"):
        print("SKIPPED: cannot mount a tmpfs here (not root?): the full-disk cases need one")
        raise SystemExit(0)
    umount(disk)
    # rank.h5 is ~25 KB, the dump 24 MB: each size fails somewhere inside the write.
    cases = [("rank_analysis --out", "rank.h5", size,
              [rank, "--check", "--out", None, src]) for size in ("4k", "16k", "20k")]
    cases += [("synthetic_logprobs --out", "lp.h5", size,
               [synth, "--head", "softmax", "--T", "2000", "--M", "3000", "--d", "20", "--seed",
                "0", "--out", None]) for size in ("16k", "1m", "12m")]
    skip_check = dict(os.environ, SB_SKIP_SPACE_CHECK="1")
    for what, name, size, cmd in cases:
        check(mount(disk, size), f"tmpfs of {size}")
        target = os.path.join(disk, name)
        previous = b"the previous file, which must survive\n"
        with open(target, "wb") as f:
            f.write(previous)
        cmd = [target if c is None else c for c in cmd]
        r = subprocess.run(cmd, capture_output=True, text=True, env=skip_check)
        lines = [line for line in message_lines(r.stderr) if not line.startswith(
            ("rank_analysis: analysing", f"rank_analysis: {src}:"))]
        check(r.returncode == 2, f"{what} on a {size} disk: exit 2 (got {r.returncode})")
        check(len(lines) == 1 and target in lines[0] and "not written" in lines[0],
              f"{what} on a {size} disk: one line naming {name} ({lines})")
        with open(target, "rb") as f:
            check(f.read() == previous, f"{what} on a {size} disk: the previous {name} intact")
        left = sorted(set(os.listdir(disk)) - {name})
        check(not left, f"{what} on a {size} disk: no temporary left ({left})")
        umount(disk)

    # Without SB_SKIP_SPACE_CHECK: refused before the write, naming the size needed (2000 x 3000
    # float32 + 2000 int64 targets = 22.9 MiB) and the space free, nothing created; a disk with
    # room passes the check.
    check(mount(disk, "12m"), "tmpfs of 12m")
    target = os.path.join(disk, "lp.h5")
    cmd = [synth, "--head", "softmax", "--T", "2000", "--M", "3000", "--d", "20", "--seed", "0",
           "--out", target]
    r = subprocess.run(cmd, capture_output=True, text=True)
    lines = message_lines(r.stderr)
    check(r.returncode == 2 and len(lines) == 1 and f"{target}: not written: it needs 22.9 MiB "
          "(T = 2000 x M = 3000 float32 log-outputs and T targets), the filesystem has "
          in lines[0] and lines[0].endswith(" MiB free"),
          f"a dump larger than the free space is refused before it starts ({r.returncode}: "
          f"{lines})")
    check(os.listdir(disk) == [], f"nothing created on the small disk ({os.listdir(disk)})")
    umount(disk)
    check(mount(disk, "32m"), "tmpfs of 32m")
    r = subprocess.run(cmd, capture_output=True, text=True)
    check(r.returncode == 0 and os.listdir(disk) == ["lp.h5"],
          f"the same dump on a 32 MB disk is written ({r.returncode}: {r.stderr.strip()[-200:]})")
    umount(disk)
raise SystemExit(finish())
