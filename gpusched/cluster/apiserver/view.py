"""The in-memory view of the cluster that one command reads and changes.

A :class:`View` is loaded from the :class:`~gpusched.cluster.apiserver.store.Store` inside the command's
transaction, changed by admission, controllers and the scheduler, and written back (only the
objects that changed, each with a new resourceVersion and a change-log row) before the commit.

Object identity: (kind, namespace, name), namespace ``""`` for cluster-scoped kinds. Bodies are
raw dicts (unknown fields survive); :meth:`View.get` returns the stored dict, which callers must
not change in place: take :meth:`View.copy`, change it, and :meth:`View.update` it (a body equal
to the stored one is not a change and gets no new resourceVersion; that is how ``settle`` finds
its fixpoint).

Determinism: uids are uuid5 of kind/namespace/name/creation counter; generated name suffixes
come from SHA-256 of (seed, counter) over Kubernetes' alphabet; event names from a counter.

Neighbours: built and written by ``cluster.cluster``; read by admission, controllers, scheduling.
"""

from __future__ import annotations

from typing import Any, Protocol

import builtins
import copy
import hashlib
import json
from dataclasses import dataclass, field

from gpusched.cluster.apiserver.sameness import same_but_version, same_json
from gpusched.cluster.apiserver.store import DEFAULT_SEED, Store, dumps, rfc3339
from gpusched.objects.kinds import KINDS
from gpusched.objects.uids import namespace_bytes, uuid5
from gpusched.objects.tree import copy_tree as copy_tree   # re-exported: the cluster's copies
from gpusched.cluster.apiserver.notes import DRA_KINDS, capacity_changed, judged_entries_dropped, note_pod_end
from gpusched.cluster.apiserver.queue_rows import QueueRows

Key = tuple[str, str, str]   # (kind, namespace, name)


class ObjectSource(Protocol):
    """What the scheduling helpers read: a ``View``, or the secondary scheduler's cache of the
    objects it watches through a real API server (``backends.secondary.ObjectCache``)."""

    def list(self, kind: str, namespace: str | None = None) -> builtins.list[dict[str, Any]]: ...

    def unbound_pods(self) -> builtins.list[dict[str, Any]]: ...
# Kinds whose changes can make a pending pod schedulable (the scheduler retries its pods).
EPOCH_KINDS = frozenset({"Node", "PersistentVolumeClaim", "PersistentVolume", "StorageClass", *DRA_KINDS})

# k8s.io/apimachinery/pkg/util/rand: consonants and digits without vowels or look-alikes.
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_UID_NAMESPACE = namespace_bytes("6f1f3a62-5a0e-4d0e-9a53-677075736368")   # fixed: uids are stable

def object_namespace(kind: str, body: dict[str, Any]) -> str:
    """The namespace an object lives in: "" for cluster-scoped kinds, else default "default"."""
    info = KINDS.get(kind)
    if info is not None and not info.namespaced:
        return ""
    return (body.get("metadata") or {}).get("namespace") or "default"


def key_of(body: dict[str, Any]) -> Key:
    kind = body.get("kind", "")
    return kind, object_namespace(kind, body), (body.get("metadata") or {}).get("name", "")


