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
from gpusched.objects.quantity import canonical
from tests.kueue.builders import flavor_quota, make_cohort, make_cq

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


# Kueue's preemption_test.go ``TestPreemption`` fixture (``defaultClusterQueues``): quotas are
# (nominal, borrowingLimit, lendingLimit); memory in Gi.
def upstream_cq(name: str, cohort: str | None, preemption: dict[str, Any], **flavors: dict[str, Any]) -> dict[str, Any]:
    quotas = [flavor_quota(f, **{r: (v if isinstance(v, tuple) else (v, None, None)) for r, v in res.items()})
              for f, res in flavors.items()]
    return make_cq(name, *quotas, cohort=cohort, preemption=preemption)


LOWER = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "LowerPriority"}
NEVER_ANY = {"withinClusterQueue": "Never", "reclaimWithinCohort": "Any"}
BORROW_LOWER_0 = {"policy": "LowerPriority", "maxPriorityThreshold": 0}
DEFAULT_CQS = [
    {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "standalone"},
     "spec": {"resourceGroups": [
         {"coveredResources": ["cpu"], "flavors": [flavor_quota("default", cpu="6")]},
         {"coveredResources": ["memory"], "flavors": [flavor_quota("alpha", memory="3Gi"), flavor_quota("beta", memory="3Gi")]}],
         "preemption": {"withinClusterQueue": "LowerPriority"}}},
    upstream_cq("c1", "cohort", LOWER, default={"cpu": ("6", "6", None), "memory": ("3Gi", "3Gi", None)}),
    upstream_cq("c2", "cohort", NEVER_ANY, default={"cpu": ("6", "6", None), "memory": ("3Gi", "3Gi", None)}),
    upstream_cq("d1", "cohort-no-limits", LOWER, default={"cpu": "6", "memory": "3Gi"}),
    upstream_cq("d2", "cohort-no-limits", NEVER_ANY, default={"cpu": "6", "memory": "3Gi"}),
    upstream_cq("l1", "legion", LOWER, default={"cpu": ("6", "12", None), "memory": ("3Gi", "6Gi", None)}),
    upstream_cq("preventStarvation", None, {"withinClusterQueue": "LowerOrNewerEqualPriority"}, default={"cpu": "6"}),
    upstream_cq("a_standard", "with_shared_cq", {**LOWER, "withinClusterQueue": "Never",
                                                 "borrowWithinCohort": BORROW_LOWER_0}, default={"cpu": ("1", "12", None)}),
    upstream_cq("b_standard", "with_shared_cq", {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any",
                                                 "borrowWithinCohort": BORROW_LOWER_0}, default={"cpu": ("1", "12", None)}),
    upstream_cq("a_best_effort", "with_shared_cq", {**LOWER, "withinClusterQueue": "Never",
                                                    "borrowWithinCohort": BORROW_LOWER_0}, default={"cpu": ("1", "12", None)}),
    upstream_cq("b_best_effort", "with_shared_cq", {**LOWER, "withinClusterQueue": "Never",
                                                    "borrowWithinCohort": BORROW_LOWER_0}, default={"cpu": ("0", "13", None)}),
    upstream_cq("shared", "with_shared_cq", {}, default={"cpu": "10"}),
    upstream_cq("lend1", "cohort-lend", LOWER, default={"cpu": ("6", None, "4")}),
    upstream_cq("lend2", "cohort-lend", LOWER, default={"cpu": ("6", None, "2")}),
    upstream_cq("a", "cohort-three", {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
                default={"cpu": "2", "memory": "2"}),
    upstream_cq("b", "cohort-three", {}, default={"cpu": "2", "memory": "2"}),
    upstream_cq("c", "cohort-three", {}, default={"cpu": "2", "memory": "2"}),
]


def up(name: str, queue: str, priority: int = 0, at: float = 0.0, created: float = 0.0, **usage: str) -> Admitted:
    """An admitted workload: ``cpu="3"`` or ``flavor__memory="2Gi"`` (flavor ``default`` if none)."""
    amounts = {}
    for key, qty in usage.items():
        flavor, res = key.split("__") if "__" in key else ("default", key)
        amounts[(flavor, res)] = canonical(res, qty)
    return Admitted(name, queue, amounts, priority, at, created, name)


def need(**request: str) -> dict[tuple[str, str], int]:
    out = {}
    for key, qty in request.items():
        flavor, res = key.split("__") if "__" in key else ("default", key)
        out[(flavor, res)] = canonical(res, qty)
    return out


