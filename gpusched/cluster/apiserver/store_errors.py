"""The state file's refusals, each one line (``gpusched.errors`` types, a Status in ``serve``):
the write lock waited for in vain, a full disk, a file from a newer gpusched, a watch from a
compacted resourceVersion; and how long a writer waits for the lock.

Neighbours: ``apiserver.store`` raises them; ``cli.get`` (watch), ``server`` (Statuses).
"""

from __future__ import annotations

import os
import sqlite3

from gpusched.errors import GpuschedError

LOCK_WAIT_S = 30.0              # how long a writer waits for another's write lock
SQLITE_BUSY = 5


def lock_wait_s() -> float:
    """How long a writer waits for the write lock: ``$GPUSCHED_LOCK_WAIT`` seconds (a positive
    number), else ``LOCK_WAIT_S``."""
    text = os.environ.get("GPUSCHED_LOCK_WAIT", "")
    if not text:
        return LOCK_WAIT_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= 86400:
        raise GpuschedError(f'GPUSCHED_LOCK_WAIT="{text}": want seconds to wait for the state '
                            "file's write lock, a number above 0 and at most 86400")
    return seconds


def busy(err: sqlite3.OperationalError) -> bool:
    """SQLITE_BUSY: another connection holds the lock this statement needed."""
    code = getattr(err, "sqlite_errorcode", None)
    return (code is not None and code & 0xFF == SQLITE_BUSY) or "database is locked" in str(err)


class StoreLockedError(GpuschedError):
    """Another writer held the state file's write lock for the whole wait: nothing was written.

    A 504 Timeout Status in ``serve``, as kube-apiserver answers a request its storage did not
    complete in time.
    """

    code = 504
    reason = "Timeout"

    def __init__(self, path: str, waited: float) -> None:
        super().__init__(f"state file {path} is locked by another writer: gave up after waiting "
                         f"{waited:g} s for the lock; nothing was written (retry when it is free)")


class StoreFullError(GpuschedError):
    """The state file's disk (or SQLite's page limit) is full: the write was rolled back whole.

    A 500 Status naming the cause, as kube-apiserver passes on etcd's
    ``etcdserver: mvcc: database space exceeded``; writes work again once space is freed.
    """

    code = 500
    reason = "InternalError"

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{detail}: the state file {path} cannot grow; the write was not applied "
                         "(free disk space and retry)")


class SchemaVersionError(GpuschedError):
    """The state file was written by a newer gpusched (a schema this code does not know)."""

    def __init__(self, path: str, version: int, known: int) -> None:
        super().__init__(f"state file {path} has schema version {version}, newer than this "
                         f"gpusched knows ({known}): upgrade gpusched or use another "
                         "--state")


class TooOldResourceVersionError(GpuschedError):
    """A watch from a resourceVersion the change log no longer holds (etcd compacted it):
    kube-apiserver's 410 Expired, ``too old resource version: R (floor)`` (apiserver
    pkg/storage/cacher/watch_cache.go)."""

    code = 410
    reason = "Expired"

    def __init__(self, rv: int, floor: int) -> None:
        super().__init__(f"too old resource version: {rv} ({floor})")
