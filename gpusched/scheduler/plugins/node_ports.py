"""NodePorts: a pod asking for host ports fits only nodes where no pod already holds them.

Upstream ``pkg/scheduler/framework/plugins/nodeports/node_ports.go``:

- PreFilter: the pod's wanted ports are the ``containers[].ports`` with ``hostPort > 0``
  (``getContainerPorts``; init containers are not counted). None: Skip (Filter does not run).
- Filter (``fitsPorts`` over ``HostPortInfo.CheckConflict``): a wanted (hostIP, protocol, port)
  conflicts with a pod on the node holding the same protocol and port when either hostIP is
  ``0.0.0.0`` or both are equal (an empty hostIP is ``0.0.0.0``, an empty protocol ``TCP``).
  Reason ``node(s) didn't have free ports for the requested pod ports``, code Unschedulable
  (removing the pod that holds the port helps, so preemption evaluates the node).

Neighbours: reads ``PodInfo.host_ports`` of the pods in ``Snapshot.pods_on``; reason text from
``scheduler.messages``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.objects.types import PodInfo
from gpusched.scheduler import messages
from gpusched.scheduler.framework import SKIP, SUCCESS, CycleState, Rejection, Status
from gpusched.scheduler.snapshot import Snapshot

NAME = "NodePorts"
BIND_ALL = "0.0.0.0"


def conflicts(wanted: tuple[str, str, int], used: tuple[tuple[str, str, int], ...]) -> bool:
    """Upstream ``HostPortInfo.CheckConflict`` for one wanted port against the used ones.

    >>> conflicts(("0.0.0.0", "TCP", 80), (("10.0.0.1", "TCP", 80),))
    True
    >>> conflicts(("10.0.0.2", "TCP", 80), (("10.0.0.1", "TCP", 80),))
    False
    >>> conflicts(("0.0.0.0", "UDP", 80), (("0.0.0.0", "TCP", 80),))
    False
    """
    ip, protocol, port = wanted
    for used_ip, used_protocol, used_port in used:
        if used_port != port or used_protocol != protocol:
            continue
        if ip == BIND_ALL or used_ip == BIND_ALL or used_ip == ip:
            return True
    return False


class NodePorts:
    name = NAME

    def pre_filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot) -> Status:
        return SUCCESS if pod.host_ports else SKIP

    def filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
               candidates: np.ndarray) -> list[Rejection]:
        if not pod.host_ports:
            return []
        taken = np.zeros(len(candidates), dtype=bool)
        for j, row in enumerate(candidates.tolist()):
            used = tuple(port for other in snapshot.pods_on(row) if other.uid != pod.uid
                         for port in other.host_ports)
            taken[j] = bool(used) and any(conflicts(want, used) for want in pod.host_ports)
        if not taken.any():
            return []
        return [Rejection(snapshot.mask(candidates, taken), messages.NODE_PORTS_TAKEN)]


def new(args: dict[str, Any] | None = None) -> NodePorts:
    return NodePorts()
