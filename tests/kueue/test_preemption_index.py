"""The admitted Workloads by ClusterQueue (``gpusched.kueue.preemption.AdmittedIndex``) and the
candidate search reading only the queues it visits, as upstream's
``pkg/scheduler/preemption/classical/candidate_generator.go`` walks the ClusterQueues of the
cohort subtree (``collectCandidatesInSubtree``) and reads each one's admitted Workloads from the
cache (``pkg/cache/scheduler/clusterqueue.go`` ``Workloads``): the ordering is
``CandidatesOrdering`` (``preemption_test.go`` "preempt newer workloads with the same priority").
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from gpusched.kueue.inputs import queue_policy
from gpusched.kueue.preemption import Admitted, AdmittedIndex, ClassicalPreemption, Preemptor
from gpusched.kueue.quota import add_usage, build_forest
from tests.kueue.builders import make_cohort
from tests.kueue.test_preemption import CPU, cq


def wl(name: str, queue: str, priority: int = 0, admitted_at: float = 0.0, cpus: int = 1) -> Admitted:
    return Admitted(name, queue, {CPU: cpus * 1000}, priority, admitted_at, admitted_at, name)


# (id, operations ("add", workload) | ("discard", key), queue, want in_queue keys, want iteration keys)
INDEX_CASES = [
    ("lower priority first, then the most recently admitted",
     [("add", wl("old", "a", 0, 1.0)), ("add", wl("new", "a", 0, 2.0)), ("add", wl("low", "a", -1, 0.0))],
     "a", ["low", "new", "old"], ["old", "new", "low"]),
    ("other queues are not listed",
     [("add", wl("x", "a")), ("add", wl("y", "b"))], "a", ["x"], ["x", "y"]),
    ("a re-admitted Workload moves queue and goes last in admission order",
     [("add", wl("x", "a")), ("add", wl("y", "a")), ("add", wl("x", "b"))], "a", ["y"], ["y", "x"]),
    ("a discarded Workload leaves its queue's kept order",
     [("add", wl("x", "a", 0, 1.0)), ("add", wl("y", "a", 0, 2.0)), ("discard", "y")], "a", ["x"], ["x"]),
    ("discarding an absent key changes nothing",
     [("add", wl("x", "a")), ("discard", "nope")], "a", ["x"], ["x"]),
]


@pytest.mark.parametrize("operations,queue,want_queue,want_all", [c[1:] for c in INDEX_CASES],
                         ids=[c[0] for c in INDEX_CASES])
def test_index_keeps_candidate_order_per_queue(operations, queue, want_queue, want_all) -> None:
    index = AdmittedIndex()
    for op, arg in operations:
        index.in_queue(queue)               # a kept order must follow every later change
        index.add(arg) if op == "add" else index.discard(arg)
    assert [w.key for w in index.in_queue(queue)] == want_queue
    assert [w.key for w in index] == want_all
    assert len(index) == len(want_all)


class _Recording(AdmittedIndex):
    """An index that records the queues read and refuses a walk over every Workload."""

    def __init__(self, workloads: Sequence[Admitted]) -> None:
        super().__init__(workloads)
        self.read: list[str] = []

    def in_queue(self, cluster_queue: str) -> Sequence[Admitted]:
        self.read.append(cluster_queue)
        return super().in_queue(cluster_queue)

    def __iter__(self) -> Iterator[Admitted]:
        raise AssertionError("the candidate search walked every admitted Workload")


# under root "root": cohort "left" with c1 (6 CPUs, the preemptor's, using 1) and c2 (6, using
# 9); cohort "right" (over its quota: 5 of 2) with c3 (2, using 2: within its quota) and c4
# (none, using 3).
TREE = [cq("c1", 6, "left", reclaimWithinCohort="Any", withinClusterQueue="LowerPriority"),
        cq("c2", 6, "left"), cq("c3", 2, "right"), cq("c4", 0, "right")]
ADMITTED = [wl("own", "c1", -1, 0.0, 1), wl("b1", "c2", 0, 1.0, 5), wl("b2", "c2", 0, 2.0, 4),
            wl("r3", "c3", 0, 0.0, 2), wl("r4", "c4", 0, 0.0, 3)]


def _forest():
    forest = build_forest(TREE, [make_cohort("root"), make_cohort("left", parent="root"),
                                 make_cohort("right", parent="root")])
    for item in ADMITTED:
        for fr, amount in item.usage.items():
            add_usage(forest.queues[item.cluster_queue], fr, amount)
    return forest, {q["metadata"]["name"]: queue_policy(q) for q in TREE}


def test_candidate_search_reads_only_the_queues_it_visits() -> None:
    """c1 asks for 6 CPUs at priority 1 (the root is over its quota: 15 of 14): the search reads
    c2 (over its quota in c1's cohort), then c4 (over its quota in "right", which is over its
    own), then c1's own Workloads; c3, within its quota, is never read, and nothing walks every
    admitted Workload. Same targets, same order as from a plain list."""
    forest, policies = _forest()
    index = _Recording(ADMITTED)
    preemptor = Preemptor("c1", {CPU: 6000}, 1)
    got = [(t.workload.key, t.reason) for t in ClassicalPreemption(forest, policies, index, preemptor).targets()]
    assert index.read == ["c2", "c4", "c1"]
    assert got == [("b2", "InCohortReclamation"), ("r4", "InCohortReclamation"), ("own", "InClusterQueue")]
    from_list = ClassicalPreemption(forest, policies, list(ADMITTED), preemptor).targets()
    assert got == [(t.workload.key, t.reason) for t in from_list]
