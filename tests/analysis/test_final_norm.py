"""The rank bound with a final normalisation (common/head_spec.h, head_rank_bound): matrices built
through each normalisation, with and without a decoder bias, ranked by rank_analysis.

A model with hidden size d: x (T, d) Gaussian, h = norm(x), logits z = h W^T (+ b), log-probs
z - logsumexp(z). The exact SVD in float64 (--method exact --eps float64) resolves the rank to
~1e-15 sigma_max, so the counts below are exact: the matrices' singular values past the rank are
round-off, at least nine decades below the last one inside it (the test checks the gap).

  none, rmsnorm:  log-probs d + 1 + bias, logits d + bias (Theorem 2)
  layernorm:      log-probs d + 1, logits d, with or without the bias (beta gives the offset)

Each case: rank == the bound the analysis states with --final-norm, the verdict within_bound,
and --estimate-d returns d (on the matrix plus noise at 1e-7 x max |A|, which puts the values
past the rank above the resolution the gap is read over). Without --final-norm a LayerNorm model is held against d + 2 and
attains only d + 1 (one below: the reason the fact is needed). A file's attribute 'final_norm'
gives the same bound as the option, and a contradicting option is one line, exit 2.

usage: test_final_norm.py RANK_ANALYSIS
"""
import json
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

RANK = sys.argv[1]
T, M, D = 400, 120, 24


def normalise(x, norm, rng):
    gamma = rng.uniform(0.5, 1.5, x.shape[1])
    if norm == "layernorm":
        beta = rng.normal(0, 0.5, x.shape[1])
        u = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5)
        return u * gamma + beta
    if norm == "rmsnorm":
        return x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-6) * gamma
    return x


def matrix(norm, bias, kind, seed=0):
    rng = np.random.default_rng(seed)
    h = normalise(rng.normal(size=(T, D)), norm, rng)
    z = h @ rng.normal(size=(M, D)).T
    if bias:
        z = z + rng.normal(size=M)
    if kind == "logits":
        return z
    top = z.max(1, keepdims=True)
    return z - top - np.log(np.exp(z - top).sum(1, keepdims=True))


def run(args, expect_rc=0):
    p = subprocess.run([RANK] + args, capture_output=True, text=True)
    assert p.returncode == expect_rc, (args, p.returncode, p.stderr)
    return p


def analyse(path, extra):
    out = run([path, "--json", "--method", "exact", "--eps", "float64"] + extra).stdout
    return json.loads(out.strip().splitlines()[-1])


EXPECTED = {  # (norm, kind) -> bound as a function of (d, bias)
    ("none", "logprobs"): lambda d, b: d + 1 + b,
    ("rmsnorm", "logprobs"): lambda d, b: d + 1 + b,
    ("layernorm", "logprobs"): lambda d, b: d + 1,
    ("none", "logits"): lambda d, b: d + b,
    ("rmsnorm", "logits"): lambda d, b: d + b,
    ("layernorm", "logits"): lambda d, b: d,
}

failures = []
with tempfile.TemporaryDirectory() as tmp:
    for (norm, kind), bound_of in EXPECTED.items():
        for bias in (0, 1):
            a = matrix(norm, bias, kind)
            s = np.linalg.svd(a, compute_uv=False)
            want = bound_of(D, bias)
            # The construction's rank, independently: a gap of >= 1e9 right after `want`.
            assert s[want - 1] / s[want] > 1e9, (norm, kind, bias, s[want - 1], s[want])
            path = os.path.join(tmp, f"{norm}_{kind}_{bias}.npy")
            np.save(path, a)
            facts = ["--head", "softmax", "--d", str(D), "--bias", str(bias), "--input", kind]
            r = analyse(path, facts + ["--final-norm", norm])
            case = f"{norm} {kind} bias={bias}"
            if r["rank"] != want or r["bound"] != want or r["verdict"] != "within_bound":
                failures.append(f"{case}: rank {r['rank']} bound {r['bound']} {r['verdict']}, "
                                f"expected rank = bound = {want}, within_bound")
            if r.get("final_norm") != norm:
                failures.append(f"{case}: result's final_norm {r.get('final_norm')}")
            # --estimate-d reads the gap among the values above the resolution: noise at 1e-7 x
            # max |A| puts the tail there, seven decades below the model's directions.
            noisy = a + 1e-7 * np.abs(a).max() * np.random.default_rng(1).normal(size=a.shape)
            np.save(path, noisy)
            est = run([path, "--estimate-d", "--json", "--method", "exact", "--eps", "float64",
                       "--input", kind, "--bias", str(bias), "--final-norm", norm]).stdout
            est = json.loads(est.strip().splitlines()[-1])
            if est["d"] != D:
                failures.append(f"{case}: --estimate-d gave {est['d']}, expected {D}")
            np.save(path, a)
            if norm == "layernorm" and kind == "logprobs" and bias == 1:
                r0 = analyse(path, facts)  # not told: held against d + 2
                if r0["bound"] != D + 2 or r0["rank"] != D + 1:
                    failures.append(f"{case} without --final-norm: rank {r0['rank']} bound "
                                    f"{r0['bound']}, expected rank {D + 1} against {D + 2}")

    # sigsoftmax through a final LayerNorm still exceeds the bound (Theorem 3's log sigmoid).
    z = matrix("layernorm", 1, "logits")
    lp = z + np.log1p(-1 / (1 + np.exp(z)))  # z + log sigmoid(z)
    lp = lp - np.log(np.exp(lp).sum(1, keepdims=True))
    path = os.path.join(tmp, "sigsoftmax.npy")
    np.save(path, lp)
    r = analyse(path, ["--head", "sigsoftmax", "--d", str(D), "--bias", "1",
                       "--final-norm", "layernorm", "--input", "logprobs"])
    if not (r["bound"] == D + 1 and r["rank"] > D + 1):
        failures.append(f"sigsoftmax after layernorm: rank {r['rank']} bound {r['bound']}, "
                        f"expected rank > {D + 1}")

    # A contract-like HDF5 file with the attribute: the same bound, and a contradiction refused.
    h5 = os.path.join(tmp, "ln.h5")
    with h5py.File(h5, "w") as f:
        f["log_probs"] = matrix("layernorm", 1, "logprobs").astype(np.float64)
        f.attrs["final_norm"] = "layernorm"
    r = analyse(h5, ["--head", "softmax", "--d", str(D), "--bias", "1"])
    if r["bound"] != D + 1 or r["final_norm"] != "layernorm":
        failures.append(f"attribute final_norm: bound {r['bound']}, final_norm {r['final_norm']}")
    p = run([h5, "--head", "softmax", "--d", str(D), "--bias", "1", "--final-norm", "none"],
            expect_rc=2)
    line = p.stderr.strip()
    if "\n" in line or "final_norm" not in line or "--final-norm" not in line:
        failures.append(f"contradicting --final-norm: {line!r}")
    p = run([h5, "--head", "softmax", "--d", str(D), "--bias", "1", "--final-norm", "batchnorm"],
            expect_rc=2)
    if "none, layernorm or rmsnorm" not in p.stderr:
        failures.append(f"--final-norm batchnorm: {p.stderr.strip()!r}")

for f in failures:
    print("FAIL", f)
if not failures:
    print(f"ok: {len(EXPECTED) * 2} normalisation cases, sigsoftmax, the attribute and two refusals")
sys.exit(1 if failures else 0)
