"""NodeUnschedulable: cordoned nodes (``spec.unschedulable``) reject pods that do not tolerate
``node.kubernetes.io/unschedulable:NoSchedule``. Reason ``node(s) were unschedulable``,
UnschedulableAndUnresolvable (preemption cannot uncordon a node).

Neighbours: reads ``Snapshot.unschedulable``; reason text from ``scheduler.messages``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpusched.objects.types import PodInfo, Taint
from gpusched.scheduler import messages
from gpusched.scheduler.framework import Code, CycleState, Rejection
from gpusched.scheduler.snapshot import Snapshot

NAME = "NodeUnschedulable"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


class NodeUnschedulable:
    name = NAME

    def filter(self, state: CycleState, pod: PodInfo, snapshot: Snapshot,
               candidates: np.ndarray) -> list[Rejection]:
        if any(t.tolerates(UNSCHEDULABLE_TAINT) for t in pod.tolerations):
            return []
        cordoned = snapshot.unschedulable[candidates]
        if not cordoned.any():
            return []
        return [Rejection(snapshot.mask(candidates, cordoned), messages.NODE_UNSCHEDULABLE,
                          Code.UNSCHEDULABLE_AND_UNRESOLVABLE)]


def new(args: dict[str, Any] | None = None) -> NodeUnschedulable:
    return NodeUnschedulable()
