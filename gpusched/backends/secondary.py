"""The secondary scheduler's state: the API's nodes, pods and device ConfigMaps kept in a
scheduler ``Snapshot`` incrementally, and the decisions for the pods it is responsible for.

No Kubernetes client here (``backends.kube`` talks to the API and acts on the decisions); this
module is fed plain dicts, as the API serves them, so it runs in tests without a server.

1. ``replace(kind, items)`` (a list, or a relist after a watch expired) and ``observe(kind,
   type, obj)`` (one watch event) update the :class:`ObjectCache`. Pod events move the pod in the
   snapshot at once (``Snapshot.add_pod`` / ``remove_pod``); a node whose devices stay the same is
   updated in place (``update_node``); anything else (a node added or removed, new devices, a
   device-plugin or mig-parted ConfigMap) marks the snapshot stale, rebuilt before the next pass
   with the cluster layer's ``build_snapshot`` (the same helpers the embedded cluster uses).
2. ``decisions()`` runs ``Scheduler.schedule_one`` over the pending pods whose ``schedulerName``
   has a profile here (other pods only count on their nodes), in the embedded cluster's queue
   order (``cluster.scheduling.pending_pods``: priority, then creation, then name). A pod is
   retried only after the capacity changed since its last attempt (``epoch``), which stands in
   for upstream's unschedulable queue.
3. A bound pod stays *assumed* (held in the snapshot on its node) until the watch shows it bound;
   ``forget(uid)`` undoes that when the bind failed.

Neighbours: ``cluster.scheduling`` (snapshot building, queue order), ``scheduler.runner``;
driven by ``backends.kube``.
"""

from __future__ import annotations

import builtins
import logging
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from gpusched.cluster.controllers.common import is_terminal
from gpusched.cluster.kubelet.device_inputs import node_devices_for
from gpusched.cluster.scheduling.cache import build_snapshot
from gpusched.cluster.scheduling.profiles import pending_pods
from gpusched.objects.assignment import pod_assignment
from gpusched.devices.advertise import MIG_PARTED_CONFIGMAP_NAMES
from gpusched.devices.plugin_config import find_device_plugin_configmap
from gpusched.errors import UsageError
from gpusched.objects.node import node_info
from gpusched.objects.pod import pod_info
from gpusched.objects.types import NO_DEVICES, DeviceAssignment, PodInfo
from gpusched.scheduler.profile import ProfileConfig, build_frameworks
from gpusched.scheduler.runner import Scheduler

log = logging.getLogger(__name__)

KINDS = ("Node", "Pod", "ConfigMap")
BIND, UNSCHEDULABLE, PREEMPT = "bind", "unschedulable", "preempt"


@dataclass(frozen=True)
class Decision:
    """What to do for one pod: bind it, report it unschedulable, or preempt for it."""

    action: str                                  # BIND | UNSCHEDULABLE | PREEMPT
    pod: dict[str, Any]                                    # the pod as last seen
    node: str = ""                               # bind target, or the nominated node
    assignment: DeviceAssignment = NO_DEVICES
    message: str = ""                            # kube-scheduler's FitError text
    victims: tuple[PodInfo, ...] = ()


