#!/usr/bin/env python3
"""Why the window count of analysis/inertia.cpp checks lambda_min(R R^T), not lambda_min(G11).

For G = A^T A of synthetic float32 softmax log-outputs (scaled like synthetic_logprobs:
W ~ N(0, 1/d), bias ~ N(0, 0.25)), runs LAPACK's pivoted Cholesky (dpstrf) and prints, relative
to the Numerical Recipes tol^2 (float32 eps), lambda_k and lambda_(k+1) of G (k = d + 2), the
smallest eigenvalue of the pivoted k x k principal block G11, the smallest eigenvalue of R R^T
for the k x M factor R, and ||S_G||_F of the Schur complement. lambda_min(G11) falls as M grows
(the last signal eigenvectors are spread over all M columns); lambda_min(R R^T) stays at lambda_k.

    /usr/bin/python3 bench/inertia_block_probe.py [d]      (d = 100 by default; ~1 minute)
"""
import numpy as np, scipy.linalg.lapack as lp, sys
rng = np.random.default_rng(1)
d = int(sys.argv[1]) if len(sys.argv) > 1 else 100
for M, T in [(1000, 8000), (2000, 16000), (4000, 24000)]:
    W = rng.standard_normal((M, d)) / np.sqrt(d); b = rng.standard_normal(M) * 0.5
    G = np.zeros((M, M))
    for r in range(0, T, 4000):
        n = min(4000, T - r)
        z = (rng.standard_normal((n, d)) @ W.T + b).astype(np.float32)
        a = (z - np.log(np.exp(z - z.max(1, keepdims=True)).sum(1, keepdims=True)) - z.max(1, keepdims=True)).astype(np.float32)
        a64 = a.astype(np.float64); G += a64.T @ a64
    lam = np.linalg.eigvalsh(G)[::-1]
    eps = np.finfo(np.float32).eps
    tol2 = (0.5 * np.sqrt(M + T + 1) * np.sqrt(lam[0]) * eps) ** 2
    k = d + 2
    c, piv, rank, info = lp.dpstrf(G.copy(), tol=-1, lower=0)
    R = np.triu(c)[:k, :]                       # k x n (permuted columns)
    p = piv[:k] - 1
    g11 = G[np.ix_(p, p)]
    l11 = np.linalg.eigvalsh(g11)[0]
    rr = np.linalg.eigvalsh(R @ R.T)[0]
    S = G[np.ix_(piv[k:] - 1, piv[k:] - 1)] - R[:, k:].T @ R[:, k:]
    print(f"M={M} T={T} d={d}: lam_k/tol2={lam[k-1]/tol2:.3g} lam_k+1/tol2={lam[k]/tol2:.3g} "
          f"min G11/tol2={l11/tol2:.3g} min RR^T/tol2={rr/tol2:.3g} ||S_G||F/tol2={np.linalg.norm(S)/tol2:.3g} "
          f"r_kk^2/lam_k={c[k-1,k-1]**2/lam[k-1]:.3g}")
