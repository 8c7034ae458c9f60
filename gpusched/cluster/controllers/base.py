"""Informers and work queues: how a controller is fed from the change journal.

Upstream, a controller registers event handlers on the shared informers of the kinds it watches;
each handler maps a changed object to the keys of the objects the controller reconciles and adds
them to its work queue (kubernetes ``pkg/controller/replicaset/replica_set.go``: ``addPod`` /
``updatePod`` / ``deletePod`` enqueue the pod's controlling ReplicaSet,
``resolveControllerRef``); the sync handler then takes one key at a time. Here:

- an :class:`Informer` is one watched kind and its handler: the changed keys of that kind -> the
  keys to reconcile (:func:`itself`, :func:`controller` for owner -> owned through
  ``ownerReferences``, :func:`same_name`); a handler takes the changed keys of its kind at once,
  so what it reads to map them (a namespace's Services) is read once per step;
- a :class:`WorkQueue` is what a controller declares: the kind it reconciles, its informers,
  and the kinds whose change re-queues every object of that kind (the DaemonSet controller
  re-checks every DaemonSet when a Node changes, as its ``addNode``/``updateNode`` do);
- :meth:`WorkQueue.objects` turns a settle step's ``Changes`` (``apiserver.changes``: the keys
  changed since the step last ran) into the live objects to sync, sorted by key. ``changes`` of
  None (a command's own settle, an informer's resync) and a change of a kind every pod-creating
  controller depends on (``Changes.resync``: quota, LimitRange, PriorityClass ...) list every
  object of the kind, as a FailedCreate would be retried upstream.

A handler reads only the changed object (as it is now, or as it was when deleted) and the view's
indexes (``View.dependents``, ``View.pods_on``), never a listing of the store: a change costs
what it affects. The settle loop (``cluster.clock.settle``) hands each keyed controller its changes.

Neighbours: ``apiserver.changes`` (the journal's keys for one step), ``controllers.registry`` (which
controllers are keyed), the controllers that declare a ``QUEUE``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.apiserver.view import Key, View

Handler = Callable[[Changes, list[Key]], Iterable[Key]]


@dataclass(frozen=True, slots=True)
class Informer:
    """One watched kind and its event handler (changed keys of the kind -> keys to reconcile)."""

    kind: str
    handler: Handler


def itself(kind: str) -> Informer:
    """The controller's own kind: a changed object is reconciled itself."""
    return Informer(kind, lambda _changes, keys: keys)


def controller(kind: str, *owners: str) -> Informer:
    """A ``kind`` object enqueues its controlling owner, following controller ``ownerReferences``
    through ``owners`` in turn: ``controller("Pod", "ReplicaSet", "Deployment")`` maps a pod to
    the Deployment of its ReplicaSet (upstream's ``getDeploymentForPod``)."""
    def handler(changes: Changes, keys: list[Key]) -> Iterable[Key]:
        found: set[Key] = set(keys)
        for owner in owners:
            found = changes.owners(owner, found)
        return found
    return Informer(kind, handler)


def same_name(kind: str, target: str, label: str | None = None) -> Informer:
    """A ``kind`` object enqueues the ``target`` of the same namespace named like it, or named
    by its ``label`` (an EndpointSlice's ``kubernetes.io/service-name``)."""
    def handler(changes: Changes, keys: list[Key]) -> Iterable[Key]:
        if label is None:
            return [(target, key[1], key[2]) for key in keys]
        out = []
        for key in keys:
            labels = ((changes.body(key) or {}).get("metadata") or {}).get("labels") or {}
            if labels.get(label):
                out.append((target, key[1], str(labels[label])))
        return out
    return Informer(kind, handler)


@dataclass(frozen=True, slots=True)
class WorkQueue:
    """What a controller reconciles (``kind``), what it watches (``informers``), and the kinds
    whose change re-queues everything (``resync_on``); ``pod_creator`` adds
    ``Changes.resync`` (a change that may let a refused pod create pass)."""

    kind: str
    informers: tuple[Informer, ...]
    resync_on: frozenset[str] = frozenset()
    pod_creator: bool = True

    @property
    def watches(self) -> frozenset[str]:
        """Every kind whose change reaches this queue."""
        return frozenset(i.kind for i in self.informers) | self.resync_on

    def everything(self, changes: Changes | None) -> bool:
        """A full pass: no changes (a resync), or one that re-queues every object."""
        return changes is None or (self.pod_creator and changes.resync) or \
            changes.any_kind(self.resync_on)

    def keys(self, changes: Changes) -> set[Key]:
        """The keys the informers' handlers enqueue for these changes."""
        changed: dict[str, list[Key]] = {}
        for key in sorted(changes.keys):
            changed.setdefault(key[0], []).append(key)
        out: set[Key] = set()
        for informer in self.informers:
            if informer.kind in changed:
                out.update(k for k in informer.handler(changes, changed[informer.kind])
                           if k[0] == self.kind)
        return out

    def objects(self, view: View, changes: Changes | None) -> list[dict[str, Any]]:
        """The live objects to sync now, sorted by key (every one on a full pass)."""
        if changes is None or self.everything(changes):
            return view.list(self.kind)
        return [view.objects[k] for k in sorted(self.keys(changes)) if k in view.objects]
