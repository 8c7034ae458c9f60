"""The change feed behind watch: the store's change log turned into ordered watch events.

One :class:`ChangeFeed` per server polls the state file on its own SQLite connection (so writes by
other processes, e.g. ``gpusched apply`` on the same file, show up too) and keeps the last
``capacity`` changes in memory. Two independent streams:

- objects: the ``changes`` table (rv, kind, namespace, name, type, and the body written at
  that rv), so every version is delivered, once, in rv order, as kube-apiserver's watch cache
  does: a PATCH and a PUT landing between two polls are two MODIFIED events. (A row logged
  before the log kept bodies falls back to the object's current body, and is skipped when the
  object has changed again since: the later row delivers that state.) ADDED/MODIFIED come from whether
  the feed has seen the key before; DELETED carries the last body seen, stamped with the rv of
  the deletion. Each change keeps the state before it (``prev``) for selector watches. Intermediate states written within one transaction are never visible (they were
  never committed).
- events: the ``events`` table ordered by ``seq`` (an Event's resourceVersion is its seq).

Resuming: a watch from resourceVersion R gets every change with rv > R, provided R is not older
than ``floor`` (the last rv dropped from memory, or the rv when the feed started); else the
caller answers 410 Expired. Dropped rows are also deleted from the ``changes`` table so the
state file does not grow without bound.
A writer's own compaction (``Store.retain``) past the feed's cursor means rows were dropped
before the feed read them: the feed starts over from the current state (as after ``reset``; open
watches end and clients relist). Events whose TTL ran out leave the feed's state (no DELETED
event is sent for them).

The feed is the only reader of wall-clock-free time here: polling uses ``threading.Condition``
timeouts; nothing it emits depends on when it polled.

Neighbours: ``apiserver.store`` (tables), ``server.watch`` (streams to clients).
"""

from __future__ import annotations

from typing import Any

import bisect
import copy
import heapq
import json
import logging
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.store import Store

log = logging.getLogger(__name__)

DEFAULT_CAPACITY = 10_000
POLL_SECONDS = 0.05
OBJECTS, EVENTS = "objects", "events"


@dataclass(frozen=True, slots=True)
class Change:
    rv: int            # resourceVersion (objects) or seq (events)
    type: str          # ADDED | MODIFIED | DELETED
    kind: str
    namespace: str
    name: str
    body: dict[str, Any]
    prev: dict[str, Any] | None = None   # the state before this change (cacher's PrevObject), if known


