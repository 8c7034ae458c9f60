"""What changed since a controller last ran: the work queue ``settle`` hands each controller.

Upstream, every controller watches its informers and puts the keys of the objects an event
affects on its own work queue (the ReplicaSet controller's ``addPod``/``updatePod``/``deletePod``
enqueue the pod's controlling ReplicaSet, kubernetes ``pkg/controller/replicaset/
replica_set.go``; the Job controller does the same for Jobs; the node lifecycle controller's
pod handler enqueues the pod's node). :class:`Changes` is that queue for one controller run: the
keys created, changed, touched or deleted since the controller's previous run (the view's
journal), plus the timers that fired at this time; helpers map them to the objects the
controller reconciles (a pod to its owner, a node to its pods).

``resync`` is True when something every pod-creating controller depends on changed
(ResourceQuota, LimitRange, PriorityClass, Namespace ...): those controllers then reconcile
everything, as a FailedCreate would be retried upstream.

Neighbours: built by ``cluster.cluster`` (settle) from ``View.journal_since``; read by the
controllers whose ``reconcile(view, changes)`` accepts it (``controllers.registry.KEYED``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from gpusched.cluster.apiserver.view import Key, View

# Kinds admission reads when a controller creates a pod: a change may let a refused create pass.
RESYNC_KINDS = frozenset({"ResourceQuota", "LimitRange", "PriorityClass", "Namespace",
                          "RuntimeClass", "ServiceAccount"})


@dataclass(frozen=True, slots=True)
class Changes:
    """The keys one controller has to look at now; see the module docstring."""

    view: View
    keys: frozenset[Key]

    @property
    def resync(self) -> bool:
        return any(key[0] in RESYNC_KINDS for key in self.keys)

    def any_kind(self, kinds: Iterable[str]) -> bool:
        wanted = frozenset(kinds)
        return any(key[0] in wanted for key in self.keys)

    def of_kind(self, kind: str) -> set[Key]:
        return {key for key in self.keys if key[0] == kind}

    def body(self, key: Key) -> dict[str, Any] | None:
        """The object as it is now, or as it was when it was deleted."""
        current = self.view.objects.get(key)
        return current if current is not None else self.view.gone(key)

    def node_names(self) -> set[str]:
        """Changed Nodes, and the nodes of changed pods (a pod leaving frees its node)."""
        names = {key[2] for key in self.keys if key[0] == "Node"}
        for key in self.keys:
            if key[0] == "Pod":
                node = ((self.body(key) or {}).get("spec") or {}).get("nodeName")
                if node:
                    names.add(node)
        return names

    def pods(self) -> list[dict[str, Any]]:
        """Live changed pods and the pods bound to changed Nodes, sorted by key."""
        keys = {key for key in self.keys if key[0] == "Pod"}
        for key in self.keys:
            if key[0] == "Node":
                keys.update(self.view.pods_on(key[2]))
        return [self.view.objects[k] for k in sorted(keys) if k in self.view.objects]

    def owners(self, kind: str, keys: Iterable[Key] | None = None) -> set[Key]:
        """Keys of the ``kind`` objects that control one of ``keys`` (default: the changes)."""
        out = set()
        for key in self.keys if keys is None else keys:
            body = self.body(key)
            for ref in ((body or {}).get("metadata") or {}).get("ownerReferences") or ():
                if ref.get("controller") and ref.get("kind") == kind:
                    out.add((kind, key[1], str(ref.get("name", ""))))
        return out

    def targets(self, kind: str) -> list[dict[str, Any]]:
        """Live ``kind`` objects that changed or control a changed object, sorted by key."""
        keys = self.of_kind(kind) | self.owners(kind)
        return [self.view.objects[k] for k in sorted(keys) if k in self.view.objects]


def pod_namespaces(changes: Changes) -> set[str]:
    return {key[1] for key in changes.keys if key[0] == "Pod"}


def changed_nodes(view: View, changes: Changes) -> list[dict[str, Any]]:
    """The live changed Nodes in ``view.list("Node")`` order (by name): a keyed pass visits
    them in the order the full pass would."""
    keys = sorted(key for key in changes.keys if key[0] == "Node" and key in view.objects)
    return [view.objects[key] for key in keys]
