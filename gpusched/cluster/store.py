"""The SQLite store: one file (WAL mode) holding every object, every event and the virtual clock.

Tables:

- ``objects``: kind, namespace ("" for cluster-scoped kinds), name, uid, resource_version,
  generation, creation_timestamp and the JSON body (the raw dict, unknown fields kept);
  unique (kind, namespace, name).
- ``events``: Kubernetes Event objects, keyed by (namespace, name).
- ``changes``: a watch-friendly change log (rv, kind, namespace, name, type ADDED|MODIFIED|DELETED).
- ``meta``: counters and the clock: ``rv`` (global resourceVersion), ``clock`` (virtual seconds),
  ``seed``, ``uid_counter``, ``name_counter``, ``event_counter``, ``sched_rounds`` ...

A command works on an in-memory :class:`~gpusched.cluster.view.View` loaded inside one
``BEGIN IMMEDIATE`` transaction and written back (only what changed) before ``COMMIT``; concurrent
CLI calls therefore serialize (``busy_timeout`` 30 s) and a kill -9 mid-command leaves the old or
the new state, never a half.

A full disk (SQLITE_FULL) rolls the transaction back and raises :class:`StoreFullError` (one line
in the CLI, a 500 Status in ``serve``); nothing is half-written and the next write after space
returns succeeds.

Virtual time: ``creationTimestamp`` and event timestamps are RFC 3339 strings of
``EPOCH`` (2026-01-01T00:00:00Z) plus the virtual clock in seconds. A new state file's clock
starts at ``Store(start=...)``: the CLI passes the wall-clock time (or ``--start``), so AGE
columns are real; a library caller that passes nothing starts at ``EPOCH``.

State path: explicit argument (``--state PATH``), else ``$GPUSCHED_STATE``, else
``$XDG_STATE_HOME/gpusched/cluster.db`` (``~/.local/state/gpusched/cluster.db``).

Neighbours: used by ``cluster.view`` (loading/writing) and ``cluster.cluster`` (the facade).
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

from gpusched.errors import GpuschedError

log = logging.getLogger(__name__)

EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)
_LAST_SECOND = int((datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc) - EPOCH).total_seconds())
BUSY_TIMEOUT_MS = 30_000
SQLITE_FULL, SQLITE_IOERR = 13, 10
LOW_DISK_BYTES = 1 << 20        # an I/O error with less free than this is a full disk
DEFAULT_SEED = 0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    uid TEXT NOT NULL, resource_version INTEGER NOT NULL, generation INTEGER NOT NULL,
    creation_timestamp TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (kind, namespace, name)
);
CREATE TABLE IF NOT EXISTS events (
    namespace TEXT NOT NULL, name TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (namespace, name)
);
CREATE TABLE IF NOT EXISTS changes (
    rv INTEGER PRIMARY KEY, kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    type TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def default_state_path(explicit: str | None = None) -> Path:
    """``--state PATH``, else ``$GPUSCHED_STATE``, else the XDG state directory."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("GPUSCHED_STATE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "gpusched" / "cluster.db"


def rfc3339(seconds: float) -> str:
    """Virtual seconds -> ``2026-01-01T00:00:05Z`` (whole seconds, as Kubernetes prints them).

    Times past year 9999 (a grace period or deadline of 2^63-1 seconds, valid int64 values)
    print as the last second RFC 3339 can write, so such an object never breaks a later command.

    >>> rfc3339(0), rfc3339(3661.7), rfc3339(2**63 - 1)
    ('2026-01-01T00:00:00Z', '2026-01-01T01:01:01Z', '9999-12-31T23:59:59Z')
    """
    return (EPOCH + timedelta(seconds=min(int(seconds), _LAST_SECOND))).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_start(text: str) -> float:
    """``--start`` / ``$GPUSCHED_START``: an RFC 3339 time -> seconds on the cluster clock.

    >>> parse_start("2026-01-01T00:00:00Z"), parse_start("2026-01-02T00:00:00+00:00")
    (0.0, 86400.0)
    """
    try:
        when = datetime.fromisoformat(str(text).strip())
    except ValueError:
        raise ValueError(f'invalid start time "{text}": want RFC 3339, e.g. '
                         '2026-01-01T00:00:00Z') from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return (when - EPOCH).total_seconds()


def seconds_of(timestamp: str) -> float:
    """``2026-01-01T00:00:05Z`` -> 5.0: an RFC 3339 timestamp on the cluster clock (inverse of
    :func:`rfc3339`, whole seconds).

    >>> seconds_of(rfc3339(3661.7))
    3661.0
    """
    when = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    return (when - EPOCH).total_seconds()


