"""Queue ordering (``gpusched.kueue.ordering``): inside a ClusterQueue
(``pkg/cache/queue/cluster_queue_test.go``, priority then FIFO), across a cycle's heads
(``pkg/scheduler/scheduler_test.go`` "TestEntryOrdering": quota holders, non-borrowing, priority,
FIFO), and StrictFIFO vs BestEffortFIFO requeueing (``cluster_queue.go`` ``RequeueIfNotPresent``).
"""

from __future__ import annotations

import pytest

from gpusched.kueue.ordering import (Entry, QueuedWorkload, cycle_order, heads, in_queue_order,
                                     requeue_immediately)


def qw(name: str, cq: str = "cq", priority: int = 0, at: float = 0.0) -> QueuedWorkload:
    return QueuedWorkload(f"ns/{name}", cq, priority, at, name)


def test_inside_a_queue_priority_then_fifo() -> None:
    got = in_queue_order([qw("old-low", at=1), qw("new-high", priority=10, at=5), qw("older-low", at=0)])
    assert [w.key for w in got] == ["ns/new-high", "ns/older-low", "ns/old-low"]


def test_one_head_per_cluster_queue() -> None:
    pending = {"b": [qw("b2", "b", at=2), qw("b1", "b", at=1)], "a": [qw("a1", "a")], "empty": []}
    assert [w.key for w in heads(pending)] == ["ns/a1", "ns/b1"]


def test_cycle_order_as_entry_ordering() -> None:
    """scheduler_test.go TestEntryOrdering's rules: a head already holding quota first, then
    not borrowing before borrowing, then higher priority, then the older timestamp."""
    entries = [
        Entry(qw("borrowing-high", "q1", 10, 0), borrowing=1),
        Entry(qw("plain-old", "q2", 0, 1)),
        Entry(qw("plain-high", "q3", 5, 9)),
        Entry(qw("second-pass", "q4", 0, 20), holds_quota=True),
        Entry(qw("plain-new", "q5", 0, 2)),
    ]
    assert [e.workload.key for e in cycle_order(entries)] == [
        "ns/second-pass", "ns/plain-high", "ns/plain-old", "ns/plain-new", "ns/borrowing-high"]


@pytest.mark.parametrize("strategy,reason,want", [
    ("StrictFIFO", "Generic", True),
    ("StrictFIFO", "NamespaceMismatch", False),
    ("BestEffortFIFO", "Generic", False),
    ("BestEffortFIFO", "PendingPreemption", True),
    ("BestEffortFIFO", "FailedAfterNomination", True),
], ids=["strict head keeps blocking", "strict namespace mismatch moves on",
        "best effort moves to inadmissible", "best effort pending preemption stays", "best effort failed after nomination"])
def test_requeue_immediately(strategy, reason, want) -> None:
    assert requeue_immediately(strategy, reason) is want
