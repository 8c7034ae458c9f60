"""Preemption's per-node what-if outcomes, kept between dry runs while the node is unchanged.

Under sustained overload every failed attempt runs DefaultPreemption's dry run over up to all
nodes (``preemption.dry_run``), and each node's ``select_victims_on_node`` removes its
lower-priority pods from the snapshot, re-runs the filters and reprieves pod by pod. Between
two dry runs few nodes change (a bind, an end, a preemption's victims marked terminating), and
the pending pods that try are often alike (same priority, same requests), so most of those
what-ifs repeat one already done. :class:`VictimsCache` keeps each outcome - the
``Candidate`` (victims, PDB violations) or the reasons - under

- the **node's state**: its row, its ``NodeInfo`` and device model objects, and the set of
  (``PodInfo``, ``DeviceAssignment``) objects on it (nominated pods counted in included). The
  snapshot shares these objects and replaces them on any change (``update_node`` takes a new
  ``NodeInfo``; a pod's new state is a new ``PodInfo``), so the same objects mean the same
  row: same free resources, devices, priorities and victims. The entry holds them, so an id
  in a key is never reused by another object while the entry lives;
- the **preemptor's fields the what-if reads** (:func:`pod_key`): priority (which pods are
  lower), requests, GPU share and models, host ports.

That is exact only when the what-if reads nothing but that node and those fields.
:meth:`VictimsCache.for_pod` checks it once per dry run and returns None (no caching) unless:
every Filter plugin the what-if runs (``FrameworkFitCheck.checked_filters``) is node-local
(:data:`NODE_LOCAL_FILTERS`) or skipped by its PreFilter for this pod (InterPodAffinity with no
affinity anywhere, PodTopologySpread without constraints, VolumeBinding without claims; a skip
on the whole snapshot stays a skip with pods removed from one node); every PreFilter passes or
skips and is one whose verdict ignores the pods (``POD_BLIND_PRE_FILTER_VERDICT``); and the
preemptor is not itself in the snapshot. The PodDisruptionBudgets, the snapshot and the
framework are part of the context: a change of any clears the cache.

Worked example: pods A and B, both priority 1000 and 4 CPUs / one GPU, fail one after the
other on a full 152-node cluster. A's dry run evaluates node n7 (victims: one BE pod) and keeps
that outcome; B's dry run finds n7 with the same ``PodInfo``/assignment objects and takes A's
outcome without removing or re-adding a pod. After n7's victim is marked terminating (a new
``PodInfo``), n7's key differs and the next dry run computes it afresh.

Neighbours: used by ``preemption.dry_run`` (through ``plugins.default_preemption``, which owns
one cache per plugin instance); reads ``preemption_fit.FrameworkFitCheck`` and the ``Snapshot``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Hashable, Sequence

from gpusched.objects.types import PodInfo
from gpusched.scheduler.framework import Code, CycleState
from gpusched.scheduler.preemption_fit import POD_BLIND_FILTERS, POD_BLIND_PRE_FILTER_VERDICT

if TYPE_CHECKING:
    from gpusched.scheduler.snapshot import Snapshot

# Filters whose verdict on a node reads only that node's row (resources, devices, the pods on
# it) and the preemptor's ``pod_key`` fields.
NODE_LOCAL_FILTERS = POD_BLIND_FILTERS | {"NodeResourcesFit", "GpuDevices", "NodePorts"}
MAX_ENTRIES = 50_000        # then the cache starts afresh (entries hold PodInfo references)

Outcome = Any               # preemption.Candidate | tuple[str, ...] (no import: preemption imports this)


def pod_key(pod: PodInfo) -> tuple[Hashable, ...]:
    """The preemptor's fields a node-local what-if reads: priority (which pods are victims),
    requests (NodeResourcesFit, devices), GPU share and models (GpuDevices), host ports."""
    return (pod.priority, tuple(sorted(pod.requests.items())), pod.gpu_milli, pod.gpu_models,
            pod.host_ports)


def node_key(snapshot: Snapshot, node: int) -> tuple[tuple[Hashable, ...], tuple[Any, ...]]:
    """(key, objects to keep alive) for the row's state: see the module docstring."""
    info, devices = snapshot.nodes[node], snapshot.devices[node]
    pods = snapshot.pods_on(node)
    assignments = [snapshot.assignments[p.uid] for p in pods]
    held = frozenset((id(p), id(a)) for p, a in zip(pods, assignments))
    return (node, id(info), id(devices), held), (info, devices, pods, assignments)


def node_local(fits: Any, pod: PodInfo, snapshot: Snapshot) -> bool:
    """Does the what-if of ``fits`` (a ``FrameworkFitCheck``) read only one node and ``pod_key``?"""
    framework = getattr(fits, "framework", None)
    if framework is None or pod.uid in snapshot.pod_node:
        return False
    state, skipped = CycleState(), set()
    for plugin in framework.pre_filter:
        status = plugin.pre_filter(state, pod, snapshot)
        if status.code == Code.SKIP:
            skipped.add(plugin.name)
        elif not status.ok or plugin.name not in POD_BLIND_PRE_FILTER_VERDICT:
            return False
    return all(p.name in NODE_LOCAL_FILTERS or p.name in skipped for p in fits.checked_filters)


class PodVictims:
    """The cache seen by one dry run of one pod (``VictimsCache.for_pod``)."""

    def __init__(self, entries: dict[Hashable, tuple[Any, Outcome]], pod: PodInfo,
                 snapshot: Snapshot) -> None:
        self.entries, self.pod_key, self.snapshot = entries, pod_key(pod), snapshot
        self._pending: dict[int, tuple[Hashable, Any]] = {}

    def get(self, node: int) -> Outcome | None:
        """The outcome kept for ``node`` in its present state, or None (then ``put`` it)."""
        key, keep = node_key(self.snapshot, node)
        entry = self.entries.get((self.pod_key, key))
        if entry is not None:
            return entry[1]
        self._pending[node] = ((self.pod_key, key), keep)
        return None

    def put(self, node: int, outcome: Outcome) -> None:
        """Keep ``node``'s outcome under the key ``get`` read before the what-if."""
        key, keep = self._pending.pop(node)
        if len(self.entries) >= MAX_ENTRIES:
            self.entries.clear()
        self.entries[key] = (keep, outcome)


class VictimsCache:
    """Per-node dry-run outcomes for one scheduler's DefaultPreemption (see the module docstring)."""

    def __init__(self) -> None:
        self.entries: dict[Hashable, tuple[Any, Outcome]] = {}
        self._context: tuple[Any, ...] = ()

    def for_pod(self, snapshot: Snapshot, pod: PodInfo, fits: Any,
                pdbs: Sequence[Any]) -> PodVictims | None:
        """The cache for one dry run of ``pod``, or None when its what-if is not node-local."""
        if not node_local(fits, pod, snapshot):
            return None
        context = (snapshot, fits.framework, tuple(pdbs))
        if (len(self._context) != len(context) or self._context[0] is not snapshot
                or self._context[1] is not fits.framework or self._context[2] != context[2]):
            self.entries.clear()
            self._context = context
        return PodVictims(self.entries, pod, snapshot)
