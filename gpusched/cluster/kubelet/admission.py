"""Kubelet admission: what each node's kubelet does with the pods bound to it before they run.

Upstream (``pkg/kubelet/kubelet.go`` ``HandlePodAdditions``/``canAdmitPod``/``rejectPod``) admits
the pods bound to a node one at a time, oldest ``creationTimestamp`` first, against the pods it
has already admitted. The admit handlers run in the order ``NewMainKubelet`` registers them:

1. the device manager (``pkg/kubelet/cm/devicemanager/manager.go`` ``devicesToAllocate``, wrapped
   by ``pkg/kubelet/cm/admission/errors.go`` as ``UnexpectedAdmissionError`` / ``Allocate failed
   due to <err>, which is unexpected``): ``requested number of devices unavailable for <res>.
   Requested: <n>, Available: <m>``; the NVIDIA plugin's ``failRequestsGreaterThanOne`` refusal
   (``devices.node.NodeDevices.fail_requests_greater_than_one``) comes back through the same path.
   Only resources the device plugin advertises are allocated (``isDevicePluginResource``).
2. the predicate handler (``pkg/kubelet/lifecycle/predicate.go`` ``Admit``/``generalFilter``):
   extended resources the node does not list in allocatable are dropped
   (``removeMissingExtendedResources``, for cluster-level resources the scheduler ignores;
   upstream's comment calls admitting a pinned pod that way a caveat "while it should" fail),
   except GPU resources (``nvidia.com/*``, ``gpusched.io/gpu-milli``): a device plugin serves
   them on the node, so they are never cluster-level, and a pod pinned by ``spec.nodeName`` to a
   node that does not advertise them fails ``OutOf<resource>`` with capacity 0, as it does on a
   node that lists them at 0 (gpusched's difference: no GPU pod runs without its devices); then
   ``scheduler.AdmissionCheck`` (NodeResourcesFit: pods, cpu, memory, ephemeral-storage, then
   other resources by name; NodeAffinity: nodeSelector and required node affinity) and the
   NoExecute taints (TaintToleration). The first failure decides: ``OutOf<resource>`` with
   ``Node didn't have enough resource: <res>, requested: <n>, used: <n>, capacity: <n>``, or the
   plugin name with ``Predicate <plugin> failed: <reason>``.

A rejected pod gets phase Failed, the reason, ``Pod was rejected: <message>`` and a Warning event
of that reason from the kubelet (``rejectPod``). It is not retried.

Device holdings are the cluster's own: a pod's ``gpusched.io/assigned-*`` annotations are written
only by the scheduler's bind and by this module (admission strips a user's, see
``cluster.admission``), both from ``NodeDevices.allocate``, the scheduler's one allocator; a
fractional pod's share is its request (``objects.assignment.pod_assignment``). A record that
cannot be read (only a hand-edited state file holds one) is treated as devices gone, and a pod
that cannot be parsed is left alone and logged: one bad object never fails the pass. Before new pods are admitted, the holdings of the pods already running
are re-checked against what the device plugin advertises now (a re-advertisement after a config
change, a MIG layout change, fewer time-slicing replicas), oldest start first: a pod whose
devices are gone keeps running on an equivalent free device of the *same* GPUs (its containers
still use those GPUs; the annotations are rewritten), and when there is none it is failed as the
kubelet fails it when re-admitting it after a device-plugin restart: ``previously allocated
devices are no longer healthy; cannot allocate unhealthy devices <res>``. So no device, replica or
MIG instance is ever held by two live pods, and no node is over-committed.

gpusched's differences: devices are allocated per pod (upstream: per container; the message is
worked out per container as upstream's, see ``_unavailable``); critical pods do not preempt at the
kubelet (``CriticalPodAdmissionHandler``); fractional shares (``gpusched.io/gpu-milli``) are
gpusched's own and report ``requested number of devices unavailable for gpusched.io/gpu-milli.
Requested: <milli>, Available: <largest free milli>``.

Neighbours: ``cluster.scheduling`` (node devices, bind), ``kubelet.pod_lifecycle`` (starts the
pods admitted here); run by ``cluster.cluster`` in every settle round before the pod lifecycle.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from typing import Any

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.changes import Changes
from gpusched.cluster.controllers.common import TERMINAL, creation_order
from gpusched.cluster.apiserver.notes import capacity_changed
from gpusched.cluster.apiserver.view import View
from gpusched.devices.operator import OPERATOR_NAMESPACE
from gpusched.errors import GpuschedError, UsageError
from gpusched.objects.assignment import assignment_annotations, device_requests, pod_assignment
from gpusched.objects.node import node_info
from gpusched.objects.pod import pod_info, pod_info_like
from gpusched.objects.selectors import map_matches, node_selector_matches
from gpusched.objects.types import (ANN_ASSIGNED_DEVICES, ANN_ASSIGNED_GPUS, ANN_GPU_MILLI, ANN_START_TIME,
                                    NO_DEVICES, RESOURCE_GPU_MILLI, DeviceAssignment, NodeInfo,
                                    PodInfo)

log = logging.getLogger(__name__)
UNEXPECTED = "UnexpectedAdmissionError"
_EMPTY: dict[str, Any] = {}
NATIVE_ORDER = ("cpu", "memory", "ephemeral-storage")
OUT_OF = {"cpu": "OutOfcpu", "memory": "OutOfmemory",
          "ephemeral-storage": "OutOfephemeral-storage", "pods": "OutOfpods"}
GPU_RESOURCE_PREFIXES = ("nvidia.com/", RESOURCE_GPU_MILLI)
NODE_AFFINITY_REASON = "node(s) didn't match Pod's node affinity/selector"
TAINT_REASON = "node(s) had taints that the pod didn't tolerate"


@dataclass(frozen=True, slots=True)
class Rejection:
    """A kubelet admission failure: ``reason`` (``OutOfcpu``, ``NodeAffinity`` ...) and message."""

    reason: str
    message: str


def admit_bound_pods(view: View, changes: Changes | None = None) -> None:
    """Re-check running pods' devices, then admit or reject the pods waiting on each node:
    every node, or (``changes``) the changed nodes and the nodes of changed pods, unless a
    device-plugin input changed (ConfigMaps, ClusterPolicy, the operator's pods)."""
    from gpusched.cluster.kubelet.device_inputs import device_inputs
    configmaps = device_inputs(view)     # ConfigMaps, ClusterPolicy, each plugin's loaded config
    if changes is None or device_inputs_changed(changes):
        pods = view.list("Pod")
    else:
        pods = [view.objects[k] for k in sorted(k for n in changes.node_names()
                                                for k in view.live_pods_on(n))]
    by_node, newest = _bound_by_node(pods)
    # A node whose object, ConfigMaps and bound pods are those of the last pass has nothing new
    # to admit or re-check (this runs at every settle round; see kubelet.device_plugin).
    # The key changes iff one of them changed: every create or update takes a resourceVersion
    # above all others, and a pod leaving the node (deleted, terminal) lowers the count.
    seen = view.memo.setdefault("kubelet", {})
    cm_versions = (tuple(c["metadata"].get("resourceVersion") for c in configmaps.configmaps),
                   configmaps.policy_version)
    for node_name, pods in sorted(by_node.items()):
        node = view.get("Node", node_name)
        if node is None:
            continue                 # no kubelet for it: the pod waits, as upstream
        pin = repr(configmaps.pinned.get(node_name, "")) if node_name in configmaps.pinned else None
        key = (node["metadata"].get("resourceVersion"), cm_versions, pin, len(pods),
               newest[node_name])
        if seen.get(node_name) == key:
            continue
        before = view.mutations
        info, devices = _node_state(view, node, configmaps, key[:3])
        _NodeKubelet(view, info, devices).run(pods)
        seen[node_name] = key if view.mutations == before else None


def _bound_by_node(pods: list[dict[str, Any]]) -> tuple[dict[str, list[dict[str, Any]]], dict[str, int]]:
    """The pods bound to each node and not finished, and the newest resourceVersion among them."""
    by_node: dict[str, list[dict[str, Any]]] = {}
    newest: dict[str, int] = {}
    for pod in pods:
        node_name = (pod.get("spec") or _EMPTY).get("nodeName")
        if not node_name or (pod.get("status") or _EMPTY).get("phase") in TERMINAL:
            continue
        by_node.setdefault(node_name, []).append(pod)
        version = int(pod["metadata"].get("resourceVersion") or 0)
        if version > newest.get(node_name, 0):
            newest[node_name] = version
    return by_node, newest


def _pod_info(view: View, pod: dict[str, Any]) -> PodInfo | None:
    """``pod_info(pod)``, once per (uid, resourceVersion): the kubelet re-checks every running
    pod of a node at each pass, and a pod's info changes only with its body. None (logged) for
    a stored pod validation would refuse (a hand-edited state file): it is left alone."""
    memo: dict[Any, Any] = view.memo.setdefault("kubelet-pods", {})
    meta = pod["metadata"]
    key = (meta.get("uid"), meta.get("resourceVersion"))
    info: PodInfo | None = memo.get(key)
    if info is None:
        if len(memo) > 100_000:
            memo.clear()
        try:
            info = memo[key] = _pod_info_again(view, pod)
        except GpuschedError as err:
            log.warning("kubelet: pod %s/%s left alone: %s", meta.get("namespace"),
                        meta.get("name"), err)
            return None
    return info


def _pod_info_again(view: View, pod: dict[str, Any]) -> PodInfo:
    """``pod_info(pod)``, its spec's parts kept from the pod's last reading when its spec (its
    ``metadata.generation``: ``View.update`` raises it at every change of the spec) and its
    gpu-milli annotation are unchanged (``objects.pod.pod_info_like``): binding and starting a
    pod write its metadata and status, and the kubelet reads it after each."""
    memo: dict[Any, Any] = view.memo.setdefault("kubelet-pod-specs", {})
    meta = pod["metadata"]
    milli = (meta.get("annotations") or _EMPTY).get(ANN_GPU_MILLI)
    generation = meta.get("generation")
    prior = memo.get(meta.get("uid"))
    if generation is not None and prior is not None and prior[0] == generation and prior[1] == milli:
        return pod_info_like(prior[2], pod)
    if len(memo) > 100_000:
        memo.clear()
    info = pod_info(pod)
    memo[meta.get("uid")] = (generation, milli, info)
    return info


def _node_state(view: View, node: dict[str, Any], configmaps: Any,
                key: tuple[Any, ...]) -> tuple[NodeInfo, Any]:
    """The node's ``NodeInfo`` and a fresh copy of its advertised devices, derived once per
    (node resourceVersion, ConfigMaps, pinned config) and cloned for each pass."""
    from gpusched.cluster.kubelet.device_inputs import node_devices_for
    cache = view.memo.setdefault("kubelet-nodes", {})
    name = node["metadata"]["name"]
    hit = cache.get(name)
    if hit is None or hit[0] != key:
        hit = cache[name] = (key, node_info(node), node_devices_for(node, configmaps))
    devices = hit[2]
    return hit[1], (devices.clone() if devices is not None else None)


def device_inputs_changed(changes: Changes) -> bool:
    """A change to what every node's devices derive from (``cluster.kubelet.device_inputs``)."""
    return any(k[0] in ("ConfigMap", "ClusterPolicy") or (k[0] == "Pod" and k[1] == OPERATOR_NAMESPACE)
               for k in changes.keys)


def _admitted(pod: dict[str, Any]) -> bool:
    """The kubelet admitted the pod once it started (phase Running or a start time)."""
    status = pod.get("status") or {}
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return status.get("phase") == "Running" or ANN_START_TIME in annotations


def _start_order(pod: dict[str, Any]) -> tuple[Any, ...]:
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    try:
        started = float(annotations.get(ANN_START_TIME, "inf"))
    except ValueError:
        started = float("inf")
    return (started, *creation_order(pod))


class _NodeKubelet:
    """One node's kubelet for one pass: its devices, what its admitted pods use."""

    def __init__(self, view: View, node: NodeInfo, devices: Any) -> None:
        self.view, self.node, self.devices = view, node, devices
        self.used: dict[str, int] = {}
        self.pod_count = 0

    def run(self, pods: list[dict[str, Any]]) -> None:
        for pod in sorted((p for p in pods if _admitted(p)), key=_start_order):
            rejection = self._keep_devices(pod)
            if rejection is not None:
                reject(self.view, pod, rejection)
        for pod in sorted((p for p in pods if not _admitted(p)), key=creation_order):
            rejection = self._admit(pod)
            if rejection is not None:
                reject(self.view, pod, rejection)

    def _charge(self, info: PodInfo) -> None:
        for name, amount in info.requests.items():
            self.used[name] = self.used.get(name, 0) + amount
        self.pod_count += 1

    # ---- running pods: re-check holdings after a re-advertisement ----------------------------

    def _keep_devices(self, pod: dict[str, Any]) -> Rejection | None:
        info = _pod_info(self.view, pod)
        if info is None:
            return None
        if self.devices is None:
            self._charge(info)
            return None
        current = _assignment(pod, info)
        if current is not None and self._try_hold(info.uid, current):
            self._charge(info)
            return None
        remapped = self._equivalent(info, current)
        if remapped is None:
            return Rejection(UNEXPECTED, allocate_failed(
                "previously allocated devices are no longer healthy; cannot allocate unhealthy "
                f"devices {_first_resource(info)}"))
        self.devices.hold(info.uid, remapped)
        _write_assignment(self.view, pod, remapped)
        log.info("pod %s keeps running on %s after re-advertising", info.key,
                 ",".join(remapped.device_ids))
        self._charge(info)
        return None

    def _try_hold(self, uid: str, assignment: DeviceAssignment) -> bool:
        try:
            self.devices.hold(uid, assignment)
        except UsageError:
            return False
        return True

    def _equivalent(self, info: PodInfo, current: DeviceAssignment | None) -> DeviceAssignment | None:
        """Free devices of the same GPUs serving the pod's request, or None. An unreadable
        record (``current`` None) names no GPUs: any free devices serving the request."""
        if current is not None and (current.empty or not current.gpu_indices):
            return None
        gpus = None if current is None else tuple(current.gpu_indices)
        try:
            found = self.devices.allocate(info, gpus=gpus)
        except UsageError:
            return None
        if found is None or found.empty or (gpus is not None and set(found.gpu_indices) - set(gpus)):
            return None
        result: DeviceAssignment | None = found
        return result

    # ---- new pods ----------------------------------------------------------------------------

    def _admit(self, pod: dict[str, Any]) -> Rejection | None:
        info = _pod_info(self.view, pod)
        if info is None:
            return None
        assignment, rejection = self._allocate(pod, info)
        if rejection is None:
            rejection = self._predicates(pod, info)
        if rejection is not None:
            if assignment is not None:
                self.devices.release(info.uid)
            return rejection
        if assignment is not None and assignment != _assignment(pod, info):
            _write_assignment(self.view, pod, assignment)
        self._charge(info)
        return None

    def _allocate(self, pod: dict[str, Any], info: PodInfo) -> tuple[DeviceAssignment | None, Rejection | None]:
        """The device manager's admit handler: hold the scheduler's choice when it is still
        free, else allocate from the free devices (the kubelet picks devices itself)."""
        devices = self.devices
        if devices is None or not _plugin_request(devices, info):
            return None, None
        refusal = devices.fail_requests_greater_than_one(info)
        if refusal:
            return None, Rejection(UNEXPECTED, refusal)
        chosen = _assignment(pod, info)
        if chosen is not None and not chosen.empty and self._try_hold(info.uid, chosen):
            return chosen, None
        try:
            found = devices.allocate(info)
        except UsageError:
            found = None
        if found is None:
            return None, Rejection(UNEXPECTED, allocate_failed(_unavailable(devices, info, pod)))
        devices.hold(info.uid, found)
        return found, None

    def _predicates(self, pod: dict[str, Any], info: PodInfo) -> Rejection | None:
        """``generalFilter``: resources, node affinity, then NoExecute taints."""
        short = self._insufficient(info)
        if short is not None:
            return short
        node = self.node
        if not (map_matches(info.node_selector, node.labels) and (
                info.required_terms is None
                or node_selector_matches(info.required_terms, node.labels, node.name))):
            return Rejection("NodeAffinity", f"Predicate NodeAffinity failed: {NODE_AFFINITY_REASON}")
        for taint in node.taints:
            if taint.effect == "NoExecute" and not any(t.tolerates(taint) for t in info.tolerations):
                return Rejection("TaintToleration",
                                 f"Predicate TaintToleration failed: {TAINT_REASON}")
        return None

    def _insufficient(self, info: PodInfo) -> Rejection | None:
        """NodeResourcesFit's ``fitsRequest`` order: pods, cpu, memory, ephemeral-storage, then
        the other resources by name (upstream iterates a map; sorted here to be deterministic).
        Device-plugin resources were settled by the device manager; extended resources the node
        does not list are dropped (``removeMissingExtendedResources``), but for GPU resources,
        which count at capacity 0 (see the module docstring)."""
        allocatable = self.node.allocatable
        if "pods" in allocatable and self.pod_count + 1 > allocatable["pods"]:
            return _out_of("pods", 1, self.pod_count, allocatable["pods"])
        advertised = self.devices.advertised if self.devices is not None else {}
        names = [n for n in NATIVE_ORDER if info.requests.get(n)]
        names += sorted(n for n, v in info.requests.items()
                        if v and n not in NATIVE_ORDER and n != "pods" and n not in advertised
                        and (n in allocatable or n.startswith(GPU_RESOURCE_PREFIXES)))
        for name in names:
            need, used, capacity = info.requests[name], self.used.get(name, 0), allocatable.get(name, 0)
            if need > capacity - used:
                return _out_of(name, need, used, capacity)
        return None


def _out_of(resource: str, requested: int, used: int, capacity: int) -> Rejection:
    return Rejection(OUT_OF.get(resource, f"OutOf{resource}"),
                     f"Node didn't have enough resource: {resource}, requested: {requested}, "
                     f"used: {used}, capacity: {capacity}")


def allocate_failed(error: str) -> str:
    """``unexpectedAdmissionError.Error()`` (pkg/kubelet/cm/admission/errors.go)."""
    return f"Allocate failed due to {error}, which is unexpected"


def _plugin_request(devices: Any, info: PodInfo) -> bool:
    """Whether the pod asks for a resource the device plugin serves (``isDevicePluginResource``)."""
    if info.gpu_milli > 0:
        return True
    advertised = devices.advertised
    return any(resource in advertised for resource in device_requests(info))


def _unavailable(devices: Any, info: PodInfo, pod: dict[str, Any]) -> str:
    """``devicesToAllocate``'s message for the first container and resource that is short.

    The kubelet allocates container by container, init containers first
    (``resourceAllocator.Admit``); devices an init container got are reused by the later
    containers, so only app containers use up what is free. Worked example: 1 GPU free, two
    containers asking 1 each: the first gets it, the second reads ``Requested: 1, Available: 0``.
    """
    if info.gpu_milli > 0:
        free = max((int(m) for m in devices.free_milli()), default=0)
        return (f"requested number of devices unavailable for {RESOURCE_GPU_MILLI}. "
                f"Requested: {info.gpu_milli}, Available: {free}")
    wanted = device_requests(info)
    available = {r: sum(1 for row in devices.rows() if row.resource == r and not row.holder
                        and not devices.paused)      # a paused plugin offers nothing new
                 for r in wanted}
    short = _first_short_container(pod, wanted, available)
    if short is not None:
        return short
    resource, count = next(iter(wanted.items()))
    return _short_message(resource, count, available[resource])


def _first_short_container(pod: dict[str, Any], wanted: dict[str, int],
                           available: dict[str, int]) -> str | None:
    """Walk the containers, init containers first, taking app containers' devices out of
    ``available`` (updated in place); the message for the first one that is short."""
    spec = pod.get("spec") or _EMPTY
    containers = [(True, c) for c in spec.get("initContainers") or []]
    containers += [(False, c) for c in spec.get("containers") or []]
    for init, container in containers:
        limits = ((container.get("resources") or _EMPTY).get("limits") or _EMPTY)
        for resource in wanted:
            need = int(limits.get(resource, 0) or 0)
            if need > available[resource]:
                return _short_message(resource, need, available[resource])
            if not init:
                available[resource] -= need
    return None


def _short_message(resource: str, requested: int, available: int) -> str:
    return (f"requested number of devices unavailable for {resource}. "
            f"Requested: {requested}, Available: {available}")


def _first_resource(info: PodInfo) -> str:
    if info.gpu_milli > 0:
        return RESOURCE_GPU_MILLI
    return next(iter(device_requests(info)), "nvidia.com/gpu")


def _assignment(pod: dict[str, Any], info: PodInfo) -> DeviceAssignment | None:
    """The pod's recorded devices; None (logged) for a record that cannot be read."""
    try:
        return pod_assignment(pod, info)
    except UsageError as err:
        log.warning("kubelet: pod %s: %s", info.key, err)
        return None


def _write_assignment(view: View, pod: dict[str, Any], assignment: DeviceAssignment) -> None:
    new = copy.deepcopy(view.get("Pod", pod["metadata"]["name"], pod["metadata"]["namespace"]) or pod)
    annotations = new["metadata"].setdefault("annotations", {})
    annotations.pop(ANN_ASSIGNED_GPUS, None)
    annotations.pop(ANN_ASSIGNED_DEVICES, None)
    annotations.update(assignment_annotations(assignment))
    write.update_status(view, new)


def reject(view: View, pod: dict[str, Any], rejection: Rejection) -> None:
    """``rejectPod``: phase Failed, the reason, ``Pod was rejected: <message>``, a Warning event."""
    new = copy.deepcopy(view.get("Pod", pod["metadata"]["name"], pod["metadata"]["namespace"]) or pod)
    status = new.setdefault("status", {})
    status.update({"phase": "Failed", "reason": rejection.reason,
                   "message": f"Pod was rejected: {rejection.message}"})
    for condition in status.get("conditions") or []:
        if condition.get("type") in ("Ready", "ContainersReady") and condition.get("status") == "True":
            condition.update({"status": "False", "reason": "PodFailed",
                              "lastTransitionTime": view.timestamp()})
    write.update_status(view, new)
    capacity_changed(view, new)
    view.record_event(new, rejection.reason, rejection.message, "Warning", "kubelet")
