"""Kueue's queue manager (``pkg/cache/queue/manager.go``, ``cluster_queue.go``,
``inadmissible_workloads.go``): the pending Workloads of each ClusterQueue, kept across
scheduling passes, in two parts as upstream keeps them:

- the active heap, ordered by ``ordering``'s in-queue order (priority, then queue-order
  timestamp, then UID); its first entry is the queue's head for the next cycle;
- the inadmissible set: under BestEffortFIFO a head that could not be admitted leaves the heap
  (``requeueIfNotPresent``) and stays out of it, never nominated again, until an event that can
  make it admissible moves its whole cohort tree back (``requeueWorkloadsCohort``; a queue
  without a cohort alone, ``requeueWorkloadsCQ``): a Workload that held quota in the tree
  finished, was deleted or evicted, or a queue object changed. StrictFIFO keeps its head in the
  heap: it blocks the queue.

A Workload pushed again (new, or changed by someone else) leaves the inadmissible set for the
heap, as ``PushOrUpdate`` does for a changed spec or eviction state.

Scheduling equivalence (``SchedulingEquivalenceHashing``, on by default since Kueue 0.18): when a
BestEffortFIFO head is parked because no flavor fits (``RequeueReasonNoFit``) or preemption
found no candidates (``RequeueReasonPreemptionNoCandidates``), every Workload of its queue with
the same shape (priority and PodSets, ``computeSchedulingHash``) leaves the heap with it
(``handleInadmissibleHash``), and one pushed later goes straight to the inadmissible set, until
the queue's Workloads are requeued (``queueInadmissibleWorkloads`` forgets the shapes).

Entries go stale in place (a heap of (order key, sequence, key) with lazy deletion): a key's
live entry is the one whose sequence ``_where`` names.

Neighbours: ``cycle`` (``Pending``), ``ordering`` (STRICT_FIFO); kept by the controllers'
scheduler (``cluster/controllers/kueue/queues.py``).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping

from gpusched.kueue.cycle import Pending
from gpusched.kueue.ordering import STRICT_FIFO

OrderKey = tuple[int, float, str]
BYPASSED = "Bypassed scheduling evaluation because an equivalent workload recently failed"
Shape = tuple[int, str]


def shape_of(item: Pending) -> Shape:
    """What makes two Workloads equivalent to the scheduler: priority and PodSets (their names,
    counts, requests and scheduling constraints; not the name, UID or timestamp)."""
    return item.queued.priority, repr(item.podsets)


class QueueManager:
    """The pending Workloads of every ClusterQueue: heaps and inadmissible sets.

    ``trees`` maps each ClusterQueue to its cohort tree's root (itself without a cohort): the
    unit an event requeues. ``strategies`` holds each queue's queueingStrategy."""

    def __init__(self, trees: Mapping[str, str], strategies: Mapping[str, str]) -> None:
        self.trees = dict(trees)
        self.strict = {cq: strategies.get(cq) == STRICT_FIFO for cq in trees}
        self._heaps: dict[str, list[tuple[OrderKey, int, str]]] = {cq: [] for cq in trees}
        self._inadmissible: dict[str, dict[str, Pending]] = {cq: {} for cq in trees}
        self._pending: dict[str, Pending] = {}
        self._where: dict[str, int] = {}            # key -> sequence of its live heap entry
        self._sequence = 0
        self._failed: dict[str, dict[Shape, str]] = {cq: {} for cq in trees}   # shape -> its head's reason

    # ---- membership ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._pending)

    def __contains__(self, key: str) -> bool:
        return key in self._pending

    def pending(self, key: str) -> Pending | None:
        return self._pending.get(key)

    def is_parked(self, key: str) -> bool:
        found = self._pending.get(key)
        return found is not None and key in self._inadmissible[found.queued.cluster_queue]

    def push(self, item: Pending) -> str:
        """Into the heap of its ClusterQueue (out of any queue it was in before); returns ""
        or, when its shape failed since the queue's last requeue, that reason (it is parked)."""
        bypassed = self._failed[item.queued.cluster_queue].get(shape_of(item), "")
        if bypassed and not self.strict[item.queued.cluster_queue]:
            self.park(item)
            return bypassed
        self._push(item)
        return ""

    def _push(self, item: Pending) -> None:
        self.delete(item.queued.key)
        cq = item.queued.cluster_queue
        self._pending[item.queued.key] = item
        self._sequence += 1
        self._where[item.queued.key] = self._sequence
        heapq.heappush(self._heaps[cq], (item.queued.order_key(), self._sequence, item.queued.key))

    def park(self, item: Pending) -> None:
        """Into the inadmissible set of its ClusterQueue."""
        self.delete(item.queued.key)
        self._pending[item.queued.key] = item
        self._inadmissible[item.queued.cluster_queue][item.queued.key] = item

    def fail(self, item: Pending, reason: str) -> None:
        """Remember that ``item``'s shape cannot be admitted in its queue (a rebuild's half of
        ``not_admitted``)."""
        if not self.strict.get(item.queued.cluster_queue, False):
            self._failed[item.queued.cluster_queue][shape_of(item)] = reason

    def delete(self, key: str) -> None:
        found = self._pending.pop(key, None)
        if found is None:
            return
        self._where.pop(key, None)
        self._inadmissible[found.queued.cluster_queue].pop(key, None)

    # ---- requeueing ---------------------------------------------------------------------------

    def requeue_tree(self, cluster_queue: str) -> None:
        """Every inadmissible Workload of ``cluster_queue``'s cohort tree back to its heap."""
        root = self.trees.get(cluster_queue)
        if root is None:
            return
        for cq in sorted(cq for cq, tree in self.trees.items() if tree == root):
            self._failed[cq].clear()
            for item in sorted(self._inadmissible[cq].values(), key=lambda p: p.queued.key):
                self._push(item)

    def requeue_all(self) -> None:
        for cq in sorted(self.trees):
            self.requeue_tree(cq)

    # ---- heads --------------------------------------------------------------------------------

    def heads(self) -> list[Pending]:
        """The first live entry of each ClusterQueue's heap, by ClusterQueue name."""
        chosen = []
        for cq in sorted(self._heaps):
            heap = self._heaps[cq]
            while heap and self._where.get(heap[0][2]) != heap[0][1]:
                heapq.heappop(heap)
            if heap:
                chosen.append(self._pending[heap[0][2]])
        return chosen

    def not_admitted(self, item: Pending, reason: str = "") -> list[Pending]:
        """A head that stays pending: parked under BestEffortFIFO, kept at the front under
        StrictFIFO. With the ``reason`` of a shape that cannot fit (no flavor fits, no
        preemption candidates) the heap's Workloads of its shape are parked with it: returned."""
        cq = item.queued.cluster_queue
        if self.strict.get(cq, False):
            return []
        self.park(item)
        if not reason:
            return []
        shape = shape_of(item)
        self._failed[cq][shape] = reason
        same = [self._pending[key] for _, sequence, key in sorted(self._heaps[cq])
                if self._where.get(key) == sequence and shape_of(self._pending[key]) == shape]
        for other in same:
            self.park(other)
        return same

    # ---- what it holds, for the queues' status and the tests ----------------------------------

    def keys(self) -> Iterable[str]:
        return self._pending.keys()

    def parked_keys(self) -> set[str]:
        return {key for items in self._inadmissible.values() for key in items}


__all__ = ["BYPASSED", "QueueManager", "shape_of"]
