"""Writers' turns: ``serve``'s two processes take the store's write lock one after the other.

Both wait on ``flock`` of ``<state>-writers.lock`` before SQLite's ``BEGIN IMMEDIATE``: SQLite's
busy handler sleeps up to 100 ms between tries, so a writer waiting on SQLite alone starts up to
100 ms after the lock is free; here the turn is tried every millisecond. The wait is bounded by
the store's ``lock_wait``: past it the writer goes on to SQLite's lock, which refuses with
``StoreLockedError`` after its own wait, so a process stuck holding the turn hangs no other.
Writers that do not take turns (the CLI) wait on SQLite's lock as before.

Neighbours: ``apiserver.store`` (``Store.take_turns``, ``Store.immediate``); ``server.worker``
takes turns for both of serve's processes.
"""

from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager
from typing import Iterator


def open_turns(path: str) -> int:
    """The turns file's descriptor (created 0600 next to the state file)."""
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o600)


@contextmanager
def turn(fd: int | None, wait_s: float) -> Iterator[None]:
    """Hold the turn (``fd`` None: no turns taken), tried every millisecond up to ``wait_s``."""
    if fd is None:
        yield
        return
    held = False
    for _ in range(max(1, int(wait_s * 1000))):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            time.sleep(0.001)
            continue
        held = True
        break
    try:
        yield
    finally:
        if held:
            fcntl.flock(fd, fcntl.LOCK_UN)
