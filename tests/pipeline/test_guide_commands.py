#!/usr/bin/python3
"""The commands of README.md and docs/*.md that only describe run as written and exit 0.

    test_guide_commands.py BUILD_DIR

test_docs.py checks that every command of the guides names something that exists; this runs the
ones that write nothing and take seconds: a line whose words include --help, --describe or
--dry-run, or that starts with `make -n`. From the repository's root, `build/` meaning this build
(make gets BUILD_DIR=, pipeline/reproduce.py --build); each must exit 0, print something, and
leave results/ as it was (no file added, removed or rewritten). The test fails if fewer than 6
such lines are found (the guides lost them, or the parsing broke).
"""
import os
import shlex
import subprocess
import sys

from checks import ROOT, check, finish
from doc_commands import command_lines, docs

DESCRIBING = ("--help", "--describe", "--dry-run")


def describing(command):
    words = shlex.split(command, comments=True)
    return words[:2] == ["make", "-n"] or any(w in DESCRIBING for w in words)


def as_run(command, build):
    """The line with build/ replaced by this build, and make and the driver told where it is."""
    words = shlex.split(command, comments=True)
    if words[0] == "make":
        words.append(f"BUILD_DIR={build}")
    elif words[0].startswith("build/"):
        words[0] = os.path.join(build, words[0][len("build/"):])
    elif any(w.endswith("pipeline/reproduce.py") for w in words) and "--build" not in words:
        words += ["--build", build]
    return words


def results_listing():
    """Every file under results/ with its size and modification time: a command that adds,
    removes or rewrites one changes the listing."""
    out = []
    for base, _, names in os.walk(os.path.join(ROOT, "results")):
        for n in names:
            st = os.stat(os.path.join(base, n))
            out.append((os.path.join(base, n), st.st_size, st.st_mtime_ns))
    return sorted(out)


def main():
    build = os.path.abspath(sys.argv[1])
    lines = [(os.path.relpath(p, ROOT), n, c) for p in docs() for n, c in command_lines(p)
             if describing(c)]
    check(len(lines) >= 6, f"the guides have their describing commands ({len(lines)})")
    before = results_listing()
    for doc, n, command in lines:
        r = subprocess.run(as_run(command, build), cwd=ROOT, capture_output=True, text=True,
                           timeout=300)
        why = "" if r.returncode == 0 else f": {r.returncode}, {r.stderr.strip()[-300:]}"
        check(r.returncode == 0 and r.stdout.strip(),
              f"{doc}:{n} `{command.split(' #')[0].strip()}` exits 0 and prints{why}")
    check(results_listing() == before, "and none of them wrote under results/")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
