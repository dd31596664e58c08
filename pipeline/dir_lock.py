"""One writer per directory: a lock that a second writer is refused by, naming the holder.

    with holding("results/claims", "reproduce.py --profile claims"):
        ...   # a second `holding` of the same directory raises Busy at once

The lock is flock(2) on DIR/.reproduce.lock, held while the block runs. The kernel releases it
when its holder exits in any way (SIGKILL and a crash included), so a lock left by a killed
process is never stale: the next writer takes it over at once. The file's text names the
current holder (pid, host, what, since when) for the refusal; it stays behind, harmless, and
is ignored by git. Locks of different files do not interact: the trainers lock their run
directory by a file of their own, so a driver's lock never blocks the trainer it starts.
"""
from __future__ import annotations

from pipeline_errors import PipelineError
import contextlib
import fcntl
import os
import socket
import time
from typing import Iterator

NAME = ".reproduce.lock"


class Busy(PipelineError):
    """Another process holds the directory."""


@contextlib.contextmanager
def holding(directory: str, what: str) -> Iterator[None]:
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, NAME)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "another process"
            raise Busy(f"{directory} is in use by {holder}: two writers would mix their files; "
                       "wait for it to finish or stop it (a killed holder's lock is released "
                       "with it)") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, (f"pid {os.getpid()} on {socket.gethostname()} ({what}, since "
                       f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())})\n").encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock
