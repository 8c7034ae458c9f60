"""The FitCheck preemption and explain re-run on what-if snapshots, with its vectorised pre-check.

``FrameworkFitCheck(framework, snapshot)`` is a callable ``fits(pod, node) -> reasons`` (``()``
= fits) over a profile's PreFilter and Filter plugins, plus two shortcuts ``preemption`` uses
where they are exact: ``precheck(pod, nodes)`` (NodeResourcesFit over many nodes as if every
strictly-lower-priority pod were gone) and ``short_with(pod, node, other)`` (would adding
``other`` back leave too few resources?).

Neighbours: built by ``preemption.framework_fit_check`` (re-exported there); reads the
``Snapshot`` (``free``, ``requested_below``) and the NodeResourcesFit plugin instance
(``rejections_for``, its checked columns).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from gpusched.objects.types import PodInfo
from gpusched.scheduler.framework import Code, CycleState
from gpusched.scheduler.snapshot import PODS

if TYPE_CHECKING:
    from gpusched.scheduler.snapshot import Snapshot

# Filters that read only the node (name, cordon, taints, labels) and reject UnschedulableAndUnresolvable:
# a node preemption evaluates has passed them, with or without its pods.
POD_BLIND_FILTERS = frozenset({"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity"})
# PreFilters whose verdict does not depend on the pods in the snapshot (they passed in the cycle).
POD_BLIND_PRE_FILTER_VERDICT = frozenset({
    "NodeResourcesFit", "VolumeBinding", "PodTopologySpread", "InterPodAffinity", "GpuDevices",
    "NodeAffinity", "TaintToleration", "NodeName", "NodeUnschedulable", "NodePorts",
    "DynamicResources"})
# Filters that depend on other pods only for pods that use them: NodePorts is skipped (PreFilter
# Skip) for a pod without host ports, so it does not spoil the pre-check for such a pod.
SKIPPED_WITHOUT_HOST_PORTS = "NodePorts"
RESOURCES_FIT = "NodeResourcesFit"


class FrameworkFitCheck:
    """The ``FitCheck`` of a profile: ``fits(pod, node)`` runs its PreFilter plugins (fresh cycle
    state, so counts reflect the what-if snapshot) and then its Filter plugins on one node,
    stopping at the first plugin that rejects it, as upstream's ``RunFilterPlugins``; returns
    that plugin's reasons. It is asked only about nodes the pod's cycle did not reject
    UnschedulableAndUnresolvable (preemption's potential nodes; explain's what-ifs), which have
    passed the leading ``POD_BLIND_FILTERS`` and pass them in any what-if: those are skipped.

    ``precheck`` (None when the profile does not allow it) answers, for many nodes at once, the
    question the what-if would ask NodeResourcesFit: does the pod fit the node's free resources
    plus everything its strictly-lower-priority pods request? It is exact - a node failing it
    fails the what-if with the same reasons - when NodeResourcesFit is a Filter preceded only by
    ``POD_BLIND_FILTERS`` (and NodePorts, for a pod without host ports, which skips it) and every
    PreFilter is in ``POD_BLIND_PRE_FILTER_VERDICT``.
    Devices (GpuDevices) come later in the filter order, so they are left to the what-if; whole
    GPUs (``nvidia.com/gpu``) and MIG/shared resources are extended resources and are checked here.
    """

    def __init__(self, framework: Any, snapshot: Snapshot) -> None:
        self.framework, self.snapshot = framework, snapshot
        names = [p.name for p in framework.filter]
        self.port_sensitive = (RESOURCES_FIT in names
                               and SKIPPED_WITHOUT_HOST_PORTS in names[: names.index(RESOURCES_FIT)])
        blind = [name in POD_BLIND_FILTERS for name in names] + [False]
        self.checked_filters = tuple(framework.filter[blind.index(False):])
        self.resources_fit = framework.filter[names.index(RESOURCES_FIT)] if RESOURCES_FIT in names else None
        exact = (self.resources_fit is not None
                 and set(names[: names.index(RESOURCES_FIT)]) <= POD_BLIND_FILTERS | {SKIPPED_WITHOUT_HOST_PORTS}
                 and all(p.name in POD_BLIND_PRE_FILTER_VERDICT for p in framework.pre_filter))
        # the shortcuts callers look up (None = not available for this profile)
        self.precheck = self._precheck if exact else None
        self.short_with = self._short_with if self.resources_fit is not None else None
        self._last: tuple[PodInfo, np.ndarray, np.ndarray] | None = None   # pod, request vector, checked columns

    def __call__(self, pod: PodInfo, node: int) -> tuple[str, ...]:
        snapshot, state = self.snapshot, CycleState()
        skipped: set[str] = set()
        for plugin in self.framework.pre_filter:
            status = plugin.pre_filter(state, pod, snapshot)
            if status.code == Code.SKIP:
                skipped.add(plugin.name)
            elif not status.ok:
                result: tuple[str, ...] = status.reasons
                return result
        candidates = np.array([node], dtype=np.int64)
        for plugin in self.checked_filters:
            if plugin.name in skipped:
                continue
            reasons = tuple(dict.fromkeys(r.reason for r in plugin.filter(state, pod, snapshot, candidates)
                                          if r.nodes[node]))
            if reasons:
                return reasons
        return ()

    def _short_with(self, pod: PodInfo, node: int, other: PodInfo) -> bool:
        """Would NodeResourcesFit reject ``node`` for ``pod`` once ``other`` is added to it?
        (Any filter rejecting means no fit, so this needs no order among the filters.)"""
        snapshot = self.snapshot
        assert self.resources_fit is not None     # short_with is offered only with NodeResourcesFit
        if self._last is None or self._last[0] is not pod or len(self._last[1]) != len(snapshot.resource_names):
            vec = snapshot.request_vector(pod)
            self._last = (pod, vec, self.resources_fit._checked(snapshot, vec))
        _, vec, cols = self._last
        other_vec = snapshot.request_vector(other)
        free = snapshot.free[node].copy()
        free[: len(other_vec)] -= other_vec
        return bool(free[PODS] < 1 or (free[cols] < vec[cols]).any())

    def _precheck(self, pod: PodInfo, nodes: np.ndarray) -> tuple[np.ndarray, list[tuple[str, ...]]]:
        """Per node of ``nodes``: -1 when the pod would fit its resources with every lower-priority
        pod gone, else an index into the returned list of NodeResourcesFit reason tuples."""
        snapshot = self.snapshot
        if self.port_sensitive and pod.host_ports:      # NodePorts might reject first: no shortcut
            return np.full(len(nodes), -1, dtype=np.int64), []
        assert self.resources_fit is not None     # precheck is offered only with NodeResourcesFit
        vec = snapshot.request_vector(pod)
        free = snapshot.free[nodes]
        free[:, : len(snapshot.resource_names)] += snapshot.requested_below(pod.priority, nodes)
        rejections = self.resources_fit.rejections_for(snapshot, vec, nodes, free)
        ids = np.full(len(nodes), -1, dtype=np.int64)
        if not rejections:
            return ids, []
        hits = np.stack([r.nodes[nodes] for r in rejections], axis=1)      # nodes x rejections
        failing = hits.any(axis=1)
        patterns, inverse = np.unique(hits[failing], axis=0, return_inverse=True)
        ids[failing] = inverse.reshape(-1)
        reasons = [tuple(dict.fromkeys(r.reason for r, hit in zip(rejections, row) if hit))
                   for row in patterns]
        return ids, reasons


def framework_fit_check(framework: Any, snapshot: Snapshot) -> FrameworkFitCheck:
    """The profile's ``FitCheck`` (with the vectorised resource ``precheck`` where exact)."""
    return FrameworkFitCheck(framework, snapshot)