def _key(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def is_device_configmap(configmap: dict[str, Any]) -> bool:
    """A ConfigMap the device plugin or mig-parted reads (the only ones the cache keeps)."""
    name = (configmap.get("metadata") or {}).get("name")
    return name in MIG_PARTED_CONFIGMAP_NAMES or find_device_plugin_configmap([configmap]) is not None


class ObjectCache:
    """The objects seen through the API, by kind and (namespace, name); ``list(kind)`` is what
    the cluster layer's helpers read from a view."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = {kind: {} for kind in KINDS}

    def list(self, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        items = self.objects.get(kind, {})
        return [items[k] for k in sorted(items) if namespace is None or k[0] == namespace]

    def get(self, kind: str, name: str, namespace: str = "") -> dict[str, Any] | None:
        return self.objects[kind].get((namespace, name))

    def unbound_pods(self) -> builtins.list[dict[str, Any]]:     # builtins: self.list shadows list
        """Unfinished pods without ``spec.nodeName`` (``View.unbound_pods``; a scan here)."""
        return [p for p in self.list("Pod") if not (p.get("spec") or {}).get("nodeName")
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]

    def put(self, kind: str, obj: dict[str, Any]) -> None:
        self.objects[kind][_key(obj)] = obj

    def remove(self, kind: str, obj: dict[str, Any]) -> None:
        self.objects[kind].pop(_key(obj), None)


class SchedulerState:
    """See the module docstring. ``profiles`` name the schedulers this process serves."""

    def __init__(self, profiles: list[ProfileConfig], rng: np.random.Generator,
                 clock: Callable[[], float]) -> None:
        self.names = tuple(p.scheduler_name for p in profiles)
        self.frameworks = build_frameworks(profiles)
        self.rng, self.clock = rng, clock
        self.cache = ObjectCache()
        self.assumed: dict[str, tuple[str, DeviceAssignment]] = {}   # uid -> (node, devices)
        self.attempts: dict[str, int] = {}                           # uid -> epoch of last try
        self.epoch = 0
        self.scheduler: Scheduler | None = None                      # None = snapshot stale
        self._seq: dict[str, int] = {}

    # ---- feeding ------------------------------------------------------------------------------

    def replace(self, kind: str, items: list[dict[str, Any]]) -> None:
        """Replace everything known of ``kind`` (an initial list or a relist)."""
        self.cache.objects[kind] = {}
        for obj in items:
            if kind != "ConfigMap" or is_device_configmap(obj):
                self.cache.put(kind, obj)
        if kind == "Pod":
            live = {p["metadata"]["uid"] for p in items}
            self.assumed = {u: a for u, a in self.assumed.items() if u in live}
        self._stale()

    def observe(self, kind: str, type_: str, obj: dict[str, Any]) -> None:
        """Apply one watch event (``ADDED``, ``MODIFIED``, ``DELETED``)."""
        if kind == "Pod":
            self._observe_pod(type_, obj)
        elif kind == "Node":
            self._observe_node(type_, obj)
        elif kind == "ConfigMap" and is_device_configmap(obj):
            if type_ == "DELETED":
                self.cache.remove(kind, obj)
            else:
                self.cache.put(kind, obj)
            self._stale()

    def _stale(self) -> None:
        self.scheduler = None
        self.epoch += 1

    def _observe_node(self, type_: str, node: dict[str, Any]) -> None:
        if type_ == "DELETED":
            self.cache.remove("Node", node)
            self._stale()
            return
        self.cache.put("Node", node)
        if self.scheduler is None:
            return
        snapshot = self.scheduler.snapshot
        name = node["metadata"]["name"]
        if name not in snapshot.index:
            self._stale()
            return
        old = snapshot.devices[snapshot.index[name]]
        new = node_devices_for(node, self.cache.list("ConfigMap"))
        if not _same_devices(old, new):
            self._stale()
            return
        info = node_info(node)
        if info != snapshot.nodes[snapshot.index[name]]:   # not a mere status heartbeat
            snapshot.update_node(info)                 # labels, taints, cordon, allocatable
            self.epoch += 1

    def _observe_pod(self, type_: str, pod: dict[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        if type_ == "DELETED":
            self.cache.remove("Pod", pod)
            self.assumed.pop(uid, None)
            self.attempts.pop(uid, None)
            self._seq.pop(uid, None)
        else:
            if (pod.get("spec") or {}).get("nodeName"):
                self.assumed.pop(uid, None)          # seen bound: no longer only assumed
            self.cache.put("Pod", pod)
        if self.scheduler is not None:
            self._place(uid, None if type_ == "DELETED" else pod)

    def _place(self, uid: str, pod: dict[str, Any] | None) -> None:
        """Move the pod in the snapshot to where the API (or our assumption) says it is."""
        if self.scheduler is None:
            return
        snapshot = self.scheduler.snapshot
        want = None
        if pod is not None and not is_terminal(pod):
            node = (pod.get("spec") or {}).get("nodeName")
            if node and node in snapshot.index:
                want = node
            elif uid in self.assumed:
                want = self.assumed[uid][0]
        row = snapshot.pod_node.get(uid)
        have = snapshot.names[row] if row is not None else None
        if have == want:
            return
        if have is not None:
            snapshot.remove_pod(uid)
            self.epoch += 1                          # capacity freed: retry the pending pods
        if want is not None and pod is not None:      # want is set only for a pod
            info = pod_info(pod, self._seq_of(uid))
            devices = snapshot.devices[snapshot.index[want]]
            try:
                assignment = pod_assignment(pod, info) if devices is not None else NO_DEVICES
                snapshot.add_pod(info, want, assignment)
            except UsageError:
                self._stale()                        # the full rebuild remaps stale devices

    def _seq_of(self, uid: str) -> int:
        return self._seq.setdefault(uid, len(self._seq))

    # ---- scheduling ---------------------------------------------------------------------------

    def pending(self) -> list[dict[str, Any]]:
        """Our pods that wait for a node, in queue order (assumed ones excluded)."""
        return [p for p in pending_pods(self.cache, self.names)
                if p["metadata"]["uid"] not in self.assumed]

    def _ensure_scheduler(self) -> Scheduler:
        if self.scheduler is None:
            snapshot, order = build_snapshot(self.cache)
            for uid, seq in sorted(order.items(), key=lambda item: item[1]):
                self._seq_of(uid)
            by_uid = {p["metadata"]["uid"]: p for p in self.cache.list("Pod")} if self.assumed else {}
            for uid, (node, assignment) in sorted(self.assumed.items()):
                pod = by_uid.get(uid)
                if pod is not None and node in snapshot.index and uid not in snapshot.pod_node:
                    snapshot.add_pod(pod_info(pod, self._seq_of(uid)), node, assignment)
            self.scheduler = Scheduler(snapshot, self.frameworks, rng=self.rng, clock=self.clock)
        return self.scheduler

    def decisions(self) -> list[Decision]:
        """One pass over the pending pods (see the module docstring). Binds are assumed at once;
        a preemption ends the pass (the victims' deletion changes capacity)."""
        pending = self.pending()
        live = {p["metadata"]["uid"] for p in pending}
        self.attempts = {u: e for u, e in self.attempts.items() if u in live}
        todo = [p for p in pending if self.attempts.get(p["metadata"]["uid"]) != self.epoch]
        if not todo:
            return []
        scheduler = self._ensure_scheduler()
        out: list[Decision] = []
        for pod in todo:
            uid = pod["metadata"]["uid"]
            result = scheduler.schedule_one(pod_info(pod, self._seq_of(uid)))
            if result.scheduled:
                self.assumed[uid] = (result.node, result.assignment)
                out.append(Decision(BIND, pod, result.node, result.assignment))
                continue
            self.attempts[uid] = self.epoch
            if result.nominated_node:
                out.append(Decision(PREEMPT, pod, result.nominated_node, message=result.message,
                                    victims=tuple(result.victims)))
                break
            out.append(Decision(UNSCHEDULABLE, pod, message=result.message))
        return out

    def forget(self, uid: str) -> None:
        """Undo the assumption of a pod whose binding failed; it is retried on the next pass."""
        self.assumed.pop(uid, None)
        self.attempts.pop(uid, None)
        if self.scheduler is not None and uid in self.scheduler.snapshot.pod_node:
            self.scheduler.snapshot.remove_pod(uid)


def _same_devices(old: Any, new: Any) -> bool:
    """Whether a node update leaves its devices as they were (same IDs, same resources)."""
    if old is None or new is None:
        return old is None and new is None
    return (dict(old.advertised) == dict(new.advertised)
            and [(d.device_id, d.resource) for d in old.devices]
            == [(d.device_id, d.resource) for d in new.devices])
