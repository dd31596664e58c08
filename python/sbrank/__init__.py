"""The numerical rank of a log-output matrix: softmax-bottleneck's rank analysis from Python.

    import sbrank
    r = sbrank.analyse(log_probs, head="softmax", d=768, bias=1)   # numpy array, torch tensor
    r = sbrank.analyse("logprobs.h5")      # or a file: HDF5 (synthetic_logprobs --out), .npy
    r["rank"], r["verdict"], r["certified"]
    sbrank.plot(r)                                                  # the singular-value curve

analyse(matrix, *, head, d, bias, method="auto", input="auto", eps, budget_gb, gram="auto",
        spectrum=True, verdict_only=False, seed=0, threads)
    matrix: a 2-D numpy array (float32 or float64, any strides: C or Fortran order, a slice, a
    numpy.memmap), a CPU torch tensor of float32 or float64 (its memory, through tensor.numpy(),
    no copy), or a path to an HDF5 file (a trainer's dump, a plain /log_probs) or a .npy file.
    Rows are tokens (T), columns the vocabulary (M). head, d, bias: the model's facts (the bound
    is d + 1 + bias for log-probabilities, d + bias for logits); a contract file has them.
    Bad input raises one of the errors below, with one line naming the input, the field and the
    expected value.
    A float16 / bfloat16 tensor, or one on a GPU, is read as a stream: blocks of rows converted
    to float32 on the host one at a time, never the whole matrix at once; the tolerance's eps is
    then the stored precision's (bfloat16: 2^-7, float16: 2^-10), unless eps is given.

analyse(blocks, *, M, T=None, ...): a model's outputs analysed as they are computed, never
    stored. blocks: a callable returning an iterable of row blocks (numpy arrays or tensors,
    rows x M, any block sizes), called again for each pass the method needs (the gram path: one
    pass; the sketch: the passes it reports; without T one more, first, to count the rows).
    Memory O(M^2) for the gram path, O(M k) for the sketch, never O(T M). A block whose width or
    dtype changes, a pass with another number of rows, NaN or inf: one sbrank.InputError naming
    the pass and the block. An exception raised by the callable or its iterator itself (a
    model's CUDA out-of-memory, Ctrl-C) reaches the caller as itself, the pass and block added
    as a note. result["passes"] counts the calls.

    def blocks():                         # any model that returns logits
        for batch in loader:
            yield torch.log_softmax(model(batch), -1).reshape(-1, M)
    r = sbrank.analyse(blocks, M=M, head="softmax", d=model.d, bias=1, method="gram")

progress: a callable receiving each progress line, or True for lines on stderr.

Errors: the one line rank_analysis prints after "rank_analysis: " (str(e)), raised as the class
of its kind:
    InputError      the input's content: a shape, a dtype, NaN or inf, a fact that contradicts
                    the file (a ValueError). .file: the path, "<array>" or the stream's pass and
                    block ("" when unknown); .field: the part at fault, e.g. "dtype", "attribute
                    'd'" ("" when the line names none); .expected: what was expected ("" when the
                    line says it in its own words)
    FormatError     an InputError: the file is not of the format at all (missing, a directory,
                    not HDF5 or .npy, wrong magic, truncated, a read that failed)
    OptionError     an argument outside what analyse() takes, e.g. threads=0, input="x", d=0 (a
                    ValueError). .option: its name ("threads"; the command line's "--d" for the
                    checks the two share)
    WriteError      an OSError: writing an output failed. .filename: that output
    MemoryError     out of memory while analysing the matrix
    `except ValueError` still catches every refusal but the last two.

The result is a dict with the fields of `rank_analysis --json`; the ones most read:
    rank            #{sigma_i > tol}, the Numerical Recipes count (certified: see below)
    tol, eps        tol = 0.5 sqrt(M + T + 1) sigma_max eps, eps of the data's dtype
    sigma_max       the largest singular value
    bound           Theorem 2's bound for the head (d + 1 + bias for log-probabilities)
    verdict         within_bound | exceeds_bound | bound_not_binding | unresolved_at_precision
                    (a count below the bound that the data's precision cannot decide: float16 or
                    bfloat16 data, or tol cutting a spectrum that goes on; eps_to_resolve says
                    which eps would)
    certified       whether rounding cannot move the count across tol (rank_min == rank_max);
                    when False, the rank is only known to lie in rank_min..rank_max
    rank_min, rank_max  the window the certificate proves
    rank_sweep      the rank at tol x 10^j, j = -2..2: how firm the count is
    largest_gap, largest_gap_index  the largest sigma_i / sigma_(i+1) and its i
    method, gram, precision, solver  how it was computed; seconds, blas_core, blas_library;
    peak_rss_mib, memory_estimate_mib  the peak resident memory and the plan's estimate
    T, M, d, bias, head  the matrix's shape and the model's facts
    input           "logprobs" | "logits": what the rows hold
    singular_values  a float64 numpy array, descending (None for spectrum=False)

blas() says which BLAS (and which of its kernel families) this process runs.
"""
from __future__ import annotations

