"""sbrank.plot: the singular-value curve of one analyse() result, as the pipeline's
singular_values.png draws it (sigma_i / sigma_max on a log axis, the bound as a dashed vertical
line, the Numerical Recipes tolerance as a dotted horizontal one)."""
from __future__ import annotations


def plot(result: dict, ax=None, label: str | None = None):
    """Draws result["singular_values"] on `ax` (a new figure's axes when None) and returns the axes.
    Raises ValueError for a result without singular values (spectrum=False)."""
    import numpy as np
    sv = result.get("singular_values")
    if sv is None or len(sv) == 0:
        raise ValueError("result: singular_values: expected the spectrum (analyse(..., "
                         "spectrum=True)), got none")
    if ax is None:
        import matplotlib.pyplot as plt
        _, ax = plt.subplots(figsize=(7, 4.5))
    sv = np.asarray(sv, dtype=np.float64)
    y = sv / result["sigma_max"]
    y = np.where(y > 0, y, np.nan)  # exact zeros cannot go on a log axis
    rank = result["rank"] if result.get("certified", True) is not False else \
        f"{result['rank_min']}..{result['rank_max']}"
    ax.plot(np.arange(1, sv.size + 1), y, lw=1.5,
            label=label or f"{result.get('head') or 'matrix'} (rank {rank})")
    if result.get("bound", 0) > 0:
        ax.axvline(result["bound"], color="black", ls="--", lw=1,
                   label=f"bound = {result['bound']}")
    tol = result["tol"] / result["sigma_max"]
    ax.axhline(tol, color="gray", ls=":", lw=1, label="NR tol")
    ax.set_yscale("log")
    finite = y[np.isfinite(y)]
    if finite.size:
        ax.set_ylim(bottom=max(finite.min(), tol * 1e-3), top=2)
    ax.set_xlabel("index i")
    ax.set_ylabel(r"$\sigma_i / \sigma_{\max}$")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize="small")
    return ax
