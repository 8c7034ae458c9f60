"""PrioritySort: the queue order. Higher ``priority`` first, then earlier ``creation_seq``, then
the pod key (namespace/name) so that equal pods still have one fixed order.

Upstream compares priority, then the time the pod entered the queue; gpusched's ``creation_seq``
is that order made deterministic. Neighbours: used by ``scheduler.queue``.
"""

from __future__ import annotations

from typing import Any

from gpusched.objects.types import PodInfo

NAME = "PrioritySort"


class PrioritySort:
    name = NAME

    def sort_key(self, pod: PodInfo) -> tuple[Any, ...]:
        return (-pod.priority, pod.creation_seq, pod.namespace, pod.name)


def new(args: dict[str, Any] | None = None) -> PrioritySort:
    return PrioritySort()