from ._plot import plot
from ._sbrank import analyse as _analyse
from ._sbrank import blas

__all__ = ["FormatError", "InputError", "OptionError", "WriteError", "analyse", "blas", "plot"]


# The errors analyse() raises, one class per kind of common/errors.h (the compiled module raises
# them through sb::error_report); str(e) is the one line.
class InputError(ValueError):
    """The input's content is not what the analysis takes: .file, .field, .expected."""

    def __init__(self, message, file="", field="", expected=""):
        super().__init__(message)
        self.file, self.field, self.expected = file, field, expected


class FormatError(InputError):
    """The input is not of its format at all: missing, not HDF5 or .npy, truncated."""


class OptionError(ValueError):
    """An argument outside what analyse() takes: .option names it, .expected says what it takes
    ("" where the message alone says it)."""

    def __init__(self, message, option="", expected=""):
        super().__init__(message)
        self.option = option
        self.expected = expected


class WriteError(OSError):
    """Writing an output failed: .filename names it."""

    def __init__(self, message, filename=""):
        super().__init__(message)
        self.filename = filename  # OSError's own attribute, which its str() would print

    def __str__(self):
        return self.args[0]

    def __reduce__(self):
        return type(self), (self.args[0], self.filename)


BLOCK_ROWS = 4096  # rows converted at a time when a tensor is read as a stream


def _is_tensor(x) -> bool:
    return (type(x).__module__ or "").startswith("torch") and hasattr(x, "detach")


def _direct(tensor) -> bool:
    """A CPU float32 / float64 tensor: read in place through tensor.numpy()."""
    return getattr(tensor.device, "type", "") == "cpu" and \
        str(tensor.dtype) in ("torch.float32", "torch.float64")


def _block_array(block):
    """A stream's block as a numpy array: a CPU float32 / float64 tensor shares its memory; any
    other tensor (half precision, a GPU's) is converted to float32 on the host, this block only."""
    if not _is_tensor(block):
        return block
    block = block.detach()
    if _direct(block):
        return block.numpy()
    if getattr(block.device, "type", "cpu") == "meta":
        raise ValueError(f"a torch tensor on '{block.device}' holds no data")
    wide = str(block.dtype) in ("torch.float32", "torch.float64")
    return (block if wide else block.float()).cpu().numpy()


def _tensor_stream(tensor):
    """A tensor read block by block (half precision, a GPU's): its rows converted one block at a
    time, never the whole matrix."""
    def blocks():
        for i in range(0, tensor.shape[0], BLOCK_ROWS):
            yield tensor[i:i + BLOCK_ROWS]
    return blocks


def analyse(matrix, **options):
    if options.get("progress") is True:
        import sys
        options["progress"] = lambda line: print(line, file=sys.stderr, flush=True)
    if _is_tensor(matrix):
        if matrix.dim() != 2:
            raise InputError(f"matrix: shape: expected 2-D (T, M), got {matrix.dim()}-D",
                             "matrix", "shape", "2-D (T, M)")
        if getattr(matrix.device, "type", "") == "meta":
            raise InputError(f"matrix: a torch tensor on '{matrix.device}' holds no data", "matrix")
        if _direct(matrix):
            matrix = matrix.detach().numpy()  # shares the tensor's memory, strides included
        else:
            options.setdefault("M", matrix.shape[1])
            options.setdefault("T", matrix.shape[0])
            if str(matrix.dtype) in ("torch.float16", "torch.bfloat16"):
                import torch  # the tolerance's eps is the stored precision's, not float32's
                options.setdefault("eps", repr(torch.finfo(matrix.dtype).eps))
            matrix = _tensor_stream(matrix.detach())
    if callable(matrix) and not isinstance(matrix, str) and not hasattr(matrix, "__fspath__"):
        return _analyse_stream(matrix, options)
    return _analyse(matrix, **options)


def _analyse_stream(start, options):
    """A stream's analysis where an exception raised by the caller's own code (its callable or
    its iterator: a model's CUDA out-of-memory, a KeyboardInterrupt) reaches the caller as
    itself, with the pass and block sbrank was reading added as a note (PEP 678), instead of
    an sbrank.FormatError that would hide its type and traceback."""
    raised = []

    def blocks():
        try:
            it = iter(start())
        except BaseException as e:  # noqa: B036 the caller's own error, re-raised below
            raised.append(e)
            raise
        while True:
            try:
                block = next(it)
            except StopIteration:
                return
            except BaseException as e:  # noqa: B036
                raised.append(e)
                raise
            yield _block_array(block)

    try:
        return _analyse(blocks, **options)
    except BaseException as e:
        if not raised or raised[-1] is e:
            raise
        own = raised[-1]
        own.add_note(f"sbrank.analyse: {e}")
        raise own.with_traceback(own.__traceback__) from None


analyse.__doc__ = _analyse.__doc__
