"""The numerical rank of a log-output matrix: softmax-bottleneck's rank analysis from Python.

    import sbrank
    r = sbrank.analyse(log_probs, head="softmax", d=768, bias=1)   # numpy array, torch tensor
    r = sbrank.analyse("results/cpu/softmax_s141/logprobs.h5")      # or a file (HDF5, .npy)
    r["rank"], r["verdict"], r["certified"]
    sbrank.plot(r)                                                  # the singular-value curve

analyse(matrix, *, head, d, bias, method="auto", input="auto", eps, budget_gb, gram="auto",
        spectrum=True, verdict_only=False, seed=0, threads)
    matrix: a 2-D numpy array (float32 or float64, any strides: C or Fortran order, a slice, a
    numpy.memmap), a CPU torch tensor of float32 or float64 (its memory, through tensor.numpy(),
    no copy), or a path to an HDF5 file (a trainer's dump, a plain /log_probs) or a .npy file.
    Rows are tokens (T), columns the vocabulary (M). head, d, bias: the model's facts (the bound
    is d + 1 + bias for log-probabilities, d + bias for logits); a contract file has them.
    Bad input raises ValueError with one line naming the input, the field and the expected value.

The result is a dict with the fields of `rank_analysis --json`; the ones most read:
    rank            #{sigma_i > tol}, the Numerical Recipes count (certified: see below)
    tol, eps        tol = 0.5 sqrt(M + T + 1) sigma_max eps, eps of the data's dtype
    sigma_max       the largest singular value
    bound           Theorem 2's bound for the head (d + 1 + bias for log-probabilities)
    verdict         within_bound | exceeds_bound | bound_not_binding | ...
    certified       whether rounding cannot move the count across tol (rank_min == rank_max);
                    when False, the rank is only known to lie in rank_min..rank_max
    rank_min, rank_max  the window the certificate proves
    rank_sweep      the rank at tol x 10^j, j = -2..2: how firm the count is
    largest_gap, largest_gap_index  the largest sigma_i / sigma_(i+1) and its i
    method, gram, precision, solver  how it was computed; seconds, blas_core, blas_library
    T, M, d, bias, head  the matrix's shape and the model's facts
    input           "logprobs" | "logits": what the rows hold
    singular_values  a float64 numpy array, descending (None for spectrum=False)

blas() says which BLAS (and which of its kernel families) this process runs.
"""
from __future__ import annotations

from ._plot import plot
from ._sbrank import analyse as _analyse
from ._sbrank import blas

__all__ = ["analyse", "blas", "plot"]


def _torch_array(tensor):
    """A CPU float32 / float64 tensor as a numpy array over the same memory; anything else one
    ValueError line saying what to do."""
    device = getattr(tensor.device, "type", str(tensor.device))
    if device != "cpu":
        raise ValueError(f"matrix: a torch tensor on '{tensor.device}': expected a CPU tensor; "
                         "move it with tensor.cpu() (or analyse the rows block by block on the "
                         "host)")
    name = str(tensor.dtype).replace("torch.", "")
    if name not in ("float32", "float64"):
        raise ValueError(f"matrix: torch dtype {name}: expected float32 or float64 (convert with "
                         "tensor.float(), which copies the matrix)")
    if tensor.dim() != 2:
        raise ValueError(f"matrix: shape: expected 2-D (T, M), got {tensor.dim()}-D")
    return tensor.detach().numpy()  # shares the tensor's memory, strides included


def analyse(matrix, **options):
    type_module = type(matrix).__module__ or ""
    if type_module.startswith("torch") and hasattr(matrix, "detach"):
        matrix = _torch_array(matrix)
    return _analyse(matrix, **options)


analyse.__doc__ = _analyse.__doc__