@dataclass
class View:
    """Objects, events and counters of one command; see the module docstring."""

    objects: dict[Key, dict[str, Any]] = field(default_factory=dict)
    events: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)   # (ns, name) -> Event
    event_seq: dict[tuple[str, str], int] = field(default_factory=dict)
    rv: int = 0
    clock: float = 0.0
    seed: int = DEFAULT_SEED
    uid_counter: int = 0
    name_counter: int = 0
    event_counter: int = 0
    epoch: int = 0                      # bumps when capacity may have been freed (see scheduling)
    settled_rv: int = 0                 # the resourceVersion the last settle left (rv: all settled)
    attempts: dict[str, int] = field(default_factory=dict)   # pod uid -> epoch of last attempt
    queue: dict[str, dict[str, Any]] = field(default_factory=dict)   # scheduler.queue: per-pod failures
    capacity_log: builtins.list[builtins.list[Any]] = field(default_factory=list)   # [epoch, node, priority]
    stored_queue: QueueRows = field(default_factory=QueueRows.empty)   # the store's queue rows
    mutations: int = 0                  # in-memory change counter (fixpoint detection)
    stats: dict[str, Any] = field(default_factory=dict)   # for gpusched.metrics: scheduler counters, ended pods
    meta_text: dict[str, str] = field(default_factory=dict)   # the meta rows as last read or written
    _dirty: dict[Key, str] = field(default_factory=dict)
    _dirty_events: set[tuple[str, str]] = field(default_factory=set)
    _deleted_rv: dict[Key, int] = field(default_factory=dict)
    _event_index: dict[tuple[Any, ...], tuple[str, str]] = field(default_factory=dict)
    _by_kind: dict[str, dict[tuple[str, str], dict[str, Any]]] = field(default_factory=dict)
    _touched: set[Key] = field(default_factory=set)   # changed since take_touched (timers)
    touched_takes: int = 0              # calls of take_touched (a kept Timeline checks it is the taker)
    _unsnapped: set[Key] = field(default_factory=set)   # changed since take_unsnapped (snapshot cache)
    _deleted_nodes: set[str] = field(default_factory=set)   # for PodGC (take_deleted_nodes)
    # Settle's work queues (``apiserver.changes``): every change in order since ``clear_journal``,
    # the last body of each key deleted since, and indexes that map a change to what it affects.
    _journal: list[Key] = field(default_factory=list)
    _gone: dict[Key, dict[str, Any]] = field(default_factory=dict)
    _pods_on_node: dict[str, set[Key]] = field(default_factory=dict)   # spec.nodeName -> pods
    _unbound: set[Key] = field(default_factory=set)     # unfinished pods without spec.nodeName
    _live_on_node: dict[str, set[Key]] = field(default_factory=dict)   # the unfinished ones
    _nominated_to: dict[str, set[Key]] = field(default_factory=dict)   # status.nominatedNodeName
    _uids: dict[str, Key] = field(default_factory=dict)
    _dependents: dict[str, set[Key]] = field(default_factory=dict)   # owner uid -> dependents
    # Per-view caches of pure derivations (never persisted; a reload starts empty).
    memo: dict[str, dict[str, Any]] = field(default_factory=dict)
    _sorted: dict[str, builtins.list[tuple[str, str]]] = field(default_factory=dict)   # list()'s order

    # ---- loading and writing ----------------------------------------------------------------

    @classmethod
    def load(cls, store: Store) -> "View":
        meta = store.read_meta()
        stored, attempts, queue = QueueRows.read(store, meta)
        view = cls(rv=int(meta.get("rv", 0)), clock=float(meta.get("clock", 0.0)),
                   seed=int(meta.get("seed", DEFAULT_SEED)),
                   uid_counter=int(meta.get("uid_counter", 0)),
                   name_counter=int(meta.get("name_counter", 0)),
                   event_counter=int(meta.get("event_counter", 0)),
                   epoch=int(meta.get("epoch", 0)), settled_rv=int(meta.get("settled_rv", 0)),
                   attempts=attempts, queue=queue, stored_queue=stored,
                   capacity_log=json.loads(meta.get("capacity_log", "[]")),
                   stats=json.loads(meta.get("stats", "{}")), meta_text=meta)
        for kind, ns, name, body in store.read_objects():
            view._put((kind, ns, name), body)
        for ns, name, seq, body in store.read_events():
            view.events[(ns, name)] = body
            view.event_seq[(ns, name)] = seq
            view._event_index[_event_key(body)] = (ns, name)
        return view

    def meta_dict(self) -> dict[str, str]:
        return {"rv": str(self.rv), "clock": repr(self.clock), "seed": str(self.seed),
                "uid_counter": str(self.uid_counter), "name_counter": str(self.name_counter),
                "event_counter": str(self.event_counter), "epoch": str(self.epoch),
                "settled_rv": str(self.settled_rv),
                "stats": dumps(self.stats), "capacity_log": json.dumps(self.capacity_log)}

    def write(self, store: Store) -> None:
        """Write what changed (inside the caller's immediate transaction), clear the marks. The
        journal is the settle's to clear: what a write that skipped the settle changed stays."""
        for key, change in sorted(self._dirty.items(), key=lambda kv: self._dirty_rv(kv[0])):
            kind, ns, name = key
            body = self.objects.get(key)
            if body is None:
                store.delete_object(kind, ns, name, self._deleted_rv.get(key, self.rv))
            else:
                store.upsert_object(kind, ns, name, body, change)
        for ekey in sorted(self._dirty_events, key=lambda k: self.event_seq.get(k, 0)):
            event = self.events.get(ekey)
            if event is None:
                store.delete_event(*ekey)
            else:
                store.upsert_event(ekey[0], ekey[1], self.event_seq[ekey], event, self.clock)
        judged_entries_dropped(self, self.attempts)
        meta = {k: v for k, v in self.meta_dict().items() if self.meta_text.get(k) != v}
        store.write_meta(meta)      # only the rows that changed (another process may own the rest)
        self.meta_text.update(meta)
        self.stored_queue.write(store, self.attempts, self.queue)
        for ekey in store.retain(self.rv, self.clock):   # event TTL, change-log compaction
            self.forget_event(ekey)
        self._dirty.clear()
        self._dirty_events.clear()
        self._deleted_rv.clear()

    def _dirty_rv(self, key: Key) -> int:
        body = self.objects.get(key)
        if body is None:
            return self._deleted_rv.get(key, 0)
        return int(body["metadata"].get("resourceVersion", 0))

    def snapshot(self) -> tuple[dict[Key, dict[str, Any]], dict[tuple[str, str], dict[str, Any]]]:
        """Objects and events as plain data (for comparing with a reload from disk)."""
        return copy.deepcopy(self.objects), copy.deepcopy(self.events)

    # ---- reading -----------------------------------------------------------------------------

    def get(self, kind: str, name: str, namespace: str = "") -> dict[str, Any] | None:
        return self.objects.get((kind, namespace if _namespaced(kind) else "", name))

    def copy(self, kind: str, name: str, namespace: str = "") -> dict[str, Any] | None:
        body = self.get(kind, name, namespace)
        return copy_tree(body) if body is not None else None

    def list(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """Objects of a kind, sorted by (namespace, name); ``None`` = every namespace."""
        of_kind = self._by_kind.get(kind, {})
        keys = self._sorted.get(kind)
        if keys is None:            # kept until an object of the kind is created or deleted
            keys = self._sorted[kind] = sorted(of_kind)
        return [of_kind[k] for k in keys if namespace is None or k[0] == namespace]

    def _put(self, key: Key, body: dict[str, Any]) -> None:
        old = self.objects.get(key)
        if old is not None:
            self._unindex(key, old)
        else:
            self._sorted.pop(key[0], None)
        self.objects[key] = body
        self._by_kind.setdefault(key[0], {})[key[1:]] = body
        self._index(key, body)

    def _index(self, key: Key, body: dict[str, Any]) -> None:
        meta = body.get("metadata") or {}
        if meta.get("uid"):
            self._uids[meta["uid"]] = key
        for ref in meta.get("ownerReferences") or ():
            if ref.get("controller") and ref.get("uid"):
                self._dependents.setdefault(ref["uid"], set()).add(key)
        if key[0] == "Pod":
            self._index_pod(key, body)

    def _index_pod(self, key: Key, body: dict[str, Any]) -> None:
        status = body.get("status") or {}
        node = (body.get("spec") or {}).get("nodeName")
        if node:
            self._pods_on_node.setdefault(node, set()).add(key)
            if status.get("phase") not in ("Succeeded", "Failed"):
                self._live_on_node.setdefault(node, set()).add(key)
        elif status.get("phase") not in ("Succeeded", "Failed"):
            self._unbound.add(key)
        if status.get("nominatedNodeName"):
            self._nominated_to.setdefault(status["nominatedNodeName"], set()).add(key)

    def _unindex(self, key: Key, body: dict[str, Any]) -> None:
        meta = body.get("metadata") or {}
        if self._uids.get(meta.get("uid", "")) == key:
            del self._uids[meta["uid"]]
        for ref in meta.get("ownerReferences") or ():
            dependents = self._dependents.get(ref.get("uid", ""))
            if dependents is not None:
                dependents.discard(key)
                if not dependents:
                    del self._dependents[ref["uid"]]
        if key[0] == "Pod":
            node = (body.get("spec") or {}).get("nodeName") or ""
            nominated = (body.get("status") or {}).get("nominatedNodeName") or ""
            for index, name in ((self._pods_on_node, node), (self._live_on_node, node),
                                (self._nominated_to, nominated)):
                on_node = index.get(name)
                if on_node is not None:
                    on_node.discard(key)
                    if not on_node:
                        del index[name]
            self._unbound.discard(key)

    # ---- indexes (what a change affects; ``apiserver.changes``) -------------------------------

    def pods_on(self, node: str) -> builtins.list[Key]:     # builtins: View.list shadows list
        """Keys of the pods bound to ``node`` (any phase), sorted."""
        return sorted(k for k in self._pods_on_node.get(node, ())
                      if (self.objects[k].get("spec") or {}).get("nodeName") == node)

    def live_pods_on(self, node: str) -> builtins.list[Key]:
        """Keys of the pods bound to ``node`` that are not Succeeded or Failed, sorted (finished
        pods stay bound to their node until deleted; the kubelet has nothing to do with them)."""
        return sorted(self._live_on_node.get(node, ()))

    def nominated_to(self, node: str) -> builtins.list[Key]:
        """Keys of the pods whose ``status.nominatedNodeName`` is ``node`` (any phase), sorted."""
        return sorted(self._nominated_to.get(node, ()))

    def unbound_pods(self) -> builtins.list[dict[str, Any]]:
        """Unfinished pods without ``spec.nodeName``, sorted by (namespace, name)."""
        pods = (self.objects[k] for k in sorted(self._unbound))
        return [p for p in pods if not (p.get("spec") or {}).get("nodeName")
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]

    def by_uid(self, uid: str) -> dict[str, Any] | None:
        key = self._uids.get(uid)
        return self.objects.get(key) if key is not None else None

    def dependents(self, uid: str) -> builtins.list[Key]:
        """Keys of the objects whose controller ownerReference names ``uid``, sorted."""
        return sorted(self._dependents.get(uid, ()))

    def journal_size(self) -> int:
        return len(self._journal)

    def journal_since(self, position: int) -> set[Key]:
        """Keys created, changed, touched or deleted since ``position`` of the journal."""
        return set(self._journal[position:])

    def gone(self, key: Key) -> dict[str, Any] | None:
        """The last body of ``key`` if it was deleted since the journal was cleared."""
        return self._gone.get(key)

    def clear_journal(self) -> None:
        self._journal.clear()
        self._gone.clear()

    def now(self) -> float:
        return self.clock

    def timestamp(self, t: float | None = None) -> str:
        return rfc3339(self.clock if t is None else t)

    # ---- writing -----------------------------------------------------------------------------

    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def new_uid(self, kind: str, namespace: str, name: str) -> str:
        self.uid_counter += 1
        return uuid5(_UID_NAMESPACE, f"{kind}/{namespace}/{name}/{self.uid_counter}")

    def random_suffix(self, length: int = 5) -> str:
        """The next deterministic generated-name suffix, e.g. ``x7k2q``."""
        self.name_counter += 1
        digest = hashlib.sha256(f"{self.seed}:{self.name_counter}".encode()).digest()
        return "".join(NAME_ALPHABET[b % len(NAME_ALPHABET)] for b in digest[:length])

    def create(self, body: dict[str, Any], owned: bool = False) -> dict[str, Any]:
        """Store a new object: uid, resourceVersion, generation 1, creationTimestamp. ``owned``:
        the caller hands ``body`` over (its own copy): stored as is, not copied."""
        if not owned:
            body = copy_tree(body)
        kind = body["kind"]
        meta = body.setdefault("metadata", {})
        ns = object_namespace(kind, body)
        if _namespaced(kind):
            meta["namespace"] = ns
        key = (kind, ns, meta["name"])
        meta["uid"] = self.new_uid(*key)
        meta["creationTimestamp"] = self.timestamp()
        meta["generation"] = 1
        meta["resourceVersion"] = str(self.next_rv())
        self._put(key, body)
        self._touched.add(key)
        self._unsnapped.add(key)
        self._journal.append(key)
        self._dirty[key] = "ADDED" if self._dirty.get(key) != "DELETED" else "MODIFIED"
        self.mutations += 1
        if kind in EPOCH_KINDS:
            capacity_changed(self)
        return body

    def update(self, body: dict[str, Any]) -> bool:
        """Replace an object with a changed body; returns False (and does nothing) when equal."""
        key = key_of(body)
        old = self.objects.get(key)
        if old is None:
            self.create(body)
            return True
        if same_but_version(old, body):
            return False
        if key[0] == "Pod":
            note_pod_end(self, old, body)
        meta = body.setdefault("metadata", {})
        old_meta = old.get("metadata", {})
        for field_name in ("uid", "creationTimestamp"):
            meta[field_name] = old_meta.get(field_name)
        generation = int(old_meta.get("generation", 1) or 1)
        if not same_json(old.get("spec", {}), body.get("spec", {})):
            generation += 1
        meta["generation"] = generation
        meta["resourceVersion"] = str(self.next_rv())
        self._put(key, body)
        self._touched.add(key)
        self._unsnapped.add(key)
        self._journal.append(key)
        self._dirty.setdefault(key, "MODIFIED")
        self.mutations += 1
        if key[0] in EPOCH_KINDS:
            capacity_changed(self)
        return True

    def delete(self, kind: str, name: str, namespace: str = "") -> dict[str, Any] | None:
        key = (kind, namespace if _namespaced(kind) else "", name)
        body = self.objects.pop(key, None)
        if body is None:
            return None
        if kind == "Pod":
            note_pod_end(self, body, None)
        del self._by_kind[kind][key[1:]]
        self._sorted.pop(kind, None)
        self._unindex(key, body)
        self._gone[key] = body
        self._journal.append(key)
        self._deleted_rv[key] = self.next_rv()
        self._dirty[key] = "DELETED"
        self._touched.add(key)
        self._unsnapped.add(key)
        if kind == "Node":
            self._deleted_nodes.add(name)
        self.mutations += 1
        if kind == "Pod" or kind in EPOCH_KINDS:
            capacity_changed(self, body if kind == "Pod" else None)
        return body

    def touch(self, body: dict[str, Any]) -> None:
        """Have the timers re-derive an object that did not change (a controller's in-memory
        record behind its due time did, e.g. a Job's pod-failure back-off)."""
        self._touched.add(key_of(body))
        self._journal.append(key_of(body))

    def take_touched(self) -> set[Key]:
        """The keys created, changed or deleted since the last call (``cluster.clock.timers``)."""
        touched, self._touched = self._touched, set()
        self.touched_takes += 1
        return touched

    def take_unsnapped(self) -> set[Key]:
        """The keys created, changed or deleted since the last call (``cluster.scheduling.cache``)."""
        changed, self._unsnapped = self._unsnapped, set()
        return changed

    def take_deleted_nodes(self) -> set[str]:
        """Names of the Nodes deleted since the last call (``controllers.nodes.node_lifecycle``)."""
        gone, self._deleted_nodes = self._deleted_nodes, set()
        return gone

    # ---- events ------------------------------------------------------------------------------

    def record_event(self, involved: dict[str, Any], reason: str, message: str, type_: str = "Normal",
                     component: str = "default-scheduler") -> dict[str, Any]:
        """Record a Kubernetes Event; a repeat (same object, reason, message) bumps ``count``."""
        meta = involved.get("metadata", {})
        kind = involved.get("kind", "")
        ns = meta.get("namespace") or "default"     # cluster-scoped objects' events go to default
        ref = {"kind": kind, "namespace": meta.get("namespace", ""), "name": meta.get("name", ""),
               "uid": meta.get("uid", ""), "apiVersion": involved.get("apiVersion", "v1")}
        now = self.timestamp()
        probe = {"involvedObject": ref, "reason": reason, "message": message, "type": type_,
                 "source": {"component": component}}
        existing = self._event_index.get(_event_key(probe))
        if existing is not None:
            event = copy.deepcopy(self.events[existing])
            event["count"] = int(event.get("count", 1)) + 1
            event["lastTimestamp"] = now
            return self.put_event(existing, event)
        name = f"{ref['name']}.{self.event_counter + 1:016x}"
        event = {"apiVersion": "v1", "kind": "Event",
                 "metadata": {"name": name, "namespace": ns, "creationTimestamp": now},
                 **probe, "count": 1, "firstTimestamp": now, "lastTimestamp": now}
        self._event_index[_event_key(probe)] = (ns, name)
        return self.put_event((ns, name), event)

    def put_event(self, ekey: tuple[str, str], event: dict[str, Any]) -> dict[str, Any]:
        """Store ``event`` as (namespace, name) ``ekey`` with the next recording sequence number
        (its resourceVersion); written to the store at commit. Returns ``event``."""
        self.event_counter += 1
        self.events[ekey] = event
        self.event_seq[ekey] = self.event_counter
        self._dirty_events.add(ekey)
        return event

    def drop_event(self, ekey: tuple[str, str]) -> None:
        """Delete an Event (a DELETE request): gone from the store at commit."""
        self.forget_event(ekey)
        self._dirty_events.add(ekey)

    def forget_event(self, ekey: tuple[str, str]) -> None:
        """Drop an Event whose TTL ran out (the store deleted it)."""
        event = self.events.pop(ekey, None)
        self.event_seq.pop(ekey, None)
        if event is not None and self._event_index.get(_event_key(event)) == ekey:
            del self._event_index[_event_key(event)]

    def list_events(self, namespace: str | None = None) -> builtins.list[dict[str, Any]]:
        """Events oldest first (by lastTimestamp, then recording order)."""
        keys = [k for k in self.events if namespace is None or k[0] == namespace]
        keys.sort(key=lambda k: (self.events[k].get("lastTimestamp") or "", self.event_seq[k]))
        return [self.events[k] for k in keys]

    def clear(self) -> None:
        """Forget everything but the seed (``reset``); counters restart."""
        for index in (self.objects, self._by_kind, self.events, self.event_seq, self._event_index,
                      self._dirty, self._dirty_events, self._touched, self._unsnapped,
                      self._deleted_nodes, self._journal, self._gone, self._pods_on_node,
                      self._live_on_node, self._nominated_to, self._unbound, self._uids,
                      self._dependents, self.memo, self._sorted):
            index.clear()
        self.stats, self.meta_text = {}, {}       # the store's meta rows are gone too
        self.rv = self.uid_counter = self.name_counter = self.event_counter = self.epoch = 0
        self.settled_rv = 0
        self.clock = 0.0
        self.mutations += 1


def _namespaced(kind: str) -> bool:
    info = KINDS.get(kind)
    return info.namespaced if info is not None else True


def _event_key(event: dict[str, Any]) -> tuple[Any, ...]:
    ref = event.get("involvedObject", {})
    return (ref.get("kind"), ref.get("namespace"), ref.get("name"), ref.get("uid"),
            event.get("reason"), event.get("message"), event.get("type"),
            (event.get("source") or {}).get("component"))

