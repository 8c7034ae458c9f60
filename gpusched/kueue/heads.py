"""The heads of a pass's ClusterQueues, as Kueue's queue manager hands them to the scheduler
(``pkg/cache/queue/manager.go`` ``Heads``, ``cluster_queue.go``'s heap): each queue's pending
Workloads sorted once (``ordering``'s order), then a cursor per queue that only moves forward:
a Workload decided in this pass (admitted or preempting) leaves its queue, and under
BestEffortFIFO one found inadmissible is parked behind it; StrictFIFO keeps its head.

``cycle.pick_heads`` gives the same heads; this keeps a pass of many cycles linear in its
Workloads (each cycle took every queue's sort again).

Neighbours: ``cycle`` (``Pending``), ``ordering``; used by the controllers' scheduling pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set

from gpusched.kueue.cycle import Pending
from gpusched.kueue.inputs import QueuePolicy
from gpusched.kueue.ordering import STRICT_FIFO


class Heads:
    """One pass's queues; ``next`` gives one head per ClusterQueue (by name)."""

    def __init__(self, pending: Mapping[str, Sequence[Pending]], policies: Mapping[str, QueuePolicy]) -> None:
        self.queues = {cq: sorted(pending[cq], key=lambda p: p.queued.order_key()) for cq in sorted(pending)}
        self.cursors = dict.fromkeys(self.queues, 0)
        self.strict = {cq: policies[cq].strategy == STRICT_FIFO for cq in self.queues}

    def next(self, decided: Set[str], parked: Set[str]) -> list[Pending]:
        """The first of each queue neither decided nor (BestEffortFIFO) parked."""
        chosen = []
        for cq, items in self.queues.items():
            index, strict = self.cursors[cq], self.strict[cq]
            while index < len(items) and (items[index].queued.key in decided
                                          or (not strict and items[index].queued.key in parked)):
                index += 1
            self.cursors[cq] = index
            if index < len(items):
                chosen.append(items[index])
        return chosen


__all__ = ["Heads"]
