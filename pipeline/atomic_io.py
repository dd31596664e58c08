"""Writing a file so that its final name holds either the old content or the whole new one.

Every file the pipeline writes goes through `replacing`: the content goes to a temporary file
beside the target, is flushed and fsync'ed and closed, and only then renamed over the target.
Any failure (a full disk, EIO, a failed close, an exception of the writer) removes the
temporary file, leaves the target as it was and raises OSError naming the target: a file under
its final name was always completely written and closed.

    with replacing("out/summary.md") as f:      # text; replacing(path, binary=True) for bytes
        f.write(text)
    write_json_atomically("run/stages.json", {...})
    save_figure_atomically(fig, "out/plot.png", dpi=120)
"""
from __future__ import annotations

import contextlib
import json
import os
from typing import IO, Iterator


@contextlib.contextmanager
def replacing(path: str, binary: bool = False) -> Iterator[IO]:
    """An open file whose content replaces `path` when the block ends without an exception."""
    directory, name = os.path.split(os.path.abspath(path))
    tmp = os.path.join(directory, f".{name}.tmp{os.getpid()}")
    try:
        f = open(tmp, "wb" if binary else "w")
        try:
            yield f
            f.flush()
            os.fsync(f.fileno())
        finally:
            f.close()  # a failed close raises here, before the rename
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise OSError(e.errno, f"{path}: not written ({e.strerror or e})") from None
        raise


def write_text_atomically(path: str, text: str) -> None:
    with replacing(path) as f:
        f.write(text)


def write_json_atomically(path: str, data: object) -> None:
    """Indented JSON with a final newline."""
    with replacing(path) as f:
        json.dump(data, f, indent=2)
        f.write("\n")


def save_figure_atomically(fig, path: str, **kwargs) -> None:
    """A matplotlib figure, in the format its extension names (.png, .svg, .pdf)."""
    with replacing(path, binary=True) as f:
        fig.savefig(f, format=os.path.splitext(path)[1][1:], **kwargs)


def save_figure_pair(fig, prefix: str, dpi: int = 120) -> None:
    """The report figures: PREFIX.png and PREFIX.svg, each written atomically; closes fig."""
    import matplotlib.pyplot as plt
    for ext in (".png", ".svg"):
        save_figure_atomically(fig, prefix + ext, dpi=dpi)
    plt.close(fig)
