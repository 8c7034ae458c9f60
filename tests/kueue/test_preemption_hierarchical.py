"""Classical preemption through cohort trees (``gpusched.kueue.preemption``): the cases of Kueue's
``pkg/scheduler/preemption/preemption_hierarchical_test.go`` (``TestHierarchicalPreemptions``),
same trees, names, priorities and expected targets, with the Preempted condition's message
(``preemption_message``) of each. Quotas are CPUs of flavor ``default``; the preemptor asks in
Preempt mode for everything it requests.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpusched.kueue.inputs import queue_policy
from gpusched.kueue.preemption import Admitted, ClassicalPreemption, Preemptor, preemption_message
from gpusched.kueue.quota import add_usage, build_forest
from tests.kueue.builders import flavor_quota, make_cohort, make_cq

RECLAIM, WHILE_BORROWING, IN_CQ = "InCohortReclamation", "InCohortReclaimWhileBorrowing", "InClusterQueue"
GI = 1024**3
ANY = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}
BORROW_0 = {**ANY, "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 0}}
LOWER_BORROW_0 = {**BORROW_0, "reclaimWithinCohort": "LowerPriority"}


def queue(name: str, cohort: str, cpu: Any = None, preemption: dict[str, Any] | None = None,
          memory: str | None = None) -> dict[str, Any]:
    resources = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    return make_cq(name, *([flavor_quota("default", **resources)] if resources else []), cohort=cohort,
                   preemption=ANY if preemption is None else preemption)


def cohort(name: str, parent: str | None = None, cpu: str | None = None, memory: str | None = None) -> dict[str, Any]:
    resources = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    return make_cohort(name, *([flavor_quota("default", **resources)] if resources else []), parent=parent)


def wl(name: str, cq: str, priority: int, cpus: int, memory_gi: int = 0) -> Admitted:
    usage = {("default", "cpu"): cpus * 1000, **({("default", "memory"): memory_gi * GI} if memory_gi else {})}
    return Admitted(name, cq, usage, priority, 0.0, 0.0, name)


R_C2 = [cohort("r"), cohort("c", "r", "2")]
COMPLEX = [cohort(name, parent, "4") for name, parent in
           [("c11", "r"), ("c12", "r"), ("c21", "c11"), ("c22", "c11"), ("c23", "c11"), ("c31", "c21"), ("c32", "c21")]]

# (id = upstream case, cohorts, queues, admitted, (queue, priority, cpus, memory Gi), want {name: reason})
CASES: list[tuple[Any, ...]] = [
    ("preempt with hierarchical advantage", R_C2, [queue("q", "c"), queue("q_borrowing", "r")],
     [wl("admitted2", "q_borrowing", 0, 2)], ("q", 0, 2, 0), {"admitted2": RECLAIM}),
    ("avoid queues within nominal quota", R_C2,
     [queue("q_nominal", "r", "2"), queue("q", "c"), queue("q_borrowing", "r")],
     [wl("admitted1", "q_nominal", -10, 2), wl("admitted2", "q_borrowing", 0, 2)], ("q", 0, 2, 0),
     {"admitted2": RECLAIM}),
    ("preempt multiple with hierarchical advantage", R_C2, [queue("q", "c"), queue("q_borrowing", "r")],
     [wl("admitted1", "q_borrowing", 1, 1), wl("admitted2", "q_borrowing", 2, 1)], ("q", 0, 2, 0),
     {"admitted1": RECLAIM, "admitted2": RECLAIM}),
    ("preempt in cohort and own CQ", [cohort("r"), cohort("c", "r", "3")],
     [queue("q", "c", preemption=BORROW_0), queue("q_same_cohort", "c")],
     [wl("admitted_not_preemptible", "q_same_cohort", 1, 1), wl("admitted_preemptible", "q_same_cohort", 0, 2),
      wl("admitted_own_queue", "q", -1, 1)], ("q", 1, 2, 0),
     {"admitted_own_queue": IN_CQ, "admitted_preemptible": WHILE_BORROWING}),
    ("prefer to preempt hierarchical candidate", R_C2, [queue("q", "c"), queue("q_borrowing", "r")],
     [wl("admitted_borrowing", "q_borrowing", 1, 1), wl("admitted_same_queue", "q", -2, 1)], ("q", 0, 1, 0),
     {"admitted_borrowing": RECLAIM}),
    ("forced to preempt priority candidate", R_C2,
     [queue("q", "c", preemption=BORROW_0), queue("q_nominal", "r", "2"), queue("q_same_cohort", "c")],
     [wl("admitted_nominal", "q_nominal", -10, 2), wl("admitted_same_cohort", "q_same_cohort", -1, 2)],
     ("q", 0, 2, 0), {"admitted_same_cohort": WHILE_BORROWING}),
    ("incoming workload fits in CQ nominal quota", R_C2,
     [queue("q", "c", "4"), queue("q_borrowing", "r"), queue("q_same_cohort", "c")],
     [wl("admitted_borrowing", "q_borrowing", 10, 3), wl("admitted_same_cohort", "q_same_cohort", 10, 3)],
     ("q", 0, 4, 0), {"admitted_borrowing": RECLAIM, "admitted_same_cohort": RECLAIM}),
    ("preempt hierarchical and priority candidates", [cohort("r", None, "1"), cohort("c", "r", "4")],
     [queue("q", "c", preemption=LOWER_BORROW_0), queue("q_borrowing", "r"), queue("q_same_cohort", "c")],
     [wl("admitted_borrowing", "q_borrowing", -1, 2), wl("admitted_same_cohort_preemptible", "q_same_cohort", -1, 1),
      wl("admitted_borrowing_not_preemptible", "q_borrowing", 1, 2)], ("q", 0, 3, 0),
     {"admitted_borrowing": RECLAIM, "admitted_same_cohort_preemptible": WHILE_BORROWING}),
    ("preempt hierarchical candidates and inside CQ", [cohort("r", None, "1"), cohort("c", "r", "4")],
     [queue("q", "c", preemption=LOWER_BORROW_0), queue("q_borrowing", "r"), queue("q_same_cohort", "c")],
     [wl("admitted_borrowing", "q_borrowing", -1, 2), wl("admitted_same_queue_preemptible", "q", -1, 1),
      wl("admitted_borrowing_not_preemptible", "q_borrowing", 1, 2)], ("q", 0, 3, 0),
     {"admitted_borrowing": RECLAIM, "admitted_same_queue_preemptible": IN_CQ}),
    ("reclaim nominal quota from lowest priority workload, excluding non-borrowing",
     [cohort("r"), cohort("c", "r", "3")],
     [queue("q", "c"), queue("q_borrowing", "r"), queue("q_nominal", "r", "2")],
     [wl("admitted_borrowing_prio_8", "q_borrowing", 8, 1), wl("admitted_borrowing_prio_9", "q_borrowing", 9, 1),
      wl("admitted_borrowing_prio_10", "q_borrowing", 9, 1), wl("admitted_nominal", "q_nominal", -2, 2)],
     ("q", 0, 1, 0), {"admitted_borrowing_prio_8": RECLAIM}),
    ("infeasible preemption all available workloads in pruned subtrees",
     [cohort("r"), cohort("c", "r", "2"), cohort("c_other", "r", "2")],
     [queue("q_other", "c_other"), queue("q", "c"), queue("q_same_cohort", "c")],
     [wl("admitted_other_1", "q_other", -10, 1), wl("admitted_other_2", "q_other", -10, 1),
      wl("admitted_same_cohort", "q_same_cohort", 0, 2)], ("q", 0, 2, 0), {}),
    ("hiearchical preemption with multiple resources", [cohort("r", None, "3"), cohort("c", "r", "4", "4Gi")],
     [queue("q", "c"), queue("q_borrowing", "r"), queue("q_same_cohort", "c")],
     [wl("admitted_borrowing", "q_borrowing", 0, 3, 1), wl("admitted_same_cohort", "q_same_cohort", -2, 1, 3)],
     ("q", -2, 2, 1), {"admitted_borrowing": RECLAIM}),
    ("respect lending limits", R_C2,
     [make_cq("q", flavor_quota("default", cpu=("3", None, "2")), cohort="c", preemption=ANY),
      queue("q_borrowing", "r")], [wl("admitted_borrowing", "q_borrowing", 0, 4)], ("q", -2, 5, 0),
     {"admitted_borrowing": RECLAIM}),
    ("reclaim in complex hierarchy", [cohort("r"), *COMPLEX],
     [queue("q1", "c12"), queue("q2", "c23"), queue("q3", "c22"), queue("q4", "c32"), queue("q5", "c31")],
     [wl("admitted_borrowing_1", "q1", -6, 4), wl("admitted_borrowing_2", "q1", -5, 4),
      wl("admitted_borrowing_3", "q2", -9, 4), wl("admitted_borrowing_4", "q2", -10, 4),
      wl("admitted_borrowing_5", "q3", -4, 4), wl("admitted_borrowing_6", "q3", -3, 3),
      wl("admitted_borrowing_7", "q4", 4, 2), wl("admitted_borrowing_8", "q4", 2, 3)], ("q5", -2, 7, 0),
     {"admitted_borrowing_1": RECLAIM, "admitted_borrowing_4": RECLAIM}),
]


def targets(cohorts, queues, admitted, incoming):
    forest = build_forest(queues, cohorts)
    for item in admitted:
        for fr, amount in item.usage.items():
            add_usage(forest.queues[item.cluster_queue], fr, amount)
    name, priority, cpus, memory_gi = incoming
    request = {("default", "cpu"): cpus * 1000, **({("default", "memory"): memory_gi * GI} if memory_gi else {})}
    policies = {q["metadata"]["name"]: queue_policy(q) for q in queues}
    return forest, ClassicalPreemption(forest, policies, admitted, Preemptor(name, request, priority)).targets()


@pytest.mark.parametrize("cohorts,queues,admitted,incoming,want", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hierarchical_preemptions(cohorts, queues, admitted, incoming, want) -> None:
    _, got = targets(cohorts, queues, admitted, incoming)
    assert {t.workload.key: t.reason for t in got} == want


@pytest.mark.parametrize("case,victim,want", [
    ("preempt with hierarchical advantage", "admitted2",
     "Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; "
     "preemptor path: /r/c/q; preemptee path: /r/q_borrowing"),
    ("preempt in cohort and own CQ", "admitted_own_queue",
     "Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to prioritization in the ClusterQueue; "
     "preemptor path: /r/c/q; preemptee path: /r/c/q"),
    ("preempt in cohort and own CQ", "admitted_preemptible",
     "Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort while "
     "borrowing; preemptor path: /r/c/q; preemptee path: /r/c/q_same_cohort"),
], ids=["reclamation", "in the ClusterQueue", "while borrowing"])
def test_victim_messages(case, victim, want) -> None:
    """The Evicted and Preempted conditions' message each upstream case asserts, built from the
    target's reason and the two queues' paths through the cohort tree."""
    cohorts, queues, admitted, incoming, _ = next(c[1:] for c in CASES if c[0] == case)
    forest, got = targets(cohorts, queues, admitted, incoming)
    target = next(t for t in got if t.workload.key == victim)
    message = preemption_message("wl-in", "job-in", target.reason, forest.queues[incoming[0]].path(),
                                 forest.queues[target.workload.cluster_queue].path())
    assert message == want
