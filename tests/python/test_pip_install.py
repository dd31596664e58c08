#!/usr/bin/python3
"""`pip install --no-build-isolation ./python` into a fresh `python3 -m venv --system-site-packages`
(numpy and torch from Debian), offline (--no-index): the package builds with the project's CMake,
installs into the venv, and `import sbrank` then works from a directory outside the repository,
analysing a matrix to the rank Theorem 2 gives. The commands of docs/python.md, "Installing",
are the ones run here."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "fixtures"))
from checks import ROOT, check, finish  # noqa: E402

with tempfile.TemporaryDirectory() as tmp:
    venv = os.path.join(tmp, "venv")
    r = subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(f"SKIPPED: python3 -m venv failed (python3-venv missing?): {r.stderr.strip()[-200:]}")
        sys.exit(0)
    py = os.path.join(venv, "bin", "python")
    shutil.rmtree(os.path.join(ROOT, "python", "build"), ignore_errors=True)  # a fresh build
    env = dict(os.environ, SB_BUILD_JOBS=str(os.cpu_count() or 1), PIP_NO_INDEX="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    r = subprocess.run([py, "-m", "pip", "install", "--no-build-isolation", "./python"],
                       cwd=ROOT, capture_output=True, text=True, env=env)
    check(r.returncode == 0, f"pip install --no-build-isolation ./python exits 0 "
          f"({r.returncode}: {(r.stdout + r.stderr)[-1500:]})")
    outside = os.path.join(tmp, "elsewhere")
    os.makedirs(outside)
    code = ("import numpy as np, sbrank, os\n"
            "rng = np.random.default_rng(0)\n"
            "z = rng.standard_normal((600, 8)) @ rng.standard_normal((8, 300))"
            " + rng.standard_normal(300)\n"
            "lp = z - z.max(1, keepdims=True)\n"
            "lp = lp - np.log(np.exp(lp).sum(1, keepdims=True))\n"
            "r = sbrank.analyse(lp, head='softmax', d=8, bias=1)\n"
            "print(os.path.dirname(sbrank.__file__))\n"
            "print(r['rank'], r['verdict'], sorted(sbrank.__all__))\n")
    r = subprocess.run([py, "-c", code], cwd=outside, capture_output=True, text=True,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    lines = r.stdout.strip().splitlines()
    check(r.returncode == 0 and len(lines) == 2, f"import sbrank outside the repository "
          f"({r.returncode}: {r.stderr.strip()[-500:]})")
    if len(lines) == 2:
        check(lines[0].startswith(venv), f"sbrank comes from the venv's site-packages ({lines[0]})")
        check(lines[1] == "10 within_bound ['FormatError', 'InputError', 'OptionError', 'WriteError', "
              "'analyse', 'blas', 'plot']",
              f"it analyses: softmax with d = 8 and a bias has rank d + 2 = 10 ({lines[1]})")
    shutil.rmtree(os.path.join(ROOT, "python", "build"), ignore_errors=True)
sys.exit(finish())
