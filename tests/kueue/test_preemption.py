"""Classical preemption target selection (``gpusched.kueue.preemption``). Each case is named
after the case of Kueue's ``pkg/scheduler/preemption/preemption_test.go`` (``TestPreemption``)
whose rule it reproduces, on a smaller fixture: which workloads are targets, and why.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpusched.kueue.flavors import NO_CANDIDATES, PREEMPT, RECLAIM
from gpusched.kueue.inputs import queue_policy
from gpusched.kueue.preemption import Admitted, ClassicalPreemption, Preemptor, preemption_message
from gpusched.kueue.targets import oracle
from gpusched.kueue.quota import add_usage, build_forest
from tests.kueue.builders import flavor_quota, make_cq

CPU = ("default", "cpu")


def cq(name: str, nominal: int, cohort: str | None = None, **preemption: Any) -> dict[str, Any]:
    return make_cq(name, flavor_quota("default", cpu=str(nominal)), cohort=cohort, preemption=preemption)


def wl(name: str, queue: str, cpus: int, priority: int = 0, admitted_at: float = 0.0) -> Admitted:
    return Admitted(name, queue, {CPU: cpus * 1000}, priority, admitted_at, admitted_at, name)


def setup(queues: list[dict[str, Any]], admitted: list[Admitted]):
    forest = build_forest(queues)
    for item in admitted:
        for fr, amount in item.usage.items():
            add_usage(forest.queues[item.cluster_queue], fr, amount)
    return forest, {q["metadata"]["name"]: queue_policy(q) for q in queues}


STANDALONE = [cq("standalone", 6, withinClusterQueue="LowerPriority")]
COHORT = [cq("c1", 6, "cohort", reclaimWithinCohort="Any"), cq("c2", 6, "cohort")]
BORROWING = [cq("a", 2, "shared", reclaimWithinCohort="LowerPriority",
                borrowWithinCohort={"policy": "LowerPriority", "maxPriorityThreshold": 0}),
             cq("b", 2, "shared")]

# (id = upstream case name, queues, admitted, preemptor (cq, cpus, priority), want [(name, reason)])
CASES = [
    ("preempt lowest priority", STANDALONE,
     [wl("low", "standalone", 2, -1), wl("mid", "standalone", 2, 0), wl("high", "standalone", 2, 1)],
     ("standalone", 2, 1), [("low", "InClusterQueue")]),
    ("preempt multiple", STANDALONE,
     [wl("low", "standalone", 2, -1), wl("mid", "standalone", 2, 0), wl("high", "standalone", 2, 1)],
     ("standalone", 3, 1), [("low", "InClusterQueue"), ("mid", "InClusterQueue")]),
    ("no preemption for low priority", STANDALONE,
     [wl("low", "standalone", 3, -1), wl("mid", "standalone", 3, 0)], ("standalone", 1, -1), []),
    ("minimal set excludes low priority", STANDALONE,
     [wl("low", "standalone", 1, -1), wl("mid", "standalone", 5, 0)], ("standalone", 4, 1),
     [("mid", "InClusterQueue")]),
    ("reclaim quota from borrower", COHORT,
     [wl("own", "c1", 3), wl("w1", "c2", 5, 0, 1.0), wl("w2", "c2", 4, 0, 2.0)], ("c1", 3, 0),
     [("w2", "InCohortReclamation")]),
    ("no workloads borrowing", COHORT,
     [wl("own", "c1", 6, -1), wl("w1", "c2", 6, -1)], ("c1", 1, 1), []),
    ("can't preempt workloads in ClusterQueue for withinClusterQueue=Never", COHORT,
     [wl("own", "c1", 6, -1)], ("c1", 1, 1), []),
    ("use BorrowWithinCohort; allow preempting a lower-priority workload from another ClusterQueue while borrowing",
     BORROWING, [wl("b1", "b", 3, -1)], ("a", 3, 1), [("b1", "InCohortReclaimWhileBorrowing")]),
    ("use BorrowWithinCohort; don't allow preempting a lower-priority workload with priority above "
     "MaxPriorityThreshold, if borrowing is required even after the preemption",
     BORROWING, [wl("b1", "b", 3, 1)], ("a", 3, 2), []),
]


@pytest.mark.parametrize("queues,admitted,preemptor,want", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_classical_targets(queues, admitted, preemptor, want) -> None:
    forest, policies = setup(queues, admitted)
    queue, cpus, priority = preemptor
    before = {name: dict(node.usage) for name, node in forest.queues.items()}
    got = ClassicalPreemption(forest, policies, admitted, Preemptor(queue, {CPU: cpus * 1000}, priority)).targets()
    assert sorted((t.workload.key, t.reason) for t in got) == sorted(want)
    assert {name: dict(node.usage) for name, node in forest.queues.items()} == before, "usage restored"


@pytest.mark.parametrize("queue,priority,want", [
    ("standalone", 1, PREEMPT), ("c1", 0, RECLAIM), ("c2", 0, NO_CANDIDATES),
], ids=["own queue's victims: Preempt", "another queue's: Reclaim", "none: NoCandidates"])
def test_oracle_possibility(queue, priority, want) -> None:
    """preemption_oracle.go ``SimulatePreemption``: Preempt when a target is in the preemptor's
    queue, Reclaim when all are elsewhere, NoCandidates when there are none."""
    queues = STANDALONE + COHORT
    admitted = [wl("low", "standalone", 6, -1), wl("own", "c1", 3), wl("w1", "c2", 9)]
    forest, policies = setup(queues, admitted)
    simulate = oracle(forest, policies, admitted, queue, priority)
    assert simulate(CPU, 3000)[0] == want


def test_preemption_message_as_upstream() -> None:
    assert preemption_message("uid-1", "", "InCohortReclamation", "/cohort/c1", "/cohort/c2") == (
        "Preempted to accommodate a workload (UID: uid-1, JobUID: UNKNOWN) due to reclamation within "
        "the cohort; preemptor path: /cohort/c1; preemptee path: /cohort/c2")
