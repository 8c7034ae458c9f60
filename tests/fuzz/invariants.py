"""The fuzz suite's invariant checker, a minimal stand-in until the kubelet's own
(``gpusched.cluster.invariants``, issue 25 finding 3-4 work) is in the tree; then
:func:`violations` is that one.

One line per broken rule, read from the stored objects of the live pods bound to each node:
a device (whole GPU, replica, MIG instance) held by two pods; a GPU whose shares sum past 1000
milli-GPU; a device held that the node does not advertise; a resource requested past the node's
allocatable (``<node>: <resource> requested <n> > allocatable <m>``). A record that cannot be
read is a line of its own.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

try:
    from gpusched.cluster.invariants import violations
except ImportError:     # the kubelet's checker has not landed: the stand-in below
    from gpusched.cluster.device_inputs import device_inputs, node_devices_for
    from gpusched.errors import GpuschedError
    from gpusched.objects.assignment import read_assignment, assignment_resource
    from gpusched.objects.node import node_info
    from gpusched.objects.pod import pod_info

    def violations(view: Any) -> list[str]:  # type: ignore[misc]
        inputs = device_inputs(view)
        by_node: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for pod in view.list("Pod"):
            node = (pod.get("spec") or {}).get("nodeName")
            if node and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                by_node[str(node)].append(pod)
        out: list[str] = []
        for node in view.list("Node"):
            name = node["metadata"]["name"]
            out += _node(name, node, by_node.get(name, []), node_devices_for(node, inputs))
        return out

    def _node(name: str, node: dict[str, Any], pods: list[dict[str, Any]], devices: Any) -> list[str]:
        advertised = {row.device_id for row in devices.rows()} if devices is not None else set()
        holders: dict[str, str] = {}
        milli: dict[int, int] = defaultdict(int)
        requested: dict[str, int] = defaultdict(int)
        out: list[str] = []
        for pod in pods:
            key = f"{pod['metadata'].get('namespace', '')}/{pod['metadata'].get('name', '')}"
            try:
                info = pod_info(pod)
                held = read_assignment(pod["metadata"].get("annotations") or {}, assignment_resource(info))
            except GpuschedError as err:
                out.append(f"{name}: {key} cannot be read: {err}")
                continue
            for resource, amount in info.requests.items():
                requested[resource] += amount
            requested["pods"] += 1
            share = held.milli if 0 < held.milli < 1000 else 1000
            for device_id in held.device_ids:
                if device_id not in advertised:
                    out.append(f"{name}: {key} holds {device_id}, which the node does not advertise")
                if share == 1000 and device_id in holders:
                    out.append(f"{name}: device {device_id} held by {holders[device_id]} and {key}")
                holders.setdefault(device_id, key)
            whole = all(d.startswith("GPU-") and "::" not in d for d in held.device_ids)
            if share < 1000 or whole:       # replicas and MIG instances are devices of their own
                for index in held.gpu_indices:
                    milli[index] += share
        out += [f"{name}: GPU {i} holds {m} milli > 1000" for i, m in sorted(milli.items()) if m > 1000]
        allocatable = dict(node_info(node).allocatable)
        out += [f"{name}: {r} requested {n} > allocatable {allocatable.get(r)}"
                for r, n in sorted(requested.items()) if n > 0 and n > allocatable.get(r, 0)]
        return out
