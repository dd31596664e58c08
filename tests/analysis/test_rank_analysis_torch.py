#!/usr/bin/python3
"""rank_analysis_torch (analysis/torch/): the Gram path on a LibTorch device against the LAPACK
path of rank_analysis, on synthetic files (softmax: rank d + 2 by Theorem 2; sigsoftmax: above).
The default CPU build has no rank_analysis_torch; ctest runs this where it is built (a CUDA
LibTorch, or -DSB_ANALYSIS_TORCH=ON, where --device cpu runs the same code on the CPU).

    test_rank_analysis_torch.py RANK_ANALYSIS RANK_ANALYSIS_TORCH SYNTHETIC_LOGPROBS DEVICE

- ranks, verdicts and certificates equal; sigma_max within 1e-12 relative (both sum B^T B in
  float64 over the same blocks: only the summation order differs); every singular value within
  1e-7 sigma_max of LAPACK's (the Gram path resolves sigma only to sqrt(eps64) sigma_max =
  1.5e-8 sigma_max, and the two eigensolvers differ below that);
- --rank-only through the device's G: the same rank, certified;
- the result records the device's solver;
- a NaN in the file: exit 2, one line naming the file, as rank_analysis;
- an unusable device: exit 2 with one line.
"""

import json
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

from checks import check, finish, message_lines


def run(*cmd):
    return subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def main() -> int:
    lapack, torch_bin, synth, device = sys.argv[1:5]
    with tempfile.TemporaryDirectory() as tmp:
        for head in ("softmax", "sigsoftmax"):
            f = os.path.join(tmp, f"{head}.h5")
            r = run(synth, "--head", head, "--T", "3000", "--M", "600", "--d", "40", "--seed", "3",
                    "--threads", "2", "--out", f)
            check(r.returncode == 0, f"{head}: synthetic file written ({r.stderr.strip()[-200:]})")
            ref_out, dev_out = os.path.join(tmp, f"{head}_ref.h5"), os.path.join(tmp, f"{head}_dev.h5")
            ref = run(lapack, "--method", "gram", "--json", "--quiet", "--threads", "2", "--out",
                      ref_out, f)
            dev = run(torch_bin, "--device", device, "--method", "gram", "--json", "--quiet",
                      "--threads", "2", "--out", dev_out, f)
            check(ref.returncode == 0 and dev.returncode == 0,
                  f"{head}: both exit 0 (got {ref.returncode}, {dev.returncode}: "
                  f"{dev.stderr.strip()[-300:]})")
            if ref.returncode or dev.returncode:
                continue
            a, b = json.loads(ref.stdout), json.loads(dev.stdout)
            check(a["rank"] == b["rank"] and a["verdict"] == b["verdict"],
                  f"{head}: rank {b['rank']} ({b['verdict']}) = LAPACK's {a['rank']} ({a['verdict']})")
            if head == "softmax":
                check(b["rank"] == 42, f"softmax: rank d + 2 = 42 (got {b['rank']})")
            else:
                check(b["rank"] > 42, f"sigsoftmax: rank above d + 2 = 42 (got {b['rank']})")
            check(abs(a["sigma_max"] - b["sigma_max"]) <= 1e-12 * a["sigma_max"],
                  f"{head}: sigma_max {b['sigma_max']!r} vs {a['sigma_max']!r} within 1e-12 rel")
            check(device in b["solver"] and "eigvalsh" in b["solver"],
                  f"{head}: the solver names the device ({b['solver']})")
            with h5py.File(ref_out) as x, h5py.File(dev_out) as y:
                s_ref, s_dev = x["singular_values"][:], y["singular_values"][:]
            err = np.max(np.abs(s_ref - s_dev)) / s_ref[0]
            check(s_ref.shape == s_dev.shape and err <= 1e-7,
                  f"{head}: every singular value within 1e-7 sigma_max of LAPACK's (max {err:.2e})")
            only = run(torch_bin, "--device", device, "--method", "gram", "--rank-only", "--json",
                       "--quiet", "--threads", "2", f)
            c = json.loads(only.stdout) if only.returncode == 0 else {}
            check(c.get("rank") == a["rank"] and c.get("certified") is not False,
                  f"{head}: --rank-only on the device's G: rank {c.get('rank')}, "
                  f"certified {c.get('certified')}")

        bad = os.path.join(tmp, "nan.h5")
        with h5py.File(os.path.join(tmp, "softmax.h5")) as src, h5py.File(bad, "w") as dst:
            lp = src["log_probs"][:]
            lp[5, 7] = np.nan
            dst["log_probs"] = lp
        r = run(torch_bin, "--device", device, "--head", "softmax", "--d", "40", "--bias", "1",
                "--quiet", bad)
        lines = message_lines(r.stderr)
        check(r.returncode == 2 and len(lines) == 1 and bad in lines[0] and "NaN" in lines[0],
              f"NaN: exit 2, one line naming the file (got {r.returncode}: {r.stderr.strip()[:200]})")
        r = run(torch_bin, "--device", "cuda:99", "--quiet", bad)
        check(r.returncode == 2 and len(message_lines(r.stderr)) == 1,
              f"cuda:99 is refused: exit 2, one line (got {r.returncode}: {r.stderr.strip()[:200]})")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
