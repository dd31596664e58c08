"""The pipeline's one error base. Every refusal the pipeline raises (a bad profile, a stage that
failed, a busy directory, a malformed result file) is a PipelineError whose message is one line
naming the file, the field and what was expected; `reproduce.py` catches this class once, prints
the line and exits 2. Each subclass keeps the built-in base it had (ValueError, RuntimeError), so
callers that catch those still do. A programming error (a KeyError, a TypeError) is not one: it
keeps its traceback."""


class PipelineError(Exception):
    """Bad input or a failed step, in one line (module docstring)."""
