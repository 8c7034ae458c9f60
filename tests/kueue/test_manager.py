"""Kueue's queue manager kept across passes (``gpusched.kueue.manager``), as upstream's
``pkg/cache/queue/cluster_queue.go`` and ``inadmissible_workloads.go``: one head per ClusterQueue
(highest priority, then oldest, then UID); under BestEffortFIFO a head found inadmissible leaves
the heap (``requeueIfNotPresent``) and the next Workload becomes the head, under StrictFIFO it
stays and blocks; ``requeueWorkloadsCohort`` moves the inadmissible Workloads of a whole cohort
tree back (and of that tree only), ``PushOrUpdate`` moves a changed one back alone.
(Cases after ``cluster_queue_test.go`` ``TestClusterQueueImpl``/``TestQueueInadmissibleWorkloads``.)
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gpusched.kueue.manager import QueueManager
from tests.kueue.test_cycle import pending

# q and r share the cohort tree "root"; s is alone
TREES = {"q": "root", "r": "root", "s": "s"}
ITEMS = {"old": pending("old", "q", 1, at=0), "new": pending("new", "q", 1, at=5),
         "urgent": pending("urgent", "q", 1, at=9, priority=10), "only": pending("only", "r", 1, at=1),
         "alone": pending("alone", "s", 1, at=2)}


def park(name: str) -> Callable[[QueueManager], None]:
    return lambda m: m.not_admitted(ITEMS[name])


def admit(name: str) -> Callable[[QueueManager], None]:
    return lambda m: m.delete(f"ns/{name}")


# (id, strategy of every queue, what happens, the heads after it)
CASES = [
    ("heads by priority, then age", "BestEffortFIFO", [], ["ns/urgent", "ns/only", "ns/alone"]),
    ("an admitted head leaves its queue", "BestEffortFIFO", [admit("urgent")], ["ns/old", "ns/only", "ns/alone"]),
    ("BestEffortFIFO moves past an inadmissible head", "BestEffortFIFO",
     [admit("urgent"), park("old"), park("only")], ["ns/new", "ns/alone"]),
    ("StrictFIFO keeps an inadmissible head", "StrictFIFO", [admit("urgent"), park("old")],
     ["ns/old", "ns/only", "ns/alone"]),
    ("a tree's requeue moves back that tree alone", "BestEffortFIFO",
     [park("urgent"), park("old"), park("new"), park("only"), park("alone"), lambda m: m.requeue_tree("r")],
     ["ns/urgent", "ns/only"]),
    ("a changed Workload leaves the inadmissible set alone", "BestEffortFIFO",
     [park("urgent"), park("old"), lambda m: m.push(ITEMS["old"])], ["ns/old", "ns/only", "ns/alone"]),
    ("requeue_all empties every inadmissible set", "BestEffortFIFO",
     [park("urgent"), park("only"), park("alone"), lambda m: m.requeue_all()], ["ns/urgent", "ns/only", "ns/alone"]),
]


def after(strategy: str, actions: list[Callable[[QueueManager], None]]) -> QueueManager:
    """A manager of every queue under ``strategy``, every Workload pushed, then ``actions``."""
    manager = QueueManager(TREES, dict.fromkeys(TREES, strategy))
    for item in ITEMS.values():
        manager.push(item)
    for action in actions:
        action(manager)
    return manager


@pytest.mark.parametrize("strategy, actions, want", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_heads_after(strategy: str, actions: list[Callable[[QueueManager], None]], want: list[str]) -> None:
    manager = after(strategy, actions)
    assert [h.queued.key for h in manager.heads()] == want
    assert len(manager) == len(ITEMS) - sum(1 for a in actions if a.__qualname__.startswith("admit"))


def fail(name: str) -> Callable[[QueueManager], None]:
    return lambda m: m.not_admitted(ITEMS[name], "WaitingForQuota")


# Scheduling equivalence (cluster_queue.go handleInadmissibleHash and PushOrUpdate; "old" and
# "new" have the same priority and PodSets, "urgent" a higher priority)
EQUIVALENCE = [
    ("a head that did not fit parks its equivalents", "BestEffortFIFO", [admit("urgent"), fail("old")],
     ["ns/only", "ns/alone"], {"ns/old", "ns/new"}),
    ("a Workload pushed after its shape failed is parked", "BestEffortFIFO",
     [fail("old"), lambda m: m.push(ITEMS["new"])], ["ns/urgent", "ns/only", "ns/alone"], {"ns/old", "ns/new"}),
    ("a requeue forgets the failed shapes", "BestEffortFIFO",
     [fail("old"), lambda m: m.requeue_tree("q"), lambda m: m.push(ITEMS["new"])],
     ["ns/urgent", "ns/only", "ns/alone"], set()),
    ("StrictFIFO parks nothing", "StrictFIFO", [admit("urgent"), fail("old")],
     ["ns/old", "ns/only", "ns/alone"], set()),
]


@pytest.mark.parametrize("strategy, actions, want, parked", [c[1:] for c in EQUIVALENCE],
                         ids=[c[0] for c in EQUIVALENCE])
def test_equivalent_workloads(strategy: str, actions: list[Callable[[QueueManager], None]], want: list[str],
                              parked: set[str]) -> None:
    manager = after(strategy, actions)
    assert [h.queued.key for h in manager.heads()] == want
    assert manager.parked_keys() == parked
