#!/usr/bin/python3
"""`make -n reproduce PROFILE=x` prints the plan the driver prints (`reproduce.py --profile x
--dry-run`): the Makefile passes no setting of its own (the build's JOBS is not the driver's lanes),
and LANES=n reaches the driver as --jobs n."""

import os
import subprocess
import sys

from checks import ROOT, check, finish

env = {k: v for k, v in os.environ.items() if k not in ("JOBS", "LANES", "MAKEFLAGS")}
build = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "build")


def plan_lines(cmd):
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    # make -n echoes the driver's command line first; the plan is what follows it.
    return out.returncode, [line for line in out.stdout.splitlines()
                            if not line.startswith("/usr/bin/python3 pipeline/reproduce.py")]


driver = ["/usr/bin/python3", "pipeline/reproduce.py", "--build", build, "--dry-run"]
for profile in ("claims", "smoke", "dsweep", "paper"):
    rc_make, by_make = plan_lines(["make", "-n", "--no-print-directory", "reproduce",
                                   f"PROFILE={profile}", f"BUILD_DIR={build}"])
    rc_drv, by_driver = plan_lines(driver + ["--profile", profile])
    check(rc_make == rc_drv == 0 and by_make == by_driver and
          any("at a time" in line for line in by_make),
          f"make -n reproduce PROFILE={profile} prints the driver's plan "
          f"({[line for line in by_make if 'at a time' in line]})")
    rc, with_jobs = plan_lines(["make", "-n", "--no-print-directory", "reproduce",
                                f"PROFILE={profile}", "JOBS=7", f"BUILD_DIR={build}"])
    check(rc == 0 and with_jobs == by_driver,
          f"PROFILE={profile} JOBS=7 (the build's parallelism) leaves the plan unchanged")
rc, lanes = plan_lines(["make", "-n", "--no-print-directory", "reproduce", "PROFILE=claims",
                        "LANES=1", f"BUILD_DIR={build}"])
rc_drv, one = plan_lines(driver + ["--profile", "claims", "--jobs", "1"])
check(rc == rc_drv == 0 and lanes == one and any("1 at a time" in line for line in lanes),
      "LANES=1 reaches the driver as --jobs 1")
raise SystemExit(finish())
