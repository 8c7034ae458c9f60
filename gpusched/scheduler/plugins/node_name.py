"""NodeName: a pod with ``spec.nodeName`` fits only that node. Reason
``node(s) didn't match the requested node name``, UnschedulableAndUnresolvable.

Neighbours: reads ``Snapshot.index``; reason text from ``scheduler.messages``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.objects.types import PodInfo
from gpusched.scheduler import messages
from gpusched.scheduler.framework import Code, CycleState, Rejection
from gpusched.scheduler.snapshot import Snapshot

NAME = "NodeName"


class NodeName:
    name = NAME

    def filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
               candidates: np.ndarray) -> list[Rejection]:
        if not pod.node_name:
            return []
        wanted = snapshot.index.get(pod.node_name, -1)
        other = candidates != wanted
        if not other.any():
            return []
        return [Rejection(snapshot.mask(candidates, other), messages.NODE_NAME_MISMATCH,
                          Code.UNSCHEDULABLE_AND_UNRESOLVABLE)]


def new(args: dict[str, Any] | None = None) -> NodeName:
    return NodeName()
