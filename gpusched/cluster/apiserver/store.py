"""The SQLite store: one file (WAL mode) holding every object, every event and the virtual clock.

Tables:

- ``objects``: kind, namespace ("" for cluster-scoped kinds), name, uid, resource_version,
  generation, creation_timestamp and the JSON body (the raw dict, unknown fields kept);
  unique (kind, namespace, name).
- ``events``: Kubernetes Event objects, keyed by (namespace, name), each with ``expires``: the
  virtual-clock second it vanishes, set at every write of the event to the clock plus
  ``event_ttl`` (kube-apiserver's ``--event-ttl``, default 1 h, a TTL renewed on each write).
- ``changes``: a watch-friendly change log (rv, kind, namespace, name, type ADDED|MODIFIED|DELETED,
  and the body written at that rv; NULL for deletions).
  Compacted as etcd is: rows older than the newest ``CHANGES_KEPT`` resourceVersions are
  dropped and ``meta.compacted_rv`` records the floor; a watch or list from an older
  resourceVersion is answered 410 "too old resource version" (CLI ``get -w`` and ``serve``).
- ``meta``: counters and the clock: ``rv`` (global resourceVersion), ``clock`` (virtual seconds),
  ``seed``, ``uid_counter``, ``name_counter``, ``event_counter``, ``compacted_rv`` ...
- ``scheduling_queue``: one row per pod the scheduling queue remembers (``scheduler.queue``):
  ``attempt`` (the capacity-log epoch it last judged) and ``record`` (its failure record, JSON);
  a write stores only the rows that changed (``apiserver.queue_rows``).

Schema version: ``PRAGMA user_version``. A new file gets ``SCHEMA_VERSION``; an older file is
migrated in place by the steps in ``MIGRATIONS`` (one transaction); a file from a newer gpusched
is refused with one line (:class:`SchemaVersionError`). Version 0 is the layout before versioning
(events without ``expires``); version 2 added the index on ``events.seq``; version 3 the
``scheduling_queue`` table (before it, the queue was two JSON values in ``meta``); version 4 the
body of each change (before it, a watch could only read an object's latest body).

A command works on an in-memory :class:`~gpusched.cluster.apiserver.view.View` loaded inside one
``BEGIN IMMEDIATE`` transaction and written back (only what changed) before ``COMMIT``; concurrent
CLI calls therefore serialize and a kill -9 mid-command leaves the old or the new state, never a
half. A writer waits for the write lock at most ``lock_wait_s()`` (30 s, or
``$GPUSCHED_LOCK_WAIT`` seconds; SQLite's ``busy_timeout``), then gives up with one line naming
the file and the wait (:class:`StoreLockedError`; 504 Timeout in ``serve``), nothing written.

A full disk (SQLITE_FULL) rolls the transaction back and raises :class:`StoreFullError` (one line
in the CLI, a 500 Status in ``serve``); nothing is half-written and the next write after space
returns succeeds.

Virtual time: ``creationTimestamp`` and event timestamps are RFC 3339 strings of
``EPOCH`` (2026-01-01T00:00:00Z) plus the virtual clock in seconds. A new state file's clock
starts at ``Store(start=...)``: the CLI passes the wall-clock time (or ``--start``), so AGE
columns are real; a library caller that passes nothing starts at ``EPOCH``.

State path: explicit argument (``--state PATH``), else ``$GPUSCHED_STATE``, else
``$XDG_STATE_HOME/gpusched/cluster.db`` (``~/.local/state/gpusched/cluster.db``).

Neighbours: used by ``apiserver.view`` (loading/writing) and ``cluster.cluster`` (the facade).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sqlite3
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

from gpusched.cluster.apiserver import turns
from gpusched.cluster.apiserver.store_errors import (SchemaVersionError, StoreFullError, StoreLockedError,
                                                     busy, lock_wait_s)

log = logging.getLogger(__name__)

EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)
_LAST_SECOND = int((datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc) - EPOCH).total_seconds())
SQLITE_FULL, SQLITE_IOERR = 13, 10
LOW_DISK_BYTES = 1 << 20        # an I/O error with less free than this is a full disk
DEFAULT_SEED = 0
# kube-apiserver --event-ttl (cmd/kube-apiserver/app/options/options.go: EventTTL 1 * time.Hour).
DEFAULT_EVENT_TTL = 3600.0
CHANGES_KEPT = 10_000       # resourceVersions of change log kept (the API server's watch window)
COMPACT_EVERY = 1_000       # compact once the floor may move this far (etcd compacts periodically)

SCHEMA_VERSION = 4
# The newest layout, for a new file (statements run one by one inside a transaction).
# scheduler.queue's lasting state per pod: the epoch of its last attempt, its failure record
_QUEUE_TABLE = "CREATE TABLE scheduling_queue (uid TEXT PRIMARY KEY, attempt INTEGER, record TEXT)"
_SCHEMA = (
    """CREATE TABLE objects (
    kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    uid TEXT NOT NULL, resource_version INTEGER NOT NULL, generation INTEGER NOT NULL,
    creation_timestamp TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (kind, namespace, name))""",
    """CREATE TABLE events (
    namespace TEXT NOT NULL, name TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL,
    expires REAL NOT NULL DEFAULT 0, PRIMARY KEY (namespace, name))""",
    "CREATE INDEX events_expires ON events (expires)",
    "CREATE INDEX events_seq ON events (seq)",
    """CREATE TABLE changes (
    rv INTEGER PRIMARY KEY, kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    type TEXT NOT NULL, body TEXT)""",
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    _QUEUE_TABLE,
)
# MIGRATIONS[v]: the statements that take a version v-1 file to version v.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: ("ALTER TABLE events ADD COLUMN expires REAL NOT NULL DEFAULT 0",
        # events stored before retention live one TTL from the migration
        "UPDATE events SET expires = COALESCE((SELECT CAST(value AS REAL) FROM meta "
        f"WHERE key = 'clock'), 0) + {DEFAULT_EVENT_TTL}",
        "CREATE INDEX events_expires ON events (expires)"),
    # the change feed reads new events by seq at every poll (a scan of every event without it)
    2: ("CREATE INDEX events_seq ON events (seq)",),
    # the scheduling queue's records per pod (they were two JSON values in meta, encoded whole
    # at every write; the view reads those once more and moves them at its next write)
    3: (_QUEUE_TABLE,),
    # each change keeps the body it wrote (a watch replays every version, as kube-apiserver's
    # watch cache does, not only the latest); rows from before it have none
    4: ("ALTER TABLE changes ADD COLUMN body TEXT",),
}


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
    return _rfc3339_whole(min(int(seconds), _LAST_SECOND))


@functools.lru_cache(maxsize=4096)
def _rfc3339_whole(seconds: int) -> str:
    """``rfc3339`` of whole seconds, memoized: a step stamps many objects with one time."""
    return (EPOCH + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


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
    return _seconds_of(timestamp)


@functools.lru_cache(maxsize=4096)
def _seconds_of(timestamp: str) -> float:
    """``seconds_of``, memoized (``strptime`` is slow; pods share creation times)."""
    when = _by_position(timestamp) or \
        datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    return (when - EPOCH).total_seconds()


def _by_position(timestamp: str) -> datetime | None:
    """``YYYY-MM-DDTHH:MM:SSZ`` in ASCII digits (what :func:`rfc3339` writes) read by position,
    as ``strptime`` reads it; None for any other text (``strptime`` then reads it, or says why
    not). ``strptime``'s first call costs about 3 ms of CPU (it imports ``_strptime`` and builds
    its regular expressions), a tenth of what a one-pod ``apply`` spends on its own work."""
    if len(timestamp) != 20 or "".join(timestamp[i] for i in (4, 7, 10, 13, 16, 19)) != "--T::Z":
        return None
    digits = "".join(timestamp[i:i + 2] for i in (0, 2, 5, 8, 11, 14, 17))
    if not (digits.isascii() and digits.isdigit()):
        return None
    try:
        return datetime(int(digits[0:4]), int(digits[4:6]), int(digits[6:8]), int(digits[8:10]),
                        int(digits[10:12]), int(digits[12:14]), tzinfo=timezone.utc)
    except ValueError:             # month 13, February 30th, second 60: strptime's own message
        return None


def dumps(body: dict[str, Any]) -> str:
    """Canonical JSON (sorted keys, no spaces): equal objects give equal text."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def _disk_free(path: Path) -> int:
    try:
        stat = os.statvfs(path.parent)
    except OSError:
        return LOW_DISK_BYTES
    return stat.f_bavail * stat.f_frsize


