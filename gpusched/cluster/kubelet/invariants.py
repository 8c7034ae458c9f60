"""Invariants of the cluster's device and resource accounting, checked from the stored objects.

:func:`violations` reads a view (or any ``ObjectSource``) and returns one line per broken rule,
for every node and the live pods bound to it (not Succeeded/Failed; a terminating pod still
holds what it had):

1. a GPU's fractional shares and whole holders sum to at most 1000 milli-GPU
   (``<node>: GPU <i> holds <n> milli > 1000 (<pods>)``);
2. a device (whole GPU, replica, MIG instance) has at most one holder
   (``<node>: device <id> held by <pod> and <pod>``);
3. every device a pod holds is one the node advertises now, so no pod runs on a MIG instance
   a layout change removed (``<node>: <pod> holds <id>, which the node does not advertise``);
4. for each resource the pods request, requested <= allocatable
   (``<node>: <resource> requested <n> > allocatable <m>``, ``None`` when the node does not list
   it), the pod count included. An allocatable that shrinks under running pods (a NodePool
   edit) is reported too: upstream keeps such pods running, but the node is over-committed.

It re-reads the records independently of ``NodeDevices.hold`` (which enforces 1-3 for what it
is given), so a path that writes a record without holding it is caught. A record that cannot be
read is a violation of its own (``<node>: <pod> has an unreadable device record: ...``).

Used by tests (``tests/cluster/test_kubelet.py``) and the fuzz suite; the scheduler and the
kubelet never call it. Neighbours: ``objects.assignment`` (records),
``cluster.kubelet.device_inputs`` (what a node advertises).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from gpusched.cluster.controllers.common import is_terminal
from gpusched.cluster.kubelet.device_inputs import device_inputs, node_devices_for
from gpusched.cluster.apiserver.view import ObjectSource
from gpusched.errors import GpuschedError
from gpusched.objects.assignment import pod_assignment
from gpusched.objects.node import node_info
from gpusched.objects.pod import pod_info
from gpusched.objects.types import PodInfo

WHOLE_GPU_MILLI = 1000


def violations(view: ObjectSource) -> list[str]:
    """Every broken invariant of the module docstring, node by node (empty when none)."""
    inputs = device_inputs(view)
    by_node: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for pod in view.list("Pod"):
        node_name = (pod.get("spec") or {}).get("nodeName")
        if node_name and not is_terminal(pod):
            by_node[str(node_name)].append(pod)
    out: list[str] = []
    for node in view.list("Node"):
        name = node["metadata"]["name"]
        out += node_violations(node, by_node.get(name, []), node_devices_for(node, inputs))
    return out


def node_violations(node: dict[str, Any], pods: list[dict[str, Any]], devices: Any) -> list[str]:
    """The broken invariants of one node with its live bound ``pods`` and advertised ``devices``."""
    name = node["metadata"]["name"]
    infos: list[tuple[dict[str, Any], PodInfo]] = []
    out: list[str] = []
    for pod in pods:
        try:
            infos.append((pod, pod_info(pod)))
        except GpuschedError as err:
            out.append(f"{name}: {_key(pod)} cannot be read: {err}")
    out += _device_violations(name, infos, devices)
    out += _resource_violations(node, [info for _, info in infos])
    return out


def _device_violations(name: str, infos: list[tuple[dict[str, Any], PodInfo]], devices: Any) -> list[str]:
    """Rules 1-3 from the pods' records."""
    advertised = {row.device_id for row in devices.rows()} if devices is not None else set()
    holders: dict[str, str] = {}
    milli: dict[int, int] = defaultdict(int)
    users: dict[int, list[str]] = defaultdict(list)
    out: list[str] = []
    for pod, info in infos:
        try:
            held = pod_assignment(pod, info)
        except GpuschedError as err:
            out.append(f"{name}: {info.key} has an unreadable device record: {err}")
            continue
        share = held.milli if 0 < held.milli < WHOLE_GPU_MILLI else 0
        out += _held_twice_or_gone(name, info.key, held.device_ids, share, advertised, holders)
        for index in held.gpu_indices:
            if share or held.milli == WHOLE_GPU_MILLI:
                milli[index] += share or WHOLE_GPU_MILLI
                users[index].append(info.key)
    out += [f"{name}: GPU {i} holds {m} milli > {WHOLE_GPU_MILLI} ({', '.join(users[i])})"
            for i, m in sorted(milli.items()) if m > WHOLE_GPU_MILLI]
    return out


def _held_twice_or_gone(name: str, pod: str, device_ids: tuple[str, ...], share: int,
                        advertised: set[str], holders: dict[str, str]) -> list[str]:
    """Rules 2 and 3 for one pod's devices; ``holders`` (device -> first holder) is updated. A
    share's device is the GPU's own ID, held by every pod with a share of it (rule 1)."""
    out = []
    for device_id in device_ids:
        if device_id not in advertised:
            out.append(f"{name}: {pod} holds {device_id}, which the node does not advertise")
        elif not share and device_id in holders:
            out.append(f"{name}: device {device_id} held by {holders[device_id]} and {pod}")
        if not share:
            holders.setdefault(device_id, pod)
    return out


def _resource_violations(node: dict[str, Any], infos: list[PodInfo]) -> list[str]:
    """Rule 4: the pods' summed requests against the node's allocatable."""
    name = node["metadata"]["name"]
    try:
        allocatable = dict(node_info(node).allocatable)
    except GpuschedError as err:
        return [f"{name}: node cannot be read: {err}"]
    requested: dict[str, int] = defaultdict(int)
    for info in infos:
        for resource, amount in info.requests.items():
            requested[resource] += amount
    if infos:
        requested["pods"] += len(infos)
    return [f"{name}: {resource} requested {amount} > allocatable {allocatable.get(resource)}"
            for resource, amount in sorted(requested.items())
            if amount > 0 and amount > allocatable.get(resource, 0)]


def _key(pod: dict[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"