def dumps(body: dict[str, Any]) -> str:
    """Canonical JSON (sorted keys, no spaces): equal objects give equal text."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def _disk_free(path: Path) -> int:
    try:
        stat = os.statvfs(path.parent)
    except OSError:
        return LOW_DISK_BYTES
    return stat.f_bavail * stat.f_frsize


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


class Store:
    """One SQLite connection to the state file; transactions via :meth:`immediate`.

    ``shared=True`` lets several threads use the connection; the caller serialises them (the
    API server's change feed does, with a lock).
    """

    def __init__(self, path: str | os.PathLike[str], shared: bool = False,
                 start: float | None = None) -> None:
        self.path = Path(path)
        if str(self.path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_MS / 1000,
                                    isolation_level=None, check_same_thread=not shared)
        try:
            self.conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.executescript(_SCHEMA)   # idempotent; runs outside any transaction
            if start is not None:   # a new state file's clock starts here (an old one keeps its own)
                self.conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('clock', ?)",
                                  (repr(float(start)),))
        except sqlite3.OperationalError as err:
            full = self._full(err)
            self.conn.close()
            if full is None:
                raise
            raise full from None

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def immediate(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (BEGIN IMMEDIATE): commit on success, roll back on any error.
        A full disk (SQLITE_FULL, at any statement or the commit) is :class:`StoreFullError`."""
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                if self.conn.in_transaction:      # SQLite may have rolled back already (SQLITE_FULL)
                    self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")
        except sqlite3.OperationalError as err:
            full = self._full(err)
            if full is None:
                raise
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise full from None

    def _full(self, err: sqlite3.OperationalError) -> "StoreFullError | None":
        """SQLITE_FULL, or an I/O error on a disk with no space left (WAL/shm growth fails so)."""
        code = getattr(err, "sqlite_errorcode", None)
        if code == SQLITE_FULL or "database or disk is full" in str(err):
            return StoreFullError(str(self.path), "database or disk is full")
        if code is not None and code & 0xFF == SQLITE_IOERR and _disk_free(self.path) < LOW_DISK_BYTES:
            return StoreFullError(str(self.path), f"{err} (no space left on device)")
        return None

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A consistent read transaction (BEGIN DEFERRED)."""
        self.conn.execute("BEGIN")
        try:
            yield self.conn
        finally:
            self.conn.execute("ROLLBACK")

    def data_version(self) -> int:
        """Changes when *another* connection committed (SQLite's PRAGMA data_version)."""
        return int(self.conn.execute("PRAGMA data_version").fetchone()[0])

    # ---- raw reads (inside a transaction) ---------------------------------------------------

    def read_meta(self, *keys: str) -> dict[str, str]:
        """The meta table, or only ``keys`` (pollers skip the large ``stats`` value)."""
        if not keys:
            return dict(self.conn.execute("SELECT key, value FROM meta").fetchall())
        marks = ", ".join("?" * len(keys))
        return dict(self.conn.execute(f"SELECT key, value FROM meta WHERE key IN ({marks})",
                                      keys).fetchall())

    def read_objects(self) -> Iterator[tuple[str, str, str, dict[str, Any]]]:
        for kind, ns, name, body in self.conn.execute(
                "SELECT kind, namespace, name, body FROM objects ORDER BY kind, namespace, name"):
            yield kind, ns, name, json.loads(body)

    def read_events(self) -> Iterator[tuple[str, str, int, dict[str, Any]]]:
        for ns, name, seq, body in self.conn.execute(
                "SELECT namespace, name, seq, body FROM events ORDER BY seq"):
            yield ns, name, seq, json.loads(body)

    def changes_since(self, rv: int) -> list[tuple[int, str, str, str, str]]:
        """The change log after ``rv``: (rv, kind, namespace, name, type), oldest first."""
        return self.conn.execute(
            "SELECT rv, kind, namespace, name, type FROM changes WHERE rv > ? ORDER BY rv",
            (rv,)).fetchall()

    def object_version(self, kind: str, ns: str, name: str) -> tuple[int, str] | None:
        """(resourceVersion, JSON body) of one stored object, or None; the body is left unparsed
        so a caller that only wanted the version pays nothing for it."""
        row = self.conn.execute("SELECT resource_version, body FROM objects WHERE kind=? AND "
                                "namespace=? AND name=?", (kind, ns, name)).fetchone()
        return (int(row[0]), row[1]) if row else None

    def events_since(self, seq: int) -> list[tuple[str, str, int, str]]:
        """Events stored after ``seq``: (namespace, name, seq, JSON body), oldest first."""
        return self.conn.execute("SELECT namespace, name, seq, body FROM events WHERE seq > ? "
                                 "ORDER BY seq", (seq,)).fetchall()

    def compact_changes(self, rv: int) -> None:
        """Drop the change log up to ``rv`` (watch resumes from older versions get 410)."""
        self.conn.execute("DELETE FROM changes WHERE rv <= ?", (rv,))

    # ---- raw writes (inside an immediate transaction) ---------------------------------------

    def write_meta(self, meta: dict[str, str]) -> None:
        self.conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                              sorted(meta.items()))

    def upsert_object(self, kind: str, ns: str, name: str, body: dict[str, Any], change: str) -> None:
        meta = body.get("metadata", {})
        rv = int(meta.get("resourceVersion", "0"))
        self.conn.execute(
            "INSERT OR REPLACE INTO objects (kind, namespace, name, uid, resource_version, "
            "generation, creation_timestamp, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (kind, ns, name, meta.get("uid", ""), rv, int(meta.get("generation", 0) or 0),
             meta.get("creationTimestamp", ""), dumps(body)))
        self.conn.execute("INSERT OR REPLACE INTO changes (rv, kind, namespace, name, type) "
                          "VALUES (?, ?, ?, ?, ?)", (rv, kind, ns, name, change))

    def delete_object(self, kind: str, ns: str, name: str, rv: int) -> None:
        self.conn.execute("DELETE FROM objects WHERE kind=? AND namespace=? AND name=?",
                          (kind, ns, name))
        self.conn.execute("INSERT OR REPLACE INTO changes (rv, kind, namespace, name, type) "
                          "VALUES (?, ?, ?, ?, 'DELETED')", (rv, kind, ns, name))

    def upsert_event(self, ns: str, name: str, seq: int, body: dict[str, Any]) -> None:
        self.conn.execute("INSERT OR REPLACE INTO events (namespace, name, seq, body) "
                          "VALUES (?, ?, ?, ?)", (ns, name, seq, dumps(body)))

    def clear(self) -> None:
        """Empty every table (``gpusched reset``); the caller is inside a transaction."""
        for table in ("objects", "events", "changes", "meta"):
            self.conn.execute(f"DELETE FROM {table}")