class Store:
    """One SQLite connection to the state file; transactions via :meth:`immediate`.

    ``shared=True`` lets several threads use the connection; the caller serialises them (the
    API server's change feed does, with a lock).
    """

    changes_kept = CHANGES_KEPT       # retention of the change log (see :meth:`retain`)
    compact_every = COMPACT_EVERY

    def __init__(self, path: str | os.PathLike[str], shared: bool = False,
                 start: float | None = None, event_ttl: float = DEFAULT_EVENT_TTL) -> None:
        self.path = Path(path)
        self.event_ttl = float(event_ttl)
        self._turns: int | None = None      # see take_turns
        if str(self.path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.lock_wait = lock_wait_s()
        self.conn = sqlite3.connect(str(self.path), timeout=self.lock_wait,
                                    isolation_level=None, check_same_thread=not shared)
        try:
            self.conn.execute(f"PRAGMA busy_timeout={int(self.lock_wait * 1000)}")
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self._prepare_schema()
            if start is not None:   # a new state file's clock starts here (an old one keeps its own)
                self.conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('clock', ?)",
                                  (repr(float(start)),))
        except sqlite3.OperationalError as err:
            known = self._known_failure(err)
            self.conn.close()
            if known is None:
                raise
            raise known from None
        except (SchemaVersionError, StoreFullError, StoreLockedError):
            self.conn.close()
            raise

    def schema_version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def _prepare_schema(self) -> None:
        """Create a new file's tables, or migrate an older file in place (one transaction, so
        two processes opening the same old file migrate it once); refuse a newer file."""
        if self.schema_version() == SCHEMA_VERSION:
            return
        with self.immediate() as conn:
            version = self.schema_version()
            if version > SCHEMA_VERSION:
                raise SchemaVersionError(str(self.path), version, SCHEMA_VERSION)
            fresh = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND "
                                 "name='objects'").fetchone() is None
            steps = [_SCHEMA] if fresh else [MIGRATIONS[v] for v in
                                             range(version + 1, SCHEMA_VERSION + 1)]
            if not fresh and version < SCHEMA_VERSION:
                log.info("state file %s: schema %d -> %d", self.path, version, SCHEMA_VERSION)
            for statements in steps:
                for statement in statements:
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def close(self) -> None:
        self.conn.close()
        if self._turns is not None:
            os.close(self._turns)
            self._turns = None

    def take_turns(self) -> None:
        """Write in turns with the other processes that do (``apiserver.turns``: serve's two)."""
        if self._turns is None and str(self.path) != ":memory:":
            self._turns = turns.open_turns(f"{self.path}-writers.lock")

    @contextmanager
    def immediate(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (BEGIN IMMEDIATE): commit on success, roll back on any error.
        A full disk (SQLITE_FULL, at any statement or the commit) is :class:`StoreFullError`;
        the write lock still held by another writer after ``lock_wait`` seconds is
        :class:`StoreLockedError`."""
        with turns.turn(self._turns, self.lock_wait), self._immediate() as conn:
            yield conn

    @contextmanager
    def _immediate(self) -> Iterator[sqlite3.Connection]:
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
            known = self._known_failure(err)
            if known is None:
                raise
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise known from None

    def _known_failure(self, err: sqlite3.OperationalError
                       ) -> "StoreFullError | StoreLockedError | None":
        """The error ``err`` stands for: the lock waited for in vain (SQLITE_BUSY), SQLITE_FULL
        or an I/O error on a disk with no space left (WAL/shm growth fails so); None: a bug."""
        if busy(err):
            return StoreLockedError(str(self.path), self.lock_wait)
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

    def changes_with_bodies_since(self, rv: int) -> list[tuple[int, str, str, str, str, str | None]]:
        """The change log after ``rv`` with each change's JSON body as written (None for a
        deletion, or for a change logged before the log kept bodies), oldest first."""
        return self.conn.execute(
            "SELECT rv, kind, namespace, name, type, body FROM changes WHERE rv > ? ORDER BY rv",
            (rv,)).fetchall()

    def object_version(self, kind: str, ns: str, name: str) -> tuple[int, str] | None:
        """(resourceVersion, JSON body) of one stored object, or None; the body is left unparsed
        so a caller that only wanted the version pays nothing for it."""
        row = self.conn.execute("SELECT resource_version, body FROM objects WHERE kind=? AND "
                                "namespace=? AND name=?", (kind, ns, name)).fetchone()
        return (int(row[0]), row[1]) if row else None

    def events_since(self, seq: int) -> list[tuple[str, str, int, str, float]]:
        """Events stored after ``seq``: (namespace, name, seq, JSON body, expires), oldest first."""
        return self.conn.execute("SELECT namespace, name, seq, body, expires FROM events "
                                 "WHERE seq > ? ORDER BY seq", (seq,)).fetchall()

    def event_keys(self) -> set[tuple[str, str]]:
        """The (namespace, name) of every stored event."""
        return {(str(ns), str(name)) for ns, name in
                self.conn.execute("SELECT namespace, name FROM events")}

    def event_count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM events").fetchone()[0])

    def compacted_rv(self) -> int:
        """The compaction floor: the change log holds nothing at or below it."""
        return int(self.read_meta("compacted_rv").get("compacted_rv", 0))

    def compact_changes(self, rv: int) -> None:
        """Drop the change log up to ``rv`` (watch resumes from older versions get 410) and
        record the floor (inside a transaction: the two statements go together)."""
        self.conn.execute("DELETE FROM changes WHERE rv <= ?", (rv,))
        self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('compacted_rv', ?)",
                          (str(max(rv, self.compacted_rv())),))

    def retain(self, rv: int, clock: float) -> list[tuple[str, str]]:
        """Retention after a write at ``rv`` / virtual ``clock`` (inside the transaction): compact
        the change log to the newest ``CHANGES_KEPT`` versions (every ``COMPACT_EVERY``), and
        delete the events whose TTL ran out; returns their (namespace, name) keys."""
        floor = rv - self.changes_kept
        if floor > 0 and floor - self.compacted_rv() >= self.compact_every:
            self.compact_changes(floor)
        rows = self.conn.execute("SELECT namespace, name FROM events WHERE expires <= ?",
                                 (clock,)).fetchall()
        if rows:
            self.conn.execute("DELETE FROM events WHERE expires <= ?", (clock,))
        return [(str(ns), str(name)) for ns, name in rows]

    # ---- raw writes (inside an immediate transaction) ---------------------------------------

    def read_queue(self) -> list[tuple[str, int | None, str | None]]:
        """The scheduling queue's rows: (pod uid, epoch of its last attempt, JSON record)."""
        return self.conn.execute("SELECT uid, attempt, record FROM scheduling_queue").fetchall()

    def write_queue(self, rows: list[tuple[str, int | None, str | None]], gone: list[str]) -> None:
        """Upsert the queue rows of the pods whose state changed; delete those of ``gone``."""
        self.conn.executemany("INSERT OR REPLACE INTO scheduling_queue (uid, attempt, record) "
                              "VALUES (?, ?, ?)", rows)
        self.conn.executemany("DELETE FROM scheduling_queue WHERE uid = ?", [(u,) for u in gone])

    def delete_meta(self, *keys: str) -> None:
        self.conn.executemany("DELETE FROM meta WHERE key = ?", [(k,) for k in keys])

    def write_meta(self, meta: dict[str, str]) -> None:
        self.conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                              sorted(meta.items()))

    def upsert_object(self, kind: str, ns: str, name: str, body: dict[str, Any], change: str) -> None:
        meta = body.get("metadata", {})
        rv = int(meta.get("resourceVersion", "0"))
        text = dumps(body)
        self.conn.execute(
            "INSERT OR REPLACE INTO objects (kind, namespace, name, uid, resource_version, "
            "generation, creation_timestamp, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (kind, ns, name, meta.get("uid", ""), rv, int(meta.get("generation", 0) or 0),
             meta.get("creationTimestamp", ""), text))
        self.conn.execute("INSERT OR REPLACE INTO changes (rv, kind, namespace, name, type, body) "
                          "VALUES (?, ?, ?, ?, ?, ?)", (rv, kind, ns, name, change, text))

    def delete_object(self, kind: str, ns: str, name: str, rv: int) -> None:
        self.conn.execute("DELETE FROM objects WHERE kind=? AND namespace=? AND name=?",
                          (kind, ns, name))
        self.conn.execute("INSERT OR REPLACE INTO changes (rv, kind, namespace, name, type) "
                          "VALUES (?, ?, ?, ?, 'DELETED')", (rv, kind, ns, name))

    def upsert_event(self, ns: str, name: str, seq: int, body: dict[str, Any],
                     clock: float = 0.0) -> None:
        """Store an Event written at virtual ``clock``: it expires ``event_ttl`` later."""
        self.conn.execute("INSERT OR REPLACE INTO events (namespace, name, seq, body, expires) "
                          "VALUES (?, ?, ?, ?, ?)", (ns, name, seq, dumps(body),
                                                     clock + self.event_ttl))

    def delete_event(self, ns: str, name: str) -> None:
        """Delete an Event (a DELETE request; expiry is ``retain``'s)."""
        self.conn.execute("DELETE FROM events WHERE namespace=? AND name=?", (ns, name))

    def clear(self) -> None:
        """Empty every table (``gpusched reset``); the caller is inside a transaction."""
        for table in ("objects", "events", "changes", "meta", "scheduling_queue"):
            self.conn.execute(f"DELETE FROM {table}")
