"""Writing a file so that its final name holds either the old content or the whole new one.

The text goes to a temporary file beside the target, is flushed and fsync'ed, and only then
renamed over the target; any failure (a full disk, EIO, a failed close) removes the temporary
file, leaves the target as it was and raises OSError naming the target.
"""
from __future__ import annotations

import os


def write_text_atomically(path: str, text: str) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise OSError(e.errno, f"{path}: not written ({e.strerror or e})") from None
