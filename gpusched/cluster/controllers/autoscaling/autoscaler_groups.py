"""The Cluster Autoscaler's node groups (autoscaled NodePools) and its scheduling simulation,
shared by scale-up (``controllers.autoscaling.autoscaler``) and scale-down
(``autoscaler_scaledown``).

- :class:`Group` / :func:`groups`: each autoscaled NodePool (``devices.nodepool.autoscaling``)
  with its state in the pool's ``status``; :func:`update_status` writes that state;
- :class:`Simulation`: the scheduler over the cluster's snapshot plus template nodes, with the
  same Filter plugins as the scheduler (cluster-autoscaler's ``SchedulerBasedPredicateChecker``).

Neighbours: ``cluster.scheduling`` (snapshot, scheduler), ``cluster.kubelet.device_inputs`` (a
node's devices), ``devices.nodepool`` (settings).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpusched.cluster.apiserver import write
from gpusched.cluster.kubelet.device_inputs import device_inputs, node_devices_for
from gpusched.cluster.scheduling.cache import build_snapshot
from gpusched.cluster.scheduling.profiles import make_scheduler
from gpusched.cluster.apiserver.view import View
from gpusched.devices.nodepool import autoscaling
from gpusched.errors import GpuschedError
from gpusched.objects.node import node_info
from gpusched.objects.pod import pod_info
from gpusched.objects.types import PodInfo


@dataclass(frozen=True, slots=True)
class Group:
    """One autoscaled pool as the autoscaler sees it this pass."""

    pool: dict[str, Any]
    name: str
    min_nodes: int
    max_nodes: int
    delay: float

    @property
    def status(self) -> dict[str, Any]:
        return self.pool.get("status") or {}

    @property
    def nodes(self) -> list[str]:
        return list(self.status.get("nodes") or [])

    @property
    def upcoming(self) -> list[dict[str, Any]]:
        return list(self.status.get("upcoming") or [])

    @property
    def target(self) -> int:
        """The node group's target size (registered + upcoming)."""
        return len(self.nodes) + len(self.upcoming)


def groups(view: View) -> list[Group]:
    """The autoscaled pools, by name (an invalid spec is no node group)."""
    out = []
    for pool in sorted(view.list("NodePool"), key=lambda p: p["metadata"]["name"]):
        try:
            scaling = autoscaling(pool)
        except GpuschedError:
            continue
        if scaling is not None:
            out.append(Group(pool, pool["metadata"]["name"], scaling.min_nodes,
                             scaling.max_nodes, scaling.provisioning_delay))
    return out


def update_status(view: View, group: Group, changes: dict[str, Any]) -> Group:
    """Write ``changes`` into the pool's status; returns the group with the new pool."""
    pool = view.copy("NodePool", group.name) or copy.deepcopy(group.pool)
    status = pool.setdefault("status", {})
    status.update(changes)
    write.update_status(view, pool)
    fresh = view.get("NodePool", group.name) or pool
    return Group(fresh, group.name, group.min_nodes, group.max_nodes, group.delay)


class Simulation:
    """The scheduler over the cluster's snapshot plus template nodes (``scheduling``)."""

    def __init__(self, view: View) -> None:
        self.view = view
        self.snapshot, self.order = build_snapshot(view)
        self.scheduler = make_scheduler(self.snapshot, view)

    def info(self, pod: dict[str, Any]) -> PodInfo:
        return pod_info(pod, self.order.get(pod["metadata"]["uid"], 0))

    def add(self, node: dict[str, Any]) -> int:
        devices = node_devices_for(node, device_inputs(self.view))
        return int(self.snapshot.add_node(node_info(node), devices))

    def check(self, info: PodInfo, row: int) -> tuple[str, ...]:
        """The Filter plugins' reasons ``info`` does not fit ``row`` (empty: it fits)."""
        outcome = self.scheduler.run_filters(None, info, np.array([row], dtype=np.int64))
        if not outcome.status.ok:
            return tuple(outcome.status.reasons) or (outcome.status.message,)
        if len(outcome.feasible):
            return ()
        return tuple(dict.fromkeys(outcome.diagnosis.node_reasons(row)))
