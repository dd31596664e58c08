#!/usr/bin/python3
"""The bad-input corpus: every case of tests/bad_inputs/*_cases.txt, run against the built
binaries. A case line is `<case>\\t<command>\\t<exit status>\\t<stderr substring>[\\t<path>]`
({build}: the build directory, {dir}: the inputs' directory, {root}: the repository root,
{rank_analysis}: the analysis binary); make_<name>_inputs.py writes the inputs of <name>_cases.txt.

Each case must exit with its status (2 for bad input), print the expected text on stderr in a
single line (the first line beginning "error:" or the whole of stderr), let no raw library
message through (a LibTorch backtrace, an HDF5 diagnostic, a Python traceback, std::bad_alloc),
and leave no partial output (the optional path must not exist afterwards).

Argument 1: the build directory (ctest passes it).
"""

import glob
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures"))
from checks import check, finish  # noqa: E402

RAW = ("Exception raised from", "c10::Error", "HDF5-DIAG", "Traceback (most recent call last)",
       "std::bad_alloc", "terminate called", "PytorchStreamReader")


def error_lines(stderr: str) -> list:
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:") or ": error:" in line]
    return errors or lines


def run_cases(build: str, name: str, cases_file: str, tmp: str) -> int:
    d = os.path.join(tmp, name)
    os.makedirs(d)
    make = os.path.join(HERE, f"make_{name}_inputs.py")
    if name == "trainer":  # its cases are generated: the committed file is what --cases prints
        printed = subprocess.run(["/usr/bin/python3", make, "--cases"], capture_output=True,
                                 text=True).stdout
        check(printed == open(cases_file).read(),
              f"{name}_cases.txt is what make_{name}_inputs.py --cases prints")
    if os.path.exists(make):
        made = subprocess.run(["/usr/bin/python3", make, build, d] if name == "trainer"
                              else ["/usr/bin/python3", make, d], capture_output=True, text=True)
        if not check(made.returncode == 0, f"{name}: make_{name}_inputs.py wrote the inputs"):
            print(made.stdout[-3000:], made.stderr[-3000:])
            return 0
    count = 0
    for line in open(cases_file):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.rstrip("\n").split("\t")
        case, command, status, substring = fields[:4]
        absent = fields[4] if len(fields) > 4 else ""

        def fill(text: str) -> str:
            return (text.replace("{rank_analysis}", os.path.join(build, "analysis", "rank_analysis"))
                    .replace("{root}/build", build).replace("{build}", build)
                    .replace("{dir}", d).replace("{root}", ROOT))
        done = subprocess.run(fill(command), shell=True, capture_output=True, text=True,
                              cwd=d, timeout=300)
        errors = error_lines(done.stderr)
        raw = [r for r in RAW if r in done.stderr or r in done.stdout]
        ok = (done.returncode == int(status) and len(errors) == 1 and fill(substring) in errors[0]
              and not raw and not (absent and os.path.exists(fill(absent))))
        check(ok, f"{name}: {case}: exit {done.returncode} (expected {status}), one line naming "
                  f"the input" + (", nothing written" if absent else ""))
        if not ok:
            print(f"     command: {fill(command)}\n     expected: {fill(substring)}\n"
                  f"     stderr: {done.stderr[-1500:]!r}\n     raw library text: {raw}")
        count += 1
    return count


def main() -> int:
    build = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "build")
    total = 0
    with tempfile.TemporaryDirectory(prefix="sb_bad_inputs_") as tmp:
        for cases_file in sorted(glob.glob(os.path.join(HERE, "*_cases.txt"))):
            name = os.path.basename(cases_file)[: -len("_cases.txt")]
            total += run_cases(build, name, cases_file, tmp)
    check(total >= 40, f"the corpus holds {total} cases (at least 40)")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
