"""Queue ordering, as Kueue's ``pkg/cache/queue/cluster_queue.go`` and ``pkg/scheduler/scheduler.go``.

Inside a ClusterQueue: higher priority first, then the earlier queue-order timestamp (creation,
or the last eviction), then UID. One head per ClusterQueue enters a scheduling cycle.

Across the heads of a cycle (``makeClassicalIterator``, fair sharing off): heads that already
hold quota first, then the lower borrowing level (0 = not borrowing), then higher priority,
then FIFO. With fair sharing on, the heads go by their queue's dominant resource share as if
admitted (``fair_sharing_iterator.go``), lowest first.

StrictFIFO keeps a head that cannot be admitted at the front (it blocks the queue);
BestEffortFIFO moves it to the inadmissible list until something changes in the cluster, and
the next workload becomes the head, except after reasons that retry at once.

Neighbours: ``fair_sharing``; used by the controllers' scheduling cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

STRICT_FIFO = "StrictFIFO"
BEST_EFFORT_FIFO = "BestEffortFIFO"

# RequeueReasons after which BestEffortFIFO requeues the head at once (RequeueIfNotPresent)
IMMEDIATE_REQUEUE = frozenset({"FailedAfterNomination", "PendingPreemption", "PendingMigration", "PreemptionFailed"})
NAMESPACE_MISMATCH = "NamespaceMismatch"


@dataclass(frozen=True)
class QueuedWorkload:
    """What ordering reads of a pending Workload."""

    key: str                 # namespace/name
    cluster_queue: str
    priority: int = 0
    timestamp: float = 0.0   # queue-order timestamp, seconds on the cluster clock
    uid: str = ""

    def order_key(self) -> tuple[int, float, str]:
        return -self.priority, self.timestamp, self.uid


def in_queue_order(workloads: Iterable[QueuedWorkload]) -> list[QueuedWorkload]:
    """A ClusterQueue's pending workloads in Kueue's order (``baseCompareFunc``)."""
    return sorted(workloads, key=QueuedWorkload.order_key)


def heads(pending: Mapping[str, Sequence[QueuedWorkload]]) -> list[QueuedWorkload]:
    """One head per ClusterQueue (by name, for a stable cycle)."""
    return [in_queue_order(pending[cq])[0] for cq in sorted(pending) if pending[cq]]


@dataclass(frozen=True)
class Entry:
    """A nominated head: its workload, borrowing level and whether it already holds quota."""

    workload: QueuedWorkload
    borrowing: int = 0
    holds_quota: bool = False


def cycle_order(entries: Iterable[Entry]) -> list[Entry]:
    """The classical iterator's order of a cycle's nominated heads."""
    return sorted(entries, key=lambda e: (not e.holds_quota, e.borrowing, -e.workload.priority,
                                          e.workload.timestamp))


def requeue_immediately(strategy: str, reason: str) -> bool:
    """Whether a head that was not admitted stays the head (``RequeueIfNotPresent``)."""
    if strategy == STRICT_FIFO:
        return reason != NAMESPACE_MISMATCH
    return reason in IMMEDIATE_REQUEUE