class _Stream:
    """One ordered, bounded list of changes and the state it leads to."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.changes: list[Change] = []
        self.rvs: list[int] = []
        self.state: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.cursor = 0
        self.floor = 0

    def emit(self, change: Change) -> None:
        self.changes.append(change)
        self.rvs.append(change.rv)

    def trim(self) -> int | None:
        """Drop the oldest changes beyond capacity; returns the new floor when it moved."""
        extra = len(self.changes) - self.capacity
        if extra <= 0:
            return None
        self.floor = self.changes[extra - 1].rv
        del self.changes[:extra]
        del self.rvs[:extra]
        return self.floor

    def after(self, rv: int) -> list[Change]:
        return self.changes[bisect.bisect_right(self.rvs, rv):]


class ChangeFeed:
    """See the module docstring. ``start()`` begins polling; ``close()`` ends every wait."""

    def __init__(self, state_path: str | Path, capacity: int = DEFAULT_CAPACITY,
                 poll_seconds: float = POLL_SECONDS) -> None:
        self.path = str(state_path)
        self.poll_seconds = poll_seconds
        self.streams = {OBJECTS: _Stream(capacity), EVENTS: _Stream(capacity)}
        self.cond = threading.Condition()
        self.closed = False
        self.resets = 0
        self._poll_lock = threading.Lock()
        self.clock = 0.0      # the cluster's virtual clock at the last poll (table AGE columns)
        self._expires: dict[tuple[str, str, str], float] = {}   # event key -> TTL end
        # (TTL end, key) of every write of an event, earliest first; an entry whose end is no
        # longer the key's (the event was written again) is skipped when it comes up
        self._expiry_heap: list[tuple[float, tuple[str, str, str]]] = []
        self._store = Store(self.path, shared=True)   # its own connection: other writers show up
        self._thread: threading.Thread | None = None
        self._load()

    # ---- polling -----------------------------------------------------------------------------

    def _load(self) -> None:
        """Start from the current state: everything now stored is known, nothing is history."""
        store = self._store
        with store.reading():
            objects, events = self.streams[OBJECTS], self.streams[EVENTS]
            objects.state = {(k, ns, n): body for k, ns, n, body in store.read_objects()}
            objects.cursor = objects.floor = int(store.read_meta("rv").get("rv", 0))
            events.state = {}
            self._expires = {}
            self._expiry_heap = []
            for ns, name, seq, text, expires in store.events_since(0):
                events.state[("Event", ns, name)] = _stamp(json.loads(text), seq)
                self._expire_at(("Event", ns, name), float(expires))
                events.cursor = max(events.cursor, seq)
            events.floor = events.cursor

    def start(self) -> "ChangeFeed":
        self._thread = threading.Thread(target=self._run, name="gpusched-feed", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._poll_lock:
            self._store.close()

    def poke(self) -> None:
        """Poll now (called after the server's own writes) instead of at the next interval."""
        with self.cond:
            self.cond.notify_all()

    def _run(self) -> None:
        while True:
            with self.cond:
                if self.closed:
                    return
            try:
                self.sync()
            except sqlite3.Error:
                log.warning("change feed: poll failed", exc_info=True)
            with self.cond:
                if self.closed:
                    return
                self.cond.wait(self.poll_seconds)

    def sync(self) -> None:
        """Catch up with the store now (a watch starting checks its resourceVersion after it)."""
        with self._poll_lock:
            if not self.closed:
                self.poll()

    def poll(self) -> None:
        """Read what was committed since the last poll and append it to the streams (callers
        hold ``_poll_lock``: the connection is shared by the feed thread and :meth:`sync`)."""
        store = self._store
        with store.reading():
            meta = store.read_meta("rv", "clock", "compacted_rv")
            store_rv = int(meta.get("rv", 0))
            compacted = int(meta.get("compacted_rv", 0))
            self.clock = float(meta.get("clock", self.clock))
            object_rows = store.changes_with_bodies_since(self.streams[OBJECTS].cursor)
            # a change logged before the log kept bodies: only the object's latest body is known
            bodies = {rv: store.object_version(kind, ns, name)
                      for rv, kind, ns, name, typ, text in object_rows
                      if typ != "DELETED" and text is None}
            event_rows = store.events_since(self.streams[EVENTS].cursor)
        with self.cond:
            if compacted > self.streams[OBJECTS].cursor:   # rows dropped unread: start over
                self._reset()
                self._load()
                self.cond.notify_all()
                return
            if store_rv < self.streams[OBJECTS].cursor:
                self._reset()
            moved = self._add_objects(object_rows, bodies) | self._add_events(event_rows)
            self._expire_events()
            floors = self.streams[OBJECTS].trim()
            self.streams[EVENTS].trim()
            if moved:
                self.cond.notify_all()
        if floors is not None:
            self._compact(floors)

    def _reset(self) -> None:
        """``gpusched reset`` restarted the counters: forget everything; open watches end (the
        client relists, as after an apiserver restart)."""
        self.resets += 1
        for stream in self.streams.values():
            stream.state.clear()
            stream.changes.clear()
            stream.rvs.clear()
            stream.cursor = stream.floor = 0

    def _add_objects(self, rows: list[Any], bodies: dict[int, tuple[int, str] | None]) -> bool:
        stream = self.streams[OBJECTS]
        for rv, kind, ns, name, typ, text in rows:
            key = (kind, ns, name)
            stream.cursor = max(stream.cursor, rv)
            if typ == "DELETED":
                last = stream.state.pop(key, None)
                if last is not None:
                    stream.emit(Change(rv, "DELETED", kind, ns, name, _stamp(last, rv), last))
                continue
            if text is None:
                found = bodies.get(rv)
                if found is None or found[0] != rv:
                    continue   # deleted or changed again since: a later row has the state
                text = found[1]
            body = json.loads(text)
            prev = stream.state.get(key)
            change = "MODIFIED" if prev is not None else "ADDED"
            stream.state[key] = body
            stream.emit(Change(rv, change, kind, ns, name, body, prev))
        return bool(rows)

    def _expire_at(self, key: tuple[str, str, str], when: float) -> None:
        self._expires[key] = when
        heapq.heappush(self._expiry_heap, (when, key))
        if len(self._expiry_heap) > 2 * len(self._expires) + 1024:   # mostly rewritten events
            self._expiry_heap = [(end, k) for k, end in self._expires.items()]
            heapq.heapify(self._expiry_heap)

    def _expire_events(self) -> None:
        """Forget the events whose TTL ran out on the cluster clock (the store deleted them):
        only the heap's due entries are looked at, not every event at every poll."""
        state, heap = self.streams[EVENTS].state, self._expiry_heap
        while heap and heap[0][0] <= self.clock:
            when, key = heapq.heappop(heap)
            if self._expires.get(key) == when:
                state.pop(key, None)
                del self._expires[key]

    def _add_events(self, rows: list[Any]) -> bool:
        stream = self.streams[EVENTS]
        for ns, name, seq, text, expires in rows:
            key = ("Event", ns, name)
            self._expire_at(key, float(expires))
            stream.cursor = max(stream.cursor, seq)
            body = json.loads(text)          # parsed here: stamped in place, not copied
            body.setdefault("metadata", {})["resourceVersion"] = str(seq)
            prev = stream.state.get(key)
            change = "MODIFIED" if prev is not None else "ADDED"
            stream.state[key] = body
            stream.emit(Change(seq, change, "Event", ns, name, body, prev))
        return bool(rows)

    def _compact(self, floor: int) -> None:
        try:
            write.compact(self._store, floor)
        except sqlite3.OperationalError:   # busy: the next trim tries again
            log.debug("change feed: compaction deferred", exc_info=True)

    # ---- reading -----------------------------------------------------------------------------

    def snapshot(self, stream: str) -> tuple[int, list[tuple[tuple[str, str, str], dict[str, Any]]]]:
        """(cursor, current objects sorted by key) for a watch without a resourceVersion."""
        with self.cond:
            s = self.streams[stream]
            return s.cursor, sorted(s.state.items())

    def state_at(self, stream: str, rv: int) -> dict[tuple[str, str, str], dict[str, Any]] | None:
        """The stream's objects as they were at ``rv`` (the current state with every later change
        undone, newest first: each change keeps the state before it); None when ``rv`` is older
        than the floor (history dropped: etcd's compaction). After the sync nothing newer than
        the cursor exists, so an ``rv`` past it reads the current state."""
        self.sync()
        with self.cond:
            s = self.streams[stream]
            if rv < s.floor:
                return None
            state = dict(s.state)
            for change in reversed(s.after(rv)):
                key = (change.kind, change.namespace, change.name)
                if change.prev is None:
                    state.pop(key, None)
                else:
                    state[key] = change.prev
            return state

    def floor(self, stream: str) -> tuple[int, int]:
        """(floor, cursor): a resume from rv < floor is too old (410)."""
        with self.cond:
            s = self.streams[stream]
            return s.floor, s.cursor

    def wait(self, stream: str, after: int, timeout: float, resets: int = 0) -> list[Change] | None:
        """Changes with rv > ``after`` (waiting up to ``timeout``); None once closed, after a
        reset (``resets`` differs), or when ``after`` fell behind the floor while waiting."""
        with self.cond:
            s = self.streams[stream]
            if resets != self.resets:
                return None
            found = s.after(after)
            if not found and not self.closed:
                self.cond.wait(timeout)
                found = s.after(after)
            if self.closed:
                return None
            if after < s.floor:
                return None
            return found


def _stamp(body: dict[str, Any], rv: int) -> dict[str, Any]:
    body = copy.deepcopy(body)
    body.setdefault("metadata", {})["resourceVersion"] = str(rv)
    return body
