"""The examples of `rank_analysis --help`, help(sbrank), the README's rank tool and
docs/rank-analysis.md run as written on a fresh build.

    test_help_examples.py BUILD_DIR

rank_analysis: every command line of the footer's "Examples" block (up to "Where they need
more", whose MPI and GPU lines need a cluster or a CUDA build) runs in order in an empty folder,
with the build's rank_analysis and synthetic_logprobs first on PATH and `python3` meaning the
Python with numpy and h5py; each exits 0, and the first analysis reports softmax's rank d + 2 = 66
of the synthetic file the first line writes. Then the README's rank-tool commands (shell and
Python) and docs/rank-analysis.md's first command block, build/ meaning this build, in the same
folder. sbrank: the module docstring's usage block, with
`log_probs` the same synthetic matrix, runs and gives the same rank (skipped without the module).
The test fails if the examples name a file no earlier line writes, or if fewer than 12 commands
are found (the block's parsing broke).
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

from checks import check, finish  # tests/fixtures/checks.py (PYTHONPATH)

os.environ["MPLBACKEND"] = "Agg"  # sbrank.plot(r) draws on a new figure, no display
build = os.path.abspath(sys.argv[1])
rank_analysis = os.path.join(build, "analysis", "rank_analysis")
synthetic = os.path.join(build, "trainers", "synthetic_logprobs")

help_text = subprocess.run([rank_analysis, "--help"], capture_output=True, text=True,
                           check=True).stdout
block = help_text.split("Examples", 1)[1].split("Where they need more", 1)[0]
commands = [line.strip() for line in block.splitlines()[1:]
            if line.startswith("  ") and not line.strip().startswith("#")]
check(len(commands) >= 12, f"the --help examples block has its commands ({len(commands)})")

with tempfile.TemporaryDirectory() as tmp:
    shims = os.path.join(tmp, "bin")
    os.makedirs(shims)
    for name, target in (("rank_analysis", rank_analysis), ("synthetic_logprobs", synthetic),
                         ("python3", "/usr/bin/python3")):
        os.symlink(target, os.path.join(shims, name))
    env = dict(os.environ, PATH=shims + os.pathsep + os.environ.get("PATH", ""))
    work = os.path.join(tmp, "work")
    os.makedirs(work)

    def run(command, label=""):
        """Runs one example line in the work folder; checks it exits 0."""
        r = subprocess.run(command, shell=True, cwd=work, env=env, capture_output=True,
                           text=True)
        why = "" if r.returncode == 0 else f": {r.returncode}, {r.stderr.strip()[-300:]}"
        check(r.returncode == 0, f"{label}`{command}` exits 0{why}")
        return r

    first_rank = None
    for command in commands:
        r = run(command)
        if first_rank is None and shlex.split(command)[0] == "rank_analysis":
            table = [line.split() for line in r.stdout.splitlines()[:2]]  # header, one row
            first_rank = int(table[1][table[0].index("rank_NR")]) if len(table) == 2 and \
                "rank_NR" in table[0] else -1
    check(first_rank == 66, f"the first example reports softmax's rank d + 2 = 66 ({first_rank})")

    # The guides' command blocks (the README's rank tool, docs/rank-analysis.md's first block),
    # build/ meaning this build, in the same folder after the examples above.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    guide_python = []
    for guide, heading in (("README.md", "## The rank tool"), ("docs/rank-analysis.md", "")):
        with open(os.path.join(root, guide)) as f:
            text = f.read().split(heading, 1)[1] if heading else f.read()
        shell = text.split("```sh\n", 1)[1].split("```", 1)[0]
        if guide == "README.md":
            guide_python.append(text.split("```python\n", 1)[1].split("```", 1)[0])
        lines = [line for line in shell.splitlines() if line and not line.startswith("#")]
        check(len(lines) >= 1, f"{guide}: its first command block after '{heading}' is found")
        for line in lines:
            run(re.sub(r"(^|\s)build/", lambda m: m.group(1) + build + "/", line), f"{guide}: ")

    # help(sbrank): the docstring's usage block on the same synthetic matrix.
    sys.path.insert(0, os.path.join(build, "python"))
    try:
        import sbrank
    except ImportError as e:
        print(f"skip the sbrank example: the module is not built ({e})")
        sbrank = None
    if sbrank is not None:
        import h5py
        doc = sbrank.__doc__.split("\n\n", 2)[1]
        lines = [line.strip() for line in doc.splitlines() if line.strip()]
        check(any("sbrank.analyse(" in line for line in lines),
              f"help(sbrank) opens with a usage block ({lines[:2]})")
        with h5py.File(os.path.join(work, "logprobs.h5")) as f:
            log_probs = f["log_probs"][:]
        os.chdir(work)
        scope = {"log_probs": log_probs}
        ranks = []
        for line in lines:
            code = line.split("#", 1)[0].strip()
            exec(code, scope)  # noqa: S102: the docstring's own lines
            if code.startswith("r = "):
                ranks.append(scope["r"]["rank"])
        check(ranks == [66] * len(ranks) and len(ranks) >= 2,
              f"help(sbrank)'s example ranks the synthetic matrix at d + 2 = 66 ({ranks})")
        for code in guide_python:  # the README's Python line
            scope = {"log_probs": log_probs}
            exec(code, scope)  # noqa: S102
            check(scope["r"]["rank"] == 66, f"the README's Python example ranks it 66 ({code})")
finish()
