"""A running stage's time kept on disk while it runs.

reproduce.py records a stage's seconds in the run's stages.json when it finishes, and as
"<stage>.partial" when Ctrl-C or SIGTERM stops it. A driver killed outright (SIGKILL, a lost node,
the end of a session's time) runs no handler: without a heartbeat the time spent until then was
lost, and the summary's wall-time table under-counted a resumed stage (a 20-minute training
recorded as its last 12 s). Heartbeat adds the seconds since its last beat to the partial record
every `every` seconds, so at most that much is lost.
"""
from __future__ import annotations

import threading
import time
from typing import Callable


class Heartbeat:
    """With `with Heartbeat(record):` around a stage, record(seconds) is called from a thread
    every `every` seconds with the seconds since the previous call; unrecorded() gives (and
    counts as recorded) what has passed since the last one, for the caller's final record."""

    def __init__(self, record: Callable[[float], None], every: float = 60.0):
        self._record, self._every = record, every
        self._last = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)

    def __enter__(self) -> "Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        while not self._stop.wait(self._every):
            self._record(self.unrecorded())

    def unrecorded(self) -> float:
        with self._lock:
            now = time.monotonic()
            seconds, self._last = now - self._last, now
            return seconds
