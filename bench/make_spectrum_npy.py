#!/usr/bin/python3
"""Writes a float32 .npy (T, M) with a prescribed spectrum, the shape of a trained non-softmax
head's dump: A = U diag(s) V^T with U (T x r) and V (M x r) the Q factors of Gaussian matrices,
r = count + tail, and relative to sigma_1 = 1 and the float32 NR tolerance
tol = 0.5 sqrt(M + T + 1) 2^-23:
  `count` values log-spaced from 1 down to 3 tol, then `tail` values evenly over [0.2, 0.9] tol.
The numerical rank is `count` (float32 rounding moves each sigma by about 1e-9, far below the
margins 3 tol and 0.9 tol); the tail makes a single-probe residual bound about sqrt(tail) times
the residual's 2-norm.

  make_spectrum_npy.py OUT.npy --T 30000 --M 6000 --count 1200 --tail 3000 [--seed 0]

Progress on stderr. The file is written to OUT.npy.tmp and renamed when complete."""
import sys
import time

import numpy as np

from npy_rows import shape_parser, write_rows
import os

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipeline"))
from pipeline_errors import refuse  # noqa: E402


def orthonormal_q(x):
    """The Q factor of x (n x r), as numpy.linalg.qr gives it (the same LAPACK dgeqrf and
    dorgqr), formed in place in one Fortran-order copy: at WikiText-2's T and r = 3000 that is
    5.9 GB at the peak beside x, where numpy.linalg.qr held three copies (killed at 24 GiB)."""
    from scipy.linalg import lapack
    f = np.asfortranarray(x)
    del x
    n, r = f.shape
    lwork = int(lapack.dgeqrf_lwork(n, r)[0])  # the blocked algorithm's workspace
    qr, tau, _, info = lapack.dgeqrf(f, lwork=lwork, overwrite_a=1)
    if info != 0:
        refuse(f"make_spectrum_npy.py: dgeqrf failed (info {info})")
    q, _, info = lapack.dorgqr(qr, tau, lwork=lwork, overwrite_a=1)  # r x block, as geqrf's
    if info != 0:
        refuse(f"make_spectrum_npy.py: dorgqr failed (info {info})")
    return q


def main():
    p = shape_parser(__doc__)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--tail", type=int, required=True)
    a = p.parse_args()
    r = a.count + a.tail
    if min(a.T, a.M, a.count, a.block_rows) < 1 or a.tail < 2 or r > min(a.T, a.M):
        refuse("make_spectrum_npy.py: expected --T, --M, --count, --block-rows >= 1, "
                 "--tail >= 2 and count + tail <= min(T, M)")
    tol = 0.5 * np.sqrt(a.M + a.T + 1) * float(np.finfo(np.float32).eps)
    s = np.concatenate([np.geomspace(1.0, 3 * tol, a.count),
                        tol * np.linspace(0.9, 0.2, a.tail)])
    rng = np.random.default_rng(a.seed)
    start = time.perf_counter()
    u = orthonormal_q(rng.standard_normal((a.T, r)))  # (T, r)
    v = orthonormal_q(rng.standard_normal((a.M, r)))  # (M, r)
    vs = (v * s).T  # (r, M)
    print(f"make_spectrum_npy: factors in {time.perf_counter() - start:.0f}s", file=sys.stderr,
          flush=True)
    write_rows(a.out, a.T, a.M, a.block_rows, lambda b, n: u[b:b + n] @ vs, "make_spectrum_npy")
    print(f"make_spectrum_npy: wrote {a.out} in {time.perf_counter() - start:.0f}s "
          f"(rank {a.count}, tol {tol:.3g} sigma_1)", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
