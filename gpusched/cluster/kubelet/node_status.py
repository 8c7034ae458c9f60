"""The kubelet's part of a Node's status: Ready condition, addresses and nodeInfo.

Embedded nodes have no kubelet, so this controller writes what one would report, once, in a
deterministic way: condition ``Ready=True`` (reason ``KubeletReady``, message
``kubelet is posting ready status``) plus the pressure conditions as ``False``, an ``InternalIP``
derived from the node name (``10.<a>.<b>.<c>``, a stable hash; simulated, not routable), the
``Hostname`` address, and ``nodeInfo`` with ``kubeletVersion`` ``KUBELET_VERSION``. Pod IPs are
derived the same way (``pod_ip``), in 10.244.0.0/16 as with a flannel-style pod network.

Neighbours: run by ``cluster.controllers`` (settle); ``pod_lifecycle`` asks ``node_ip``/``pod_ip``.
"""

from __future__ import annotations

from typing import Any

import zlib

from gpusched.cluster.apiserver import write
from gpusched.cluster.apiserver.changes import Changes, changed_nodes
from gpusched.cluster.apiserver.view import View, copy_tree
from gpusched.objects.kinds import KUBERNETES_VERSION

KUBELET_VERSION = f"{KUBERNETES_VERSION}-gpusched"
_PRESSURE = (("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
             ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
             ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"))


def _ip(prefix: str, text: str, octets: int) -> str:
    digest = zlib.crc32(text.encode())
    tail = [(digest >> (8 * i)) & 0xFF for i in reversed(range(octets))]
    tail[-1] = tail[-1] % 254 + 1          # never .0 or .255
    return ".".join([prefix, *map(str, tail)])


def node_ip(name: str) -> str:
    """The simulated InternalIP of a node, stable for its name.

    >>> node_ip("gpu-node-1") == node_ip("gpu-node-1") != node_ip("gpu-node-2")
    True
    """
    return _ip("10", name, 3)


def pod_ip(namespace: str, name: str) -> str:
    return _ip("10.244", f"{namespace}/{name}", 2)


def kubelet_status(node: dict[str, Any], now: str) -> dict[str, Any]:
    """What the kubelet reports for ``node`` (conditions, addresses, nodeInfo); the Cluster
    Autoscaler's template nodes (``controllers.autoscaling.autoscaler``) use it too."""
    return _node_status(node, now)


def _node_status(node: dict[str, Any], now: str) -> dict[str, Any]:
    name = node["metadata"]["name"]
    conditions = [{"type": ctype, "status": "False", "reason": reason, "message": message,
                   "lastHeartbeatTime": now, "lastTransitionTime": now}
                  for ctype, reason, message in _PRESSURE]
    conditions.append({"type": "Ready", "status": "True", "reason": "KubeletReady",
                       "message": "kubelet is posting ready status",
                       "lastHeartbeatTime": now, "lastTransitionTime": now})
    return {
        "conditions": conditions,
        "addresses": [{"type": "InternalIP", "address": node_ip(name)},
                      {"type": "Hostname", "address": name}],
        "nodeInfo": {"kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": KUBELET_VERSION,
                     "containerRuntimeVersion": "containerd://1.7.13",
                     "operatingSystem": "linux", "architecture": "amd64",
                     "osImage": "gpusched embedded node", "kernelVersion": "6.1.0"},
    }


def reconcile(view: View, changes: Changes | None = None) -> None:
    """Every node, or (``changes``) the changed nodes: a node's status depends on it alone."""
    for node in view.list("Node") if changes is None else changed_nodes(view, changes):
        status = node.get("status") or {}
        if status.get("nodeInfo") and status.get("conditions"):
            continue
        new = copy_tree(node)
        fresh = _node_status(new, view.timestamp())
        new_status = new.setdefault("status", {})
        for key, value in fresh.items():
            new_status.setdefault(key, value)
        write.update_status(view, new)
