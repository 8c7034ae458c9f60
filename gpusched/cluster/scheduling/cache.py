"""The scheduler's cache in the embedded cluster: one ``Snapshot`` per view, kept current from
what changed.

Upstream kube-scheduler keeps an incrementally updated cache of nodes and pods
(``pkg/scheduler/backend/cache/cache.go``: ``AddPod``/``UpdatePod``/``RemovePod`` from the
informers' events, ``UpdateSnapshot`` copying only the nodes whose generation moved). A
scheduling pass here used to rebuild its ``Snapshot`` from every Node and every bound pod
(:func:`build_snapshot`: 0.3 s at 1,213 nodes), which made a trace replay cost
arrivals x cluster size. :func:`cached_snapshot` keeps the snapshot in ``view.memo`` and applies
only the keys changed since its last call (``View.take_unsnapped``):

- a changed Node, ConfigMap or ClusterPolicy, or a GPU Operator pod (what every node's devices
  derive from, ``cluster.device_inputs``) rebuilds it (``build_snapshot``);
- a changed or deleted Pod leaves the snapshot if it was there (``remove_pod``), and comes back
  with its current ``PodInfo`` and devices when it is bound to a known node and not finished,
  exactly as ``build_snapshot`` adds it; pods the scheduler assumed in the previous pass are
  re-added from their bound body the same way.
- the creation order (``PodInfo.creation_seq``) is :func:`creation_number` of each pod,
  which needs no other pod: a changed pod is renumbered alone.

The result equals a fresh ``build_snapshot`` node for node and pod for pod
(``tests/cluster/test_snapshot_cache.py``). The snapshot is the scheduler's own: callers that
change a snapshot for a what-if (``explain``, ``whatif pod``) keep building their own.

Building it (:func:`build_snapshot`): every Node (``node_info``) with its device model
(``devices.advertise.node_device_state`` from the node and the ConfigMaps), every bound,
unfinished pod held on its node with the devices recorded in its assignment annotations.

Neighbours: ``cluster.scheduling.host`` (the scheduler's pass), ``apiserver.view``,
``scheduler.snapshot``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpusched.cluster.controllers.common import is_terminal
from gpusched.cluster.kubelet.device_inputs import device_inputs, node_devices_for
from gpusched.cluster.apiserver.store import seconds_of
from gpusched.cluster.apiserver.view import Key, ObjectSource, View
from gpusched.devices.dra_classes import dra_managed
from gpusched.devices.node import NodeDevices
from gpusched.devices.operator import OPERATOR_NAMESPACE
from gpusched.errors import GpuschedError, UsageError
from gpusched.objects.assignment import pod_assignment
from gpusched.objects.node import node_info
from gpusched.objects.pod import pod_info
from gpusched.objects.types import NO_DEVICES, DeviceAssignment, PodInfo
from gpusched.scheduler.snapshot import Snapshot

if TYPE_CHECKING:
    from gpusched.devices.model import DeviceModel

log = logging.getLogger(__name__)


def creation_key(pod: dict[str, Any]) -> tuple[Any, ...]:
    meta = pod["metadata"]
    return (meta.get("creationTimestamp", ""), int(meta.get("resourceVersion", 0) or 0),
            meta["name"])


def creation_number(pod: dict[str, Any]) -> int:
    """``PodInfo.creation_seq``: a number that orders pods as :func:`creation_key` does
    (creationTimestamp, whole seconds, then resourceVersion), without sorting every pod, so
    the cache can number a changed pod alone. Only compared, never shown."""
    meta = pod["metadata"]
    try:
        seconds = int(seconds_of(str(meta.get("creationTimestamp") or "")))
    except (ValueError, GpuschedError):
        seconds = 0
    return (seconds << 40) + int(meta.get("resourceVersion", 0) or 0)


def bound_pods(view: ObjectSource) -> list[dict[str, Any]]:
    return [p for p in view.list("Pod")
            if (p.get("spec") or {}).get("nodeName") and not is_terminal(p)]


def _scheduler_devices(node: dict[str, Any], configmaps: Any) -> Any:
    """The devices the scheduler may hand out on ``node``: the device plugin's; none where
    NVIDIA's DRA driver manages the GPUs (they are ResourceSlice devices, allocated through
    claims alone), so a gpusched.io/gpu-milli share never lands on a GPU a claim holds."""
    if dra_managed((node.get("metadata") or {}).get("labels")):
        name = str((node.get("metadata") or {}).get("name", ""))
        return NodeDevices.build(name, None, 0)
    return node_devices_for(node, configmaps)


def build_snapshot(view: ObjectSource) -> tuple[Snapshot, dict[str, int]]:
    """A Snapshot of every node and every bound, unfinished pod (with its devices held)."""
    snapshot = Snapshot()
    configmaps = device_inputs(view)
    for node in view.list("Node"):
        snapshot.add_node(node_info(node), _scheduler_devices(node, configmaps))
    order = {p["metadata"]["uid"]: creation_number(p) for p in view.list("Pod")}
    for pod in bound_pods(view):
        node_name = pod["spec"]["nodeName"]
        if node_name not in snapshot.index:
            continue
        info = readable_pod_info(pod, order.get(pod["metadata"]["uid"], 0))
        if info is not None:
            place_bound_pod(snapshot, pod, info, node_name)
    return snapshot, order


def readable_pod_info(pod: dict[str, Any], seq: int = 0) -> PodInfo | None:
    """``pod_info``, or None (logged) for a stored pod validation would refuse (a hand-edited
    state file): one bad object is left out of the pass, never fails it for every pod."""
    try:
        return pod_info(pod, seq)
    except GpuschedError as err:
        meta = pod.get("metadata") or {}
        log.warning("pod %s/%s left out: %s", meta.get("namespace"), meta.get("name"), err)
        return None


def place_bound_pod(snapshot: Snapshot, pod: dict[str, Any], info: PodInfo, node_name: str) -> None:
    """Add a bound pod to ``snapshot`` holding its recorded devices; a record that is malformed
    or names devices no longer advertised holds equivalent free devices (``_remapped``)."""
    devices = snapshot.devices[snapshot.index[node_name]]
    try:
        assignment = pod_assignment(pod, info) if devices is not None else NO_DEVICES
        snapshot.add_pod(info, node_name, assignment)
    except UsageError as err:
        log.warning("pod %s: %s", info.key, err)
        if info.uid in snapshot.pod_node:
            snapshot.remove_pod(info.uid)     # undo the partial add, then keep the pod's share
        snapshot.add_pod(info, node_name, _remapped(devices, info))


def _remapped(devices: DeviceModel | None, info: PodInfo) -> DeviceAssignment:
    """Devices standing in for a running pod's after a re-advertisement removed its device IDs.

    A plugin restart (new sharing config or MIG layout) does not stop running pods: they keep
    using their devices, and the kubelet keeps counting them. The scheduler's view holds an
    equivalent free device for the pod so nothing is double-counted; when none is free the pod
    is accounted by its requests alone.
    """
    try:
        assignment = devices.allocate(info) if devices is not None else None
    except UsageError:
        assignment = None
    if assignment is None:
        log.warning("pod %s: its devices are gone after re-advertising; counted by requests only",
                    info.key)
        return NO_DEVICES
    result: DeviceAssignment = assignment
    return result


def node_devices(view: View, node_name: str) -> DeviceModel | None:
    """The devices of one node with the pods holding them (for describe and tests)."""
    snapshot, _ = build_snapshot(view)
    if node_name not in snapshot.index:
        return None
    return snapshot.devices[snapshot.index[node_name]]


MEMO_KEY = "scheduler-snapshot"
REBUILD_KINDS = frozenset({"Node", "ConfigMap", "ClusterPolicy"})


@dataclass
class _Cache:
    snapshot: Snapshot
    order: dict[str, int]
    placed: dict[Key, str] = field(default_factory=dict)   # pod key -> uid in the snapshot
    tracked: set[str] = field(default_factory=set)         # the uids in ``placed``
    mark: tuple[int, int] | None = None                   # snapshot journal at the last call


def _rebuild(view: View) -> _Cache:
    view.take_unsnapped()
    snapshot, order = build_snapshot(view)
    pods = view.list("Pod")
    placed = {("Pod", p["metadata"]["namespace"], p["metadata"]["name"]): p["metadata"]["uid"]
              for p in pods if p["metadata"]["uid"] in snapshot.pod_node}
    return _Cache(snapshot, order, placed, set(placed.values()), snapshot.journal_mark())


def _needs_rebuild(keys: set[Key]) -> bool:
    return any(k[0] in REBUILD_KINDS or (k[0] == "Pod" and k[1] == OPERATOR_NAMESPACE)
               for k in keys)


def cached_snapshot(view: View) -> tuple[Snapshot, dict[str, int]]:
    """The scheduler's snapshot and creation order, current with the view (see the module
    docstring). Callers may assume pods into it: those come back as changed pods."""
    cache: Any = view.memo.get(MEMO_KEY, {}).get("cache")
    changed = view.take_unsnapped()
    if cache is None or _needs_rebuild(changed):
        cache = _rebuild(view)
        view.memo[MEMO_KEY] = {"cache": cache}
        return cache.snapshot, cache.order
    pod_keys = {k for k in changed if k[0] == "Pod"} | _adopt_assumed(cache)
    for key in sorted(pod_keys):
        _sync_pod(view, cache, key)
    cache.mark = cache.snapshot.journal_mark()
    return cache.snapshot, cache.order


def _adopt_assumed(cache: _Cache) -> set[Key]:
    """Pods the scheduler assumed into the snapshot since the last call (``add_pod`` during a
    pass, not through this cache), found on the rows the snapshot's journal says changed:
    tracked under their key and synced, so a pod that was bound and then deleted (or replaced
    under its name) before this call leaves the snapshot instead of holding its node's
    resources and devices for good. When a pass's what-ifs (the dry runs, the nominated pods
    counted at each attempt) touched many rows, the untracked pods are found by their uids
    instead: the same pods in the same order (each was added on a row it touched)."""
    snapshot = cache.snapshot
    rows = snapshot.rows_touched_since(cache.mark)
    if rows is None:
        candidates = list(snapshot.pod_node)
    elif len(rows) * 64 > len(cache.tracked):  # many rows touched: look up the untracked uids
        untracked = snapshot.pod_node.keys() - cache.tracked
        held = sorted({snapshot.pod_node[uid] for uid in untracked})
        candidates = [p.uid for r in held for p in snapshot.pods_on(r) if p.uid in untracked]
    else:
        candidates = [p.uid for r in rows.tolist() if r < snapshot.num_nodes
                      for p in snapshot.pods_on(int(r))]
    keys: set[Key] = set()
    for uid in candidates:
        info = snapshot.pod(uid)
        if uid in cache.tracked or info is None:
            continue
        key: Key = ("Pod", info.namespace, info.name)
        stale = cache.placed.get(key)
        if stale is not None:
            cache.tracked.discard(stale)
            if stale in snapshot.pod_node:
                snapshot.remove_pod(stale)
        cache.placed[key] = uid
        cache.tracked.add(uid)
        keys.add(key)
    return keys


def _sync_pod(view: View, cache: _Cache, key: Key) -> None:
    """One changed pod: out of the snapshot, then back in as ``build_snapshot`` would add it."""
    snapshot = cache.snapshot
    body = view.objects.get(key)
    gone = view.gone(key)
    if gone is not None and body is None:
        cache.order.pop(gone["metadata"]["uid"], None)
    if body is not None:
        cache.order[body["metadata"]["uid"]] = creation_number(body)
    old_uid = cache.placed.pop(key, None)
    cache.tracked.discard(str(old_uid))
    uids = {old_uid, body["metadata"]["uid"] if body is not None else None} - {None}
    for uid in uids:
        if uid in snapshot.pod_node:
            snapshot.remove_pod(str(uid))
    if body is None or is_terminal(body):
        return
    node_name = (body.get("spec") or {}).get("nodeName")
    if not node_name or node_name not in snapshot.index:
        return
    uid = body["metadata"]["uid"]
    info = readable_pod_info(body, cache.order.get(uid, 0))
    if info is None:
        return
    place_bound_pod(snapshot, body, info, node_name)
    cache.placed[key] = uid
    cache.tracked.add(uid)
