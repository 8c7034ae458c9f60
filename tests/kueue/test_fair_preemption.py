"""Fair-sharing preemption (``gpusched.kueue.fair_preemption``): the cases of Kueue's
``pkg/scheduler/preemption/preemption_fair_test.go`` (``TestFairPreemptions``), same fixtures,
names and expected targets. Every admitted workload is reserved at the same instant and has its
name as UID, as upstream's test sets it; the preemptor asks for CPU in flavor ``default`` (or
the case's flavor) in Preempt mode.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpusched.kueue.fair_sharing import (LESS_THAN_INITIAL_SHARE, LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,
                                         FairSharing)
from gpusched.kueue.inputs import queue_policy
from gpusched.kueue.preemption import Admitted, Preemptor
from gpusched.kueue.quota import add_usage, build_forest
from gpusched.kueue.targets import select_targets
from tests.kueue.builders import flavor_quota, make_cohort, make_cq

FS, RECLAIM, IN_CQ = "InCohortFairSharing", "InCohortReclamation", "InClusterQueue"
STANDARD = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}


def cq(name: str, cohort: str | None, cpu: str | None = "3", weight: str | None = None,
       preemption: dict[str, Any] | None = None, **flavors: str) -> dict[str, Any]:
    quotas = [flavor_quota(f, cpu=v) for f, v in flavors.items()] or (
        [flavor_quota("default", cpu=cpu)] if cpu is not None else [])
    spec: dict[str, Any] = {"preemption": preemption or {}}
    if weight is not None:
        spec["fairSharing"] = {"weight": weight}
    return make_cq(name, *quotas, cohort=cohort, **spec)


def cohort(name: str, parent: str | None = None, cpu: str | None = None, weight: str | None = None) -> dict[str, Any]:
    return make_cohort(name, *([flavor_quota("default", cpu=cpu)] if cpu else []), parent=parent, weight=weight)


def wl(name: str, queue: str, cpus: float = 1, priority: int = 0, flavor: str = "default") -> Admitted:
    return Admitted(name, queue, {(flavor, "cpu"): round(cpus * 1000)}, priority, 0.0, 0.0, name)


def units(queue: str, *names: str, priority: int = 0) -> list[Admitted]:
    return [wl(name, queue, 1, priority) for name in names]


BORROW_BELOW_MINUS_3 = {**STANDARD, "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": -3}}
BASE = [cq("a", "all", preemption=BORROW_BELOW_MINUS_3), cq("b", "all", preemption=BORROW_BELOW_MINUS_3),
        cq("c", "all", preemption=BORROW_BELOW_MINUS_3), cq("preemptible", "all", "0")]
A3, B3, B5 = units("a", "a1", "a2", "a3"), units("b", "b1", "b2", "b3"), units("b", "b1", "b2", "b3", "b4", "b5")


def weighted(b_weight: str, with_c: bool = True, a_weight: str | None = None) -> list[dict[str, Any]]:
    queues = [cq("a", "all", weight=a_weight, preemption=STANDARD), cq("b", "all", weight=b_weight, preemption=STANDARD)]
    return queues + ([cq("c", "all", preemption=STANDARD)] if with_c else [])


HIERARCHY = [cq("a", "LEFT", "1", "2", {"reclaimWithinCohort": "Any"}), cq("b", "LEFT", "1"), cq("c", "ROOT", "1"),
             cq("d", "RIGHT", "1"), cq("e", "RIGHT", "1", "0.99")]
HIERARCHY_COHORTS = [cohort("ROOT", cpu="5"), cohort("LEFT", "ROOT", "5", "2"), cohort("RIGHT", "ROOT", "5")]
PROTECTED = [cq("a", "ROOT", "5", "10", {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}),
             cq("b", "RIGHT", None, "0.1")]
IMPORTANT = [cq("a", "ROOT", "5", "10", {"reclaimWithinCohort": "LowerPriority", "withinClusterQueue": "LowerPriority"}),
             cq("b", "RIGHT", None, "0.1")]
DEEP = [cohort("ROOT"), cohort("A", "ROOT", weight="1.01"), cohort("AA", "A"), cohort("AAA", "AA"),
        cohort("B", "ROOT", weight="0.99"), cohort("BB", "B"), cohort("BBB", "BB"), cohort("C", "ROOT"),
        cohort("CC", "C"), cohort("CCC", "CC"), cohort("CCCC", "CCC", "1")]
P_Y_X = [cq("p", "A", "2", "1", {"reclaimWithinCohort": "Any"}), cq("y", "A", "2", "1"), cq("x", "ROOT", "1", "1")]

# (id = upstream case, queues, cohorts, admitted, (queue, cpus, priority), strategies, want {name: reason})
CASES: list[tuple[Any, ...]] = [
    ("reclaim nominal from user using the most", BASE, [], A3 + B5 + units("c", "c1"), ("c", 1, 0), None,
     {"b1": RECLAIM}),
    ("can reclaim from queue using less, if taking the latest workload from user using the most isn't enough",
     BASE, [], [wl("a1", "a", 3), wl("a2", "a", 1), wl("b1", "b", 2), wl("b2", "b", 3)], ("c", 3, 0), None,
     {"a1": RECLAIM}),
    ("reclaim borrowable quota from user using the most", BASE, [], A3 + B5 + units("c", "c1"), ("a", 1, 0), None,
     {"b1": FS}),
    ("preempt one from each CQ borrowing", BASE, [],
     [wl("a1", "a", 0.5), wl("a2", "a", 0.5), wl("a3", "a", 3), wl("b1", "b", 0.5), wl("b2", "b", 0.5),
      wl("b3", "b", 3)], ("c", 2, 0), None, {"a1": RECLAIM, "b1": RECLAIM}),
    ("can't preempt when everyone under nominal", BASE, [], A3 + B3 + units("c", "c1", "c2", "c3"), ("c", 1, 0),
     None, {}),
    ("can't preempt when it would switch the imbalance", BASE, [], A3 + B5, ("a", 2, 0), None, {}),
    ("can preempt lower priority workloads from same CQ", BASE, [],
     units("a", "a1_low", "a2_low", priority=-1) + units("a", "a3", "a4") + B5, ("a", 2, 0), None,
     {"a1_low": IN_CQ, "a2_low": IN_CQ}),
    ("can preempt a combination of same CQ and highest user", BASE, [],
     units("a", "a_low", priority=-1) + units("a", "a2", "a3") + B5 + units("b", "b6"), ("a", 2, 0), None,
     {"a_low": IN_CQ, "b1": FS}),
    ("preempt huge workload if there is no other option, as long as the target CQ gets a lower share", BASE, [],
     [wl("b1", "b", 9)], ("a", 2, 0), None, {"b1": RECLAIM}),
    ("can't preempt huge workload if the incoming is also huge", BASE, [], [wl("a1", "a", 2), wl("b1", "b", 7)],
     ("a", 5, 0), None, {}),
    ("can't preempt 2 smaller workloads if the incoming is huge", BASE, [],
     [wl("b1", "b", 2), wl("b2", "b", 2), wl("b3", "b", 3)], ("a", 6, 0), None, {}),
    ("preempt from target and others even if over nominal", BASE, [],
     [wl("a1_low", "a", 2, -1), wl("a2_low", "a", 1, -1), wl("b1", "b", 3), wl("b2", "b", 3)], ("a", 4, 0), None,
     {"a1_low": IN_CQ, "b1": FS}),
    ("prefer to preempt workloads that don't make the target CQ have the biggest share", BASE, [],
     [wl("b1", "b", 2), wl("b2", "b", 1), wl("b3", "b", 2), wl("c1", "c", 1)], ("a", 3.5, 0), None, {"b2": FS}),
    ("preempt from different cluster queues if the end result has a smaller max share", BASE, [],
     [wl("b1", "b", 2), wl("b2", "b", 2.5), wl("c1", "c", 2), wl("c2", "c", 2.5)], ("a", 3.5, 0), None,
     {"b1": FS, "c1": FS}),
    ("scenario above does not flap", BASE, [], [wl("a1", "a", 3.5), wl("b2", "b", 2.5), wl("c2", "c", 2.5)],
     ("b", 2, 0), None, {}),
    ("cannot preempt if it would make the candidate CQ go under nominal after preempting one element", BASE, [],
     [wl("b1", "b", 3), wl("b2", "b", 3), wl("c1", "c", 3)], ("a", 4, 0), None, {}),
    ("workloads under priority threshold not capriciously preempted", BASE, [],
     A3 + B3 + units("preemptible", "preemptible1", "preemptible2", "preemptible3", priority=-3), ("a", 2, 0), None,
     {}),
    ("preempt lower priority first, even if big", BASE, [],
     [wl("a1", "a", 3), wl("b_low", "b", 5, 0), wl("b_high", "b", 1, 1)], ("a", 1, 0), (LESS_THAN_INITIAL_SHARE,),
     {"b_low": FS}),
    ("preempt workload that doesn't transfer the imbalance, even if high priority", BASE, [],
     [wl("a1", "a", 3), wl("b_low", "b", 5, 0), wl("b_high", "b", 1, 1)], ("a", 1, 0),
     (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,), {"b_high": FS}),
    ("CQ with higher weight can preempt more", weighted("1", a_weight="2"), [], A3 + B5 + units("b", "b6"),
     ("a", 2, 0), None, {"b1": FS, "b2": FS}),
    ("can preempt anything borrowing from CQ with 0 weight", weighted("0"), [], A3 + B5 + units("b", "b6"),
     ("a", 3, 0), None, {"b1": FS, "b2": FS, "b3": FS}),
    ("can't preempt nominal from CQ with 0 weight", weighted("0", with_c=False), [], A3 + B3, ("a", 1, 0), None, {}),
    ("can't preempt nominal from Cohort with 0 weight",
     [cq("left-cq", "root", "0", preemption={"reclaimWithinCohort": "Any"}),
      cq("right-cq", "right-cohort", "0", "0", {"reclaimWithinCohort": "Any"})],
     [cohort("right-cohort", "root", "1", "0")], units("right-cq", "right-1"), ("left-cq", 1, 0), None, {}),
    ("can preempt within cluster queue when no cohort",
     [cq("a", None, "1", preemption={"withinClusterQueue": "LowerPriority"})], [], units("a", "a1"),
     ("a", 1, 1000), None, {"a1": IN_CQ}),
    ("hierarchical preemption", HIERARCHY, HIERARCHY_COHORTS,
     [wl(f"{q}{i}", q, 1, i) for q in "bcde" for i in range(1, 6)], ("a", 5, 0), None,
     {"b1": FS, "b2": FS, "c1": FS, "c2": FS, "e1": FS}),
    ("borrowing cq in non-borrowing cohort is protected", PROTECTED,
     [cohort("ROOT"), cohort("RIGHT", "ROOT", "1", "0.1")],
     units("a", "a1", "a2", "a3", priority=-1) + units("b", "b1", priority=-1), ("a", 5, 0), None,
     {"a1": IN_CQ, "a2": IN_CQ, "a3": IN_CQ}),
    ("forced to preempt within clusterqueue because borrowing workload too important", IMPORTANT,
     [cohort("ROOT"), cohort("RIGHT", "ROOT", "3", "0.1")],
     units("a", "a1", "a2", "a3", priority=-1) + [wl("b1", "b", 4, 100)], ("a", 4, 0), None,
     {"a1": IN_CQ, "a2": IN_CQ, "a3": IN_CQ}),
    ("deep preemption", [cq("a", "AAA", "0", preemption={"reclaimWithinCohort": "Any"}), cq("b", "BBB", "0")], DEEP,
     units("b", "b1"), ("a", 1, 0), None, {"b1": FS}),
    ("cq with zero weight can reclaim nominal quota",
     [cq("a", "ROOT", "1", "0.0", {"reclaimWithinCohort": "Any"}), cq("b", "ROOT", "0", "1.0")], [],
     units("b", "b1"), ("a", 1, 0), None, {"b1": RECLAIM}),
    ("cohort with zero weight can reclaim nominal quota",
     [cq("a", "A", "0", "0.0", {"reclaimWithinCohort": "Any"}), cq("b", "ROOT", "0", "1.0")],
     [cohort("A", "ROOT", "1", "0.0")], units("b", "b1"), ("a", 1, 0), None, {"b1": FS}),
    ("zero weight borrowing preemptor cannot preempt from a borrowing CQ with a non-zero weight",
     [cq("a", "all", "1", "0", {"reclaimWithinCohort": "Any"}), cq("b", "all", "1", "1")], [],
     units("a", "a1") + units("b", "b1", "b2"), ("a", 1, 0), None, {}),
    ("zero weight borrowing preemptor can preempt from a borrowing CQ which also has zero weight",
     [cq("a", "all", "1", "0", {"reclaimWithinCohort": "Any"}), cq("b", "all", "0", "0")], [cohort("all", cpu="3")],
     units("b", "b1", "b2", "b3"), ("a", 2, 0), None, {"b1": FS}),
    ("non-zero weight borrowing preemptor preempts from a borrowing CQ",
     [cq("a", "all", "1", "1", {"reclaimWithinCohort": "Any"}), cq("b", "all", "0", "1")], [cohort("all", cpu="3")],
     units("b", "b1", "b2", "b3"), ("a", 2, 0), None, {"b1": FS}),
    ("candidates skipped by the first strategy are still available to the second strategy", P_Y_X,
     [cohort("A", "ROOT", "1", "0")], [wl("p1", "p", 2), wl("y1", "y", 2), wl("y2", "y", 2)] + units("x", "x1", "x2"),
     ("p", 1, 0), None, {"y1": FS, "x1": FS}),
]


def usages(forest) -> dict[str, dict[Any, int]]:
    nodes = [*forest.queues.items(), *forest.cohorts.items()]
    return {name: {fr: v for fr, v in node.usage.items() if v} for name, node in nodes}


def fair_targets(queues, cohorts, admitted, preemptor, strategies, flavor: str = "default") -> dict[str, str]:
    forest = build_forest(queues, cohorts)
    for item in admitted:
        for fr, amount in item.usage.items():
            add_usage(forest.queues[item.cluster_queue], fr, amount)
    before = usages(forest)
    policies = {q["metadata"]["name"]: queue_policy(q) for q in queues}
    queue, cpus, priority = preemptor
    config = FairSharing(strategies) if strategies else FairSharing()
    got = select_targets(forest, policies, admitted,
                         Preemptor(queue, {(flavor, "cpu"): round(cpus * 1000)}, priority), config)
    assert usages(forest) == before, "the simulation restores every node's usage"
    return {t.workload.key: t.reason for t in got}


@pytest.mark.parametrize("queues,cohorts,admitted,preemptor,strategies,want", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_fair_preemptions(queues, cohorts, admitted, preemptor, strategies, want) -> None:
    assert fair_targets(queues, cohorts, admitted, preemptor, strategies) == want


def test_nominal_first_preempts_despite_a_high_aggregate_share() -> None:
    """preemption_fair_test.go "nominal first: workload fitting within nominal can preempt despite
    high aggregate DRS": within its nominal premium quota, a reclaims b's borrowed premium CPU even
    though its cheap borrowing gives it the larger share."""
    fungible = {"reclaimWithinCohort": "Any"}
    queues = [cq("a", "all", None, None, fungible, premium="3", cheap="0"), cq("b", "all", None, premium="0", cheap="6")]
    admitted = [wl("a_prem1", "a", 1, flavor="premium"), wl("a_prem2", "a", 1, flavor="premium")] + [
        wl(f"a_cheap{i}", "a", 1, flavor="cheap") for i in range(1, 6)] + [wl("b_prem1", "b", 1, flavor="premium")]
    assert fair_targets(queues, [], admitted, ("a", 1, 0), None, "premium") == {"b_prem1": RECLAIM}