STARVING = [up("wl1", "preventStarvation", 2, 0.0, cpu="2"), up("wl2", "preventStarvation", 1, 1.0, 100.0, cpu="2"),
            up("wl3", "preventStarvation", 1, 0.0, 100.0, cpu="2")]
THREE = [up("a1", "a", -2, cpu="1"), up("a2", "a", -2, cpu="1"), up("a3", "a", -1, cpu="1")] + [
    up(f"b{i}", "b", 0, cpu="1") for i in (1, 2, 3)]
THREE_MEM = [up(w.key, w.cluster_queue, w.priority, cpu="1", memory="1") for w in THREE]
IN_CQ, RECLAIM, WHILE = "InClusterQueue", "InCohortReclamation", "InCohortReclaimWhileBorrowing"

# (id = upstream case, admitted, (queue, priority, request, flavor-resources in Preempt mode or None: all), want)
UPSTREAM: list[tuple[Any, ...]] = [
    ("preempt lowest priority", [up("low", "standalone", -1, cpu="2"), up("mid", "standalone", cpu="2"),
                                 up("high", "standalone", 1, cpu="2")], ("standalone", 1, need(cpu="2"), None),
     {"low": IN_CQ}),
    ("preempt multiple", [up("low", "standalone", -1, cpu="2"), up("mid", "standalone", cpu="2"),
                          up("high", "standalone", 1, cpu="2")], ("standalone", 1, need(cpu="3"), None),
     {"low": IN_CQ, "mid": IN_CQ}),
    ("no preemption for low priority", [up("low", "standalone", -1, cpu="3"), up("mid", "standalone", cpu="3")],
     ("standalone", -1, need(cpu="1"), None), {}),
    ("not enough low priority workloads", [up("low", "standalone", -1, cpu="3"), up("mid", "standalone", cpu="3")],
     ("standalone", 0, need(cpu="4"), None), {}),
    ("some free quota, preempt low priority", [up("low", "standalone", -1, cpu="1"), up("mid", "standalone", cpu="1"),
                                               up("high", "standalone", 1, cpu="3")],
     ("standalone", 1, need(cpu="2"), None), {"low": IN_CQ}),
    ("minimal set excludes low priority", [up("low", "standalone", -1, cpu="1"), up("mid", "standalone", cpu="2"),
                                           up("high", "standalone", 1, cpu="3")],
     ("standalone", 1, need(cpu="2"), None), {"mid": IN_CQ}),
    ("only preempt workloads using the chosen flavor",
     [up("low", "standalone", -1, alpha__memory="2Gi"), up("mid", "standalone", beta__memory="1Gi"),
      up("high", "standalone", 1, beta__memory="1Gi")],
     ("standalone", 1, need(cpu="1", beta__memory="2Gi"), (("beta", "memory"),)), {"mid": IN_CQ}),
    ("reclaim quota from borrower", [up("c1-low", "c1", -1, cpu="3"), up("c2-mid", "c2", cpu="3"),
                                     up("c2-high", "c2", 1, cpu="6")], ("c1", 1, need(cpu="3"), None),
     {"c2-mid": RECLAIM}),
    ("reclaim quota if workload requests 0 resources for a resource at nominal quota",
     [up("c1-low", "c1", -1, cpu="3", memory="3Gi"), up("c2-mid", "c2", cpu="3"), up("c2-high", "c2", 1, cpu="6")],
     ("c1", 1, need(cpu="3", memory="0"), (("default", "cpu"),)), {"c2-mid": RECLAIM}),
    ("no workloads borrowing", [up("c1-high", "c1", 1, cpu="4"), up("c2-low-1", "c2", -1, cpu="4")],
     ("c1", 1, need(cpu="4"), None), {}),
    ("not enough workloads borrowing", [up("c1-high", "c1", 1, cpu="4"), up("c2-low-1", "c2", -1, cpu="4"),
                                        up("c2-low-2", "c2", -1, cpu="4")], ("c1", 1, need(cpu="4"), None), {}),
    ("preempting locally and borrowing other resources in cohort, without cohort candidates",
     [up("c1-low", "c1", -1, cpu="4"), up("c2-low-1", "c2", -1, cpu="4"), up("c2-high-2", "c2", 1, cpu="4")],
     ("c1", 1, need(cpu="4", memory="5Gi"), None), {"c1-low": IN_CQ}),
    ("preempting locally and borrowing same resource in cohort",
     [up("c1-med", "c1", 0, cpu="4"), up("c1-low", "c1", -1, cpu="4"), up("c2-low-1", "c2", -1, cpu="4")],
     ("c1", 1, need(cpu="4"), None), {"c1-low": IN_CQ}),
    ("preempting locally and borrowing same resource in cohort; no borrowing limit in the cohort",
     [up("d1-med", "d1", 0, cpu="4"), up("d1-low", "d1", -1, cpu="4"), up("d2-low-1", "d2", -1, cpu="4")],
     ("d1", 1, need(cpu="4"), None), {"d1-low": IN_CQ}),
    ("preempting locally and borrowing other resources in cohort, with cohort candidates",
     [up("c1-med", "c1", 0, cpu="4"), up("c2-low-1", "c2", -1, cpu="5"), up("c2-low-2", "c2", -1, cpu="1"),
      up("c2-low-3", "c2", -1, cpu="1")], ("c1", 1, need(cpu="2", memory="5Gi"), None), {"c1-med": IN_CQ}),
    ("preempting locally and not borrowing same resource in 1-queue cohort",
     [up("l1-med", "l1", 0, cpu="4"), up("l1-low", "l1", -1, cpu="2")], ("l1", 1, need(cpu="4"), None),
     {"l1-med": IN_CQ}),
    ("do not reclaim borrowed quota from same priority for withinCohort=ReclaimFromLowerPriority",
     [up("c1", "c1", cpu="2"), up("c2-1", "c2", cpu="4"), up("c2-2", "c2", cpu="4")], ("c1", 0, need(cpu="4"), None),
     {}),
    ("reclaim borrowed quota from same priority for withinCohort=ReclaimFromAny",
     [up("c1-1", "c1", cpu="4"), up("c1-2", "c1", 1, cpu="4"), up("c2", "c2", cpu="2")], ("c2", 0, need(cpu="4"), None),
     {"c1-1": RECLAIM}),
    ("preempt from all ClusterQueues in cohort",
     [up("c1-low", "c1", -1, cpu="3"), up("c1-mid", "c1", cpu="2"), up("c2-low", "c2", -1, cpu="3"),
      up("c2-mid", "c2", cpu="4")], ("c1", 0, need(cpu="4"), None), {"c1-low": IN_CQ, "c2-low": RECLAIM}),
    ("can't preempt workloads in ClusterQueue for withinClusterQueue=Never", [up("c2-low", "c2", -1, cpu="3")],
     ("c2", 1, need(cpu="4"), None), {}),
    ("each podset preempts a different flavor",
     [up("low-alpha", "standalone", -1, alpha__memory="2Gi"), up("low-beta", "standalone", -1, beta__memory="2Gi")],
     ("standalone", 0, need(alpha__memory="2Gi", beta__memory="2Gi"), None), {"low-alpha": IN_CQ, "low-beta": IN_CQ}),
    ("preempt newer workloads with the same priority", STARVING, ("preventStarvation", 1, need(cpu="2"), None),
     {"wl2": IN_CQ}),
    ("use BorrowWithinCohort; allow preempting a lower-priority workload from another ClusterQueue while borrowing",
     [up("a_best_effort_low", "a_best_effort", -1, cpu="10"), up("b_best_effort_low", "b_best_effort", -1, cpu="1")],
     ("a_standard", 0, need(cpu="10"), None), {"a_best_effort_low": WHILE}),
    ("use BorrowWithinCohort; don't allow preempting a lower-priority workload with priority above "
     "MaxPriorityThreshold, if borrowing is required even after the preemption",
     [up("b_standard", "b_standard", 1, cpu="10")], ("a_standard", 2, need(cpu="10"), None), {}),
    ("use BorrowWithinCohort; allow preempting a lower-priority workload with priority above MaxPriorityThreshold, "
     "if borrowing is not required after the preemption", [up("b_standard", "b_standard", 1, cpu="13")],
     ("a_standard", 2, need(cpu="1"), None), {"b_standard": RECLAIM}),
    ("use BorrowWithinCohort; don't allow for preemption of lower-priority workload from the same ClusterQueue",
     [up("a_standard", "a_standard", 1, cpu="13")], ("a_standard", 2, need(cpu="1"), None), {}),
    ("use BorrowWithinCohort; only preempt from CQ if no workloads below threshold and already above nominal",
     [up("a_standard_1", "a_standard", 1, cpu="10"), up("a_standard_2", "a_standard", 1, cpu="1"),
      up("b_standard_1", "b_standard", 1, cpu="1"), up("b_standard_2", "b_standard", 2, cpu="1")],
     ("b_standard", 3, need(cpu="1"), None), {"b_standard_1": IN_CQ}),
    ("use BorrowWithinCohort; preempt from CQ and from other CQs with workloads below threshold",
     [up("b_standard_high", "b_standard", 2, cpu="10"), up("b_standard_mid", "b_standard", 1, cpu="1"),
      up("a_best_effort_low", "a_best_effort", -1, cpu="1"), up("a_best_effort_lower", "a_best_effort", -2, cpu="1")],
     ("b_standard", 2, need(cpu="2"), None), {"a_best_effort_lower": WHILE, "b_standard_mid": IN_CQ}),
    ("reclaim quota from lender", [up("lend1-low", "lend1", -1, cpu="3"), up("lend2-mid", "lend2", cpu="3"),
                                   up("lend2-high", "lend2", 1, cpu="4")], ("lend1", 1, need(cpu="3"), None),
     {"lend2-mid": RECLAIM}),
    ("preempt from all ClusterQueues in cohort-lend",
     [up("lend1-low", "lend1", -1, cpu="3"), up("lend1-mid", "lend1", cpu="2"), up("lend2-low", "lend2", -1, cpu="3"),
      up("lend2-mid", "lend2", cpu="4")], ("lend1", 0, need(cpu="4"), None), {"lend1-low": IN_CQ, "lend2-low": RECLAIM}),
    ("cannot preempt from other ClusterQueues if exceeds requestable quota including lending limit",
     [up("lend2-low", "lend2", -1, cpu="10")], ("lend1", 0, need(cpu="9"), None), {}),
    ("preemptions from cq when target queue is exhausted for the single requested resource", THREE,
     ("a", 0, need(cpu="2"), None), {"a1": IN_CQ, "a2": IN_CQ}),
    ("preemptions from cq when target queue is exhausted for two requested resources", THREE_MEM,
     ("a", 0, need(cpu="2", memory="2"), None), {"a1": IN_CQ, "a2": IN_CQ}),
    ("preemptions from cq when target queue is exhausted for one requested resource, but not the other", THREE,
     ("a", 0, need(cpu="2", memory="2"), None), {"a1": IN_CQ, "a2": IN_CQ}),
    ("allow preemption from other cluster queues if target cq is not exhausted for the requested resource",
     [up("a1", "a", -1, cpu="1")] + [up(f"b{i}", "b", 0, cpu="1") for i in (1, 2, 3, 4)] + [up("b5", "b", -1, cpu="1")],
     ("a", 0, need(cpu="2"), None), {"a1": IN_CQ, "b5": RECLAIM}),
]


