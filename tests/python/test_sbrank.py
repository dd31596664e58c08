#!/usr/bin/python3
"""The Python module sbrank (python/sbrank_module.cpp) against the rank_analysis command line, on
matrices written by numpy: the same fields on the same matrix (from an array, a Fortran-order view,
a memmap and a path), no numpy-level copy of the array, the GIL released while it computes, the
CLI's one-line message as ValueError (the sbrank class of its kind: FormatError, InputError,
OptionError, with the file or the option), and the PyTorch example of docs/python.md.

  test_sbrank.py BUILD_DIR"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import tracemalloc

from checks import check, finish  # tests/fixtures/checks.py (PYTHONPATH)

build = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.join(build, "python"))
import numpy as np  # noqa: E402
import sbrank  # noqa: E402

cli = os.path.join(build, "analysis", "rank_analysis")


def softmax_logprobs(rng, t, m, d, dtype=np.float32):
    z = rng.standard_normal((t, d)) @ rng.standard_normal((d, m)) + rng.standard_normal(m)
    top = z.max(axis=1, keepdims=True)
    return (z - top - np.log(np.exp(z - top).sum(axis=1, keepdims=True))).astype(dtype)


def run_cli(args):
    p = subprocess.run([cli, "--quiet"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    return p.returncode, p.stdout, p.stderr


rng = np.random.default_rng(7)
facts = dict(head="softmax", d=12, bias=1)
cli_facts = ["--head", "softmax", "--d", "12", "--bias", "1"]
with tempfile.TemporaryDirectory() as tmp:
    lp = softmax_logprobs(rng, 900, 400, 12)
    path = os.path.join(tmp, "lp.npy")
    np.save(path, lp)
    # The same matrix through the CLI and the module, every method: the same fields. Singular
    # values: bit-identical (the same code on the same float64 rows, one BLAS thread each).
    for method in ("gram", "exact", "sketch"):
        status, out, _ = run_cli(["--json", "--threads", "1", "--method", method, "--spectrum"
                                  if method == "gram" else "--seed=0"] + cli_facts + [path])
        c = json.loads(out)
        for name, matrix in (("array", lp), ("path", path),
                             ("Fortran view", np.asfortranarray(lp)),
                             ("memmap", np.load(path, mmap_mode="r"))):
            r = sbrank.analyse(matrix, method=method, threads=1, **facts)
            same = all(r[k] == c[k] for k in ("rank", "rank_numpy", "bound", "verdict", "method",
                                              "certified", "rank_sweep", "input", "input_from"))
            check(status == 0 and same and r["rank"] == 14,
                  f"{method}, {name}: rank {r['rank']} (CLI {c['rank']}), fields as --json")
            check(r["tol"] == c["tol"] and r["sigma_max"] == c["sigma_max"],
                  f"{method}, {name}: tol and sigma_max bit-identical to the CLI's")
            check(isinstance(r["singular_values"], np.ndarray)
                  and r["singular_values"].dtype == np.float64
                  and r["singular_values"][0] == r["sigma_max"],
                  f"{method}, {name}: singular_values a float64 numpy array led by sigma_max")
    # rank-only (spectrum=False): the inertia count, no singular values.
    r = sbrank.analyse(lp, method="gram", spectrum=False, **facts)
    check(r["rank"] == 14 and r["singular_values"] is None and r["spectrum"] is False,
          "gram, spectrum=False: rank 14 by inertia, singular_values None")

    # No copy: numpy's allocations are traced by tracemalloc, so a conversion of the array
    # (ascontiguousarray, astype) would show as a peak of its size; ours (C++) are not traced.
    big = softmax_logprobs(rng, 20000, 1000, 12)  # 80 MB
    np.save(os.path.join(tmp, "big.npy"), big)
    for name, matrix in (("Fortran view", np.asfortranarray(big)),
                         ("row slice", big[::2]),
                         ("memmap", np.load(os.path.join(tmp, "big.npy"), mmap_mode="r"))):
        tracemalloc.start()
        r = sbrank.analyse(matrix, **facts)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        check(r["rank"] == 14 and peak < matrix.nbytes / 20,
              f"{name} of {matrix.nbytes / 1e6:.0f} MB read in place: numpy allocated at most "
              f"{peak / 1e6:.2f} MB while it was analysed")

    # The GIL is released: another Python thread runs while the analysis computes.
    ticks, done = [0], threading.Event()

    def work():
        sbrank.analyse(big, method="exact", **facts)
        done.set()

    worker = threading.Thread(target=work)
    worker.start()
    while not done.is_set():
        ticks[0] += 1
    worker.join()
    check(ticks[0] > 1000, f"the main thread ran {ticks[0]} loop steps during an exact SVD")

    # Bad input: ValueError with the line the CLI prints after "rank_analysis: ".
    cases = [
        (dict(head="softmax", d=0, bias=1), ["--head", "softmax", "--d", "0", "--bias", "1"]),
        (dict(head="softmaxx", d=12, bias=1), ["--head", "softmaxx", "--d", "12", "--bias", "1"]),
        (dict(d=12, bias=1), ["--d", "12", "--bias", "1"]),
        (dict(method="sketch", **facts), ["--method", "sketch"] + cli_facts),
    ]
    bad = os.path.join(tmp, "bad.npy")
    np.save(bad, np.full((10, 5), np.nan, dtype=np.float32))
    for kwargs, args in cases:
        target = bad if kwargs.get("method") == "sketch" else path
        status, _, err = run_cli(args + [target])
        try:
            sbrank.analyse(target, **kwargs)
            message = None
        except ValueError as e:
            message = str(e)
        check(status == 2 and message is not None and err == f"rank_analysis: {message}\n",
              f"{args}: ValueError '{message}' is the CLI's line")
    for matrix, expect in ((lp.astype(">f4"), "dtype: expected float32 or float64"),
                           (lp.astype(np.float16), "dtype: expected float32 or float64"),
                           (lp[0], "shape: expected 2-D"),
                           ([[1.0]], "matrix: expected a 2-D numpy array")):
        try:
            sbrank.analyse(matrix, **facts)
            check(False, f"{expect}: no error")
        except ValueError as e:
            check(expect in str(e) and "\n" not in str(e), f"ValueError: {e}")

    # The typed errors, by sb::error_report's kind: a file that is not a matrix file is an
    # sbrank.FormatError (an InputError) and one whose content is wrong an InputError, each naming
    # the file in .file; an argument outside what analyse() takes is an sbrank.OptionError naming
    # it in .option. All of them are still ValueErrors, with the CLI's line.
    not_npy = os.path.join(tmp, "not_a_matrix.npy")
    with open(not_npy, "w") as f:
        f.write("these are not the bytes of a .npy file\n")
    errors = {}
    for target, kind, field in ((not_npy, sbrank.FormatError, "magic"),
                                (os.path.join(tmp, "missing.npy"), sbrank.FormatError, ""),
                                (bad, sbrank.InputError, "the array")):
        try:
            sbrank.analyse(target, **facts)
            error = None
        except ValueError as e:
            error = errors[target] = e
        status, _, err = run_cli(cli_facts + [target])
        check(status == 2 and isinstance(error, kind) and isinstance(error, sbrank.InputError)
              and (kind is sbrank.FormatError) == isinstance(error, sbrank.FormatError)
              and error.file == target and error.field == field
              and err == f"rank_analysis: {error}\n",
              f"{os.path.basename(target)}: {type(error).__name__} with .file = the path, "
              f".field = {getattr(error, 'field', None)!r}: {error}")
    check(getattr(errors.get(not_npy), "expected", None) == '"\\x93NUMPY" (a .npy file)',
          "magic: .expected says what a .npy file starts with")
    for kwargs, option, expected in (
            (dict(threads=0), "threads", "threads >= 1"),
            (dict(input="x"), "input", "logprobs, logits or auto"),
            (dict(budget_gb=-1.0), "budget_gb", "a finite number of GiB > 0"),
            (dict(d=0), "--d", "d >= 1")):
        try:
            sbrank.analyse(lp, **{**facts, **kwargs})
            error = None
        except ValueError as e:
            error = e
        check(isinstance(error, sbrank.OptionError) and error.option == option
              and error.expected == expected and str(error).endswith(": expected " + expected)
              and not isinstance(error, sbrank.InputError),
              f"{kwargs}: sbrank.OptionError with .option = {option!r}, .expected = "
              f"{getattr(error, 'expected', None)!r}: {error}")
    check(issubclass(sbrank.WriteError, OSError) and not issubclass(sbrank.WriteError, ValueError)
          and str(sbrank.WriteError("out.h5: the disk is full", "out.h5")) ==
          "out.h5: the disk is full" and sbrank.WriteError("x", "out.h5").filename == "out.h5",
          "sbrank.WriteError: an OSError whose str() is its line and .filename its output")

    # docs/python.md's example for a PyTorch user.
    import torch  # noqa: E402
    logits = torch.randn(500, 12, dtype=torch.float64) @ torch.randn(12, 300, dtype=torch.float64)
    r = sbrank.analyse(torch.log_softmax(logits, -1).numpy(), head="softmax", d=12, bias=0)
    check(r["rank"] == 13 and r["verdict"] == "within_bound",
          f"torch.log_softmax(logits, -1).numpy(): rank {r['rank']} = d + 1, within the bound")

sys.exit(finish())
