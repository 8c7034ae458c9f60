"""Queueing hints: which cluster event may help a pod the scheduling queue holds as unschedulable.

kube-scheduler keeps, with each pod no node fits, the plugins that rejected it
(``UnschedulablePlugins``); on a cluster event it asks each of them (``QueueingHintFn``,
``pkg/scheduler/framework/types.go`` ``ClusterEvent``/``QueueingHint``) whether the event may make
the pod schedulable, and moves the pod only on a ``Queue`` (``scheduling_queue.go``
``isPodWorthRequeuing``). Here the events are the cluster's capacity log (``[epoch, node,
priority]``: a pod of ``priority`` left ``node``; ``"*"``: a Node, PersistentVolume(Claim) or
StorageClass changed, which queues every pod, as upstream moves pods on the node events its
plugins register):

- :func:`hint_kind`: what a pod-left event can do for the pod, from its rejecting plugins:
  ``ALWAYS`` (unknown, or a plugin that reads other pods: InterPodAffinity, PodTopologySpread,
  NodePorts, volumes ...), ``NEVER`` (node-only plugins: NodeAffinity, TaintToleration,
  NodeName, NodeUnschedulable register no pod event upstream) or ``RESOURCES``
  (NodeResourcesFit / GpuDevices: :func:`pod_left_hint`);
- :func:`pod_left_hint` is NodeResourcesFit's ``isSchedulableAfterPodEvent``
  (``pkg/scheduler/framework/plugins/noderesources/fit.go``), narrowed where it stays sound (it
  never skips a pod that could now be bound or could now preempt): the node's free resources,
  plus what the pod's lower-priority neighbours hold when it may preempt, must cover its cpu,
  memory, a pod slot and its GPU milli; a lower-priority pod leaving does not help a pod whose
  last dry run found no victims anywhere (it was already counted as removable).
- :class:`RoomScreen`: the same test for many pods and one event, the node's room computed once
  per (node, pod priority): what keeps an event's cost independent of how its work is shared
  among the pods waiting.

Neighbours: ``scheduler.queue`` (asks these), ``scheduler.snapshot`` (the room),
``scheduler.preemption`` (the dry run's messages).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from gpusched.scheduler.preemption import MSG_POLICY_NEVER, MSG_TERMINATING
from gpusched.scheduler.preemption_fit import POD_BLIND_FILTERS
from gpusched.scheduler.snapshot import CPU, MEMORY, PODS, WHOLE_GPU_MILLI

if TYPE_CHECKING:
    from gpusched.objects.types import PodInfo
    from gpusched.scheduler.framework import ScheduleResult
    from gpusched.scheduler.snapshot import Snapshot

RESOURCE_PLUGINS = frozenset({"NodeResourcesFit", "GpuDevices"})
ANY_NODE = "*"
ALWAYS, NEVER, RESOURCES = "always", "never", "resources"


def rejecting_plugins(result: ScheduleResult) -> list[str]:
    """The plugins that rejected the pod (upstream ``UnschedulablePlugins``), sorted."""
    diagnosis = result.diagnosis
    if diagnosis is None:
        return []
    if diagnosis.pre_filter_status is not None:
        return [diagnosis.pre_filter_status.plugin] if diagnosis.pre_filter_status.plugin else []
    return sorted({r.plugin for r in diagnosis.rejections if r.plugin})


def dry_run_found_nothing(result: ScheduleResult) -> bool:
    """DefaultPreemption ran over every potential node and found no candidate."""
    message = result.diagnosis.post_filter_message if result.diagnosis is not None else ""
    return (message.startswith("preemption: ") and not result.nominated_node
            and MSG_POLICY_NEVER not in message and MSG_TERMINATING not in message)


def hint_kind(plugins: list[str] | tuple[str, ...]) -> str:
    """``ALWAYS``, ``NEVER`` or ``RESOURCES``: what a pod leaving a node may do for a pod these
    plugins rejected (see the module docstring)."""
    rejected = set(plugins)
    if not rejected or rejected - RESOURCE_PLUGINS - POD_BLIND_FILTERS:
        return ALWAYS
    return RESOURCES if rejected & RESOURCE_PLUGINS else NEVER


def pod_left_hint(snapshot: Snapshot, info: PodInfo, record: dict[str, Any], node: str,
                  priority: int) -> bool:
    """Queue (True) or skip: a pod of ``priority`` left ``node`` (see the module docstring)."""
    return RoomScreen(snapshot).helps(info, record, node, priority)


def room_may_fit(snapshot: Snapshot, info: PodInfo, row: int, may_preempt: bool) -> bool:
    """A necessary condition for ``info`` to fit ``row`` now, with every pod it could preempt
    gone when ``may_preempt``: cpu, memory, one pod slot, and its GPU milli in total."""
    vec = snapshot.request_vector(info)
    return _Room.of(snapshot, row, info.priority, may_preempt).covers(
        int(vec[CPU]), int(vec[MEMORY]), gpu_milli_of(info))


def gpu_milli_of(info: PodInfo) -> int:
    """The milli-GPUs a pod asks for (or holds) in all: shares x count, or whole GPUs x 1000."""
    if info.gpu_milli:
        return int(info.gpu_milli) * int(info.gpu_count or 1)
    return WHOLE_GPU_MILLI * int(info.requests.get("nvidia.com/gpu", 0))


@dataclass(frozen=True)
class _Room:
    """What a node offers a pod of one priority: free pod slots, cpu, memory, and GPU milli
    (None: shared or partitioned devices, not judged here), preemptible pods' share included."""

    pods: int
    cpu: int
    memory: int
    gpu_milli: int | None

    @classmethod
    def of(cls, snapshot: Snapshot, row: int, priority: int, may_preempt: bool) -> _Room:
        free = snapshot.free[row].astype(np.int64)
        if may_preempt:
            free[: len(snapshot.resource_names)] += snapshot.requested_below(
                priority, np.array([row], dtype=np.int64))[0]
        gpu: int | None = None
        if snapshot.gpu_plain[row]:
            gpu = int(np.clip(snapshot.gpu_free_milli[row], 0, None).sum())
            if may_preempt:
                gpu += sum(gpu_milli_of(other) for other in snapshot.pods_on(row)
                           if other.priority < priority)
        return cls(int(free[PODS]), int(free[CPU]), int(free[MEMORY]), gpu)

    def covers(self, cpu: int, memory: int, gpu_milli: int) -> bool:
        if self.pods < 1 or self.cpu < cpu or self.memory < memory:
            return False
        return not gpu_milli or self.gpu_milli is None or self.gpu_milli >= gpu_milli