@pytest.mark.parametrize("admitted,preemptor,want", [c[1:] for c in UPSTREAM], ids=[c[0] for c in UPSTREAM])
def test_preemption_upstream_fixture(admitted, preemptor, want) -> None:
    """preemption_test.go ``TestPreemption`` on its own ``defaultClusterQueues``."""
    forest, policies = setup(DEFAULT_CQS, admitted)
    queue, priority, request, needs = preemptor
    got = ClassicalPreemption(forest, policies, admitted,
                              Preemptor(queue, request, priority, 50.0, needs or ())).targets()
    assert {t.workload.key: t.reason for t in got} == want


def test_long_range_preemption() -> None:
    """preemption_test.go "long range preemption": cq-left (10 CPUs) under cohort-left reclaims
    what cq-right (no quota) under cohort-right borrows, two levels apart."""
    queues = [make_cq("cq-left", flavor_quota("default", cpu="10"), cohort="cohort-left",
                      preemption={"reclaimWithinCohort": "Any"}),
              make_cq("cq-right", flavor_quota("default", cpu="0"), cohort="cohort-right")]
    forest = build_forest(queues, [make_cohort("cohort-left", parent="root"), make_cohort("cohort-right", parent="root")])
    admitted = [up("to-be-preempted", "cq-right", cpu="5")]
    add_usage(forest.queues["cq-right"], CPU, 5000)
    policies = {q["metadata"]["name"]: queue_policy(q) for q in queues}
    got = ClassicalPreemption(forest, policies, admitted, Preemptor("cq-left", need(cpu="8"))).targets()
    assert {t.workload.key: t.reason for t in got} == {"to-be-preempted": RECLAIM}
