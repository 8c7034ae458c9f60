"""Bring a kept :class:`~gpusched.cluster.apiserver.view.View` up to what other processes committed.

A process that keeps its view between transactions (``serve``'s API process and its controller
process, a waiting CLI command) finds another process's commits through SQLite's ``PRAGMA
data_version``. Loading the whole store again costs what the store holds (seconds at 5,000
pods); :func:`refresh` costs what changed, as an informer follows a watch:

1. the meta rows: each one whose text differs from what this view last read or wrote is parsed
   again (the counters, the clock, the capacity epoch and log, the stats);
2. the change log after the view's resourceVersion (``changes``): each key named there takes
   the body of its last change (the log keeps it; one read of the log instead of one of the
   object per key), and a key whose last change deleted it leaves the view (its last body kept
   for the settle, as a delete by this process keeps it);
3. the events stored after the view's last event sequence number; when the clock moved and
   the store holds fewer events than the view (a count, where reading every key at each clock
   tick cost serve's API process a twentieth of its CPU per pod), the events the other
   process's write deleted (their TTL ran out) leave the view;
4. when anything above moved, the scheduling queue's rows (``apiserver.queue_rows``: the
   scheduler's per-pod records, which ``/metrics`` counts), read whole.

Each object read again enters the view's journal and its marks (timers, the scheduler's cache,
PodGC's deleted nodes) as this process's own write would, so the settle that follows reconciles
exactly what the other process changed; nothing is marked to be written back. The notes a write
takes (``apiserver.notes``: capacity epoch, ended pods) were taken by the writer and arrive with
the meta rows.

Returns False, changing nothing, when the change log cannot say what changed: the store was
reset (its resourceVersion or uid counter went back) or compacted past the view. The caller
then loads the view afresh.

Neighbours: ``apiserver.view`` (whose index this keeps; the loader's incremental half),
``apiserver.store`` (reads only); called by ``cluster.cluster`` (``Cluster._load``).
"""

from __future__ import annotations

import json
from typing import Any

from gpusched.cluster.apiserver.store import DEFAULT_SEED, Store
from gpusched.cluster.apiserver.queue_rows import QueueRows
from gpusched.cluster.apiserver.view import Key, View, _event_key

# meta row -> (View attribute, parse); rows not listed are other components' (the wall clock's)
_META: dict[str, tuple[str, Any]] = {
    "rv": ("rv", int), "clock": ("clock", float), "uid_counter": ("uid_counter", int),
    "name_counter": ("name_counter", int), "event_counter": ("event_counter", int),
    "epoch": ("epoch", int), "settled_rv": ("settled_rv", int),
    "capacity_log": ("capacity_log", json.loads), "stats": ("stats", json.loads),
}


def refresh(view: View, store: Store) -> bool:
    """Apply what other processes committed since ``view`` was loaded or written (inside the
    caller's transaction); False when the view must be loaded afresh (see the module docstring)."""
    meta = store.read_meta()
    if (int(meta.get("rv", 0)) < view.rv or int(meta.get("uid_counter", 0)) < view.uid_counter
            or int(meta.get("compacted_rv", 0)) > view.rv
            or int(meta.get("seed", DEFAULT_SEED)) != view.seed):
        return False
    rv, event_seq, clock = view.rv, view.event_counter, view.clock
    moved = _meta_again(view, meta)
    latest: dict[Key, tuple[int, str, str | None]] = {}     # key -> its last change
    for change_rv, kind, namespace, name, type_, text in store.changes_with_bodies_since(rv):
        latest[(kind, namespace, name)] = (change_rv, type_, text)
    if moved or latest:   # the other process's settle may have changed the scheduling queue's rows
        view.stored_queue, view.attempts, view.queue = QueueRows.read(store, meta)
    for key, (change_rv, type_, text) in latest.items():
        stored = None if type_ == "DELETED" else (change_rv, text) if text is not None \
            else store.object_version(*key)     # logged before the log kept bodies
        _read_again(view, key, stored)
    _events_again(view, store, event_seq, clock)
    return True


def _events_again(view: View, store: Store, event_seq: int, clock: float) -> None:
    """The events stored after ``event_seq``; when the clock moved since ``clock`` and the store
    holds fewer events than the view, those the other process's write expired leave it."""
    for namespace, name, seq, body, _expires in store.events_since(event_seq):
        _event_again(view, (namespace, name), seq, json.loads(body))
    if view.clock != clock and store.event_count() != len(view.events):
        kept = store.event_keys()
        for ekey in [k for k in view.events if k not in kept]:
            view.forget_event(ekey)


def _meta_again(view: View, meta: dict[str, str]) -> bool:
    """Parse again each meta row whose text changed since this view read or wrote it; whether
    any did."""
    moved = False
    for name, text in meta.items():
        if name in _META and view.meta_text.get(name) != text:
            attribute, parse = _META[name]
            setattr(view, attribute, parse(text))
            view.meta_text[name] = text
            moved = True
    return moved


def _read_again(view: View, key: Key, stored: tuple[int, str] | None) -> None:
    """``key`` as its last change left it: (resourceVersion, JSON body), None when deleted."""
    old = view.objects.get(key)
    if stored is None:
        if old is not None:
            _deleted(view, key, old)
        return
    if old is not None and int(old["metadata"].get("resourceVersion", 0)) == stored[0]:
        return
    view._put(key, json.loads(stored[1]))
    _mark(view, key)


def _deleted(view: View, key: Key, old: dict[str, Any]) -> None:
    del view.objects[key]
    del view._by_kind[key[0]][key[1:]]
    view._sorted.pop(key[0], None)
    view._unindex(key, old)
    view._gone[key] = old
    if key[0] == "Node":
        view._deleted_nodes.add(key[2])
    _mark(view, key)


def _mark(view: View, key: Key) -> None:
    """The marks a write leaves (see ``View.update``), without the mark to write it back."""
    view._touched.add(key)
    view._unsnapped.add(key)
    view._journal.append(key)
    view.mutations += 1


def _event_again(view: View, ekey: tuple[str, str], seq: int, event: dict[str, Any]) -> None:
    old = view.events.get(ekey)
    if old is not None and view._event_index.get(_event_key(old)) == ekey:
        del view._event_index[_event_key(old)]
    view.events[ekey] = event
    view.event_seq[ekey] = seq
    view._event_index[_event_key(event)] = ekey


def caught_up(view: View | None, store: Store, settles: bool = True) -> View:
    """``view`` refreshed, else (none kept, or :func:`refresh` cannot) the store loaded afresh;
    ``settles`` False (a process that never settles) drops the marks the refresh left."""
    if view is None or not refresh(view, store):
        return View.load(store)
    if not settles:
        drop_marks(view)
    return view


def drop_marks(view: View) -> None:
    """Forget the journal and the marks (for a process that never settles: ``serve``'s API
    process, whose changes the controller process reads from the change log instead)."""
    view.clear_journal()
    view.take_touched()
    view.take_unsnapped()
    view.take_deleted_nodes()