class RoomScreen:
    """:func:`pod_left_hint` for many pods against one snapshot: each node's room is computed
    once per (node, pod priority, may preempt), each pod's demand once."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self._rooms: dict[tuple[int, int, bool], _Room] = {}
        self._demand: dict[str, tuple[int, int, int]] = {}

    def helps(self, info: PodInfo, record: dict[str, Any], node: str, priority: int) -> bool:
        """:func:`pod_left_hint` on this screen's snapshot."""
        kind = hint_kind(record.get("plugins") or ())
        if kind != RESOURCES:
            return kind == ALWAYS
        if not node:
            return False                # fit.go: an unscheduled, unnominated pod was deleted
        row = self.snapshot.index.get(node)
        if row is None:
            return True
        may_preempt = info.preemption_policy != "Never"
        if may_preempt and record.get("dry") and priority < info.priority:
            return False                # its dry run already counted that pod as removable
        key = (row, info.priority, may_preempt)
        room = self._rooms.get(key)
        if room is None:
            room = self._rooms[key] = _Room.of(self.snapshot, row, info.priority, may_preempt)
        demand = self._demand.get(info.uid)
        if demand is None:
            vec = self.snapshot.request_vector(info)
            demand = self._demand[info.uid] = (int(vec[CPU]), int(vec[MEMORY]), gpu_milli_of(info))
        return room.covers(*demand)
