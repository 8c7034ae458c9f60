"""One scheduling cycle (``gpusched.kueue.cycle``), the outcomes Kueue's
``pkg/scheduler/scheduler_test.go`` (``TestSchedule``) asserts: admitted, pending with
``WaitingForQuota`` and the flavor message, the ``Pending the preemption of N workload(s)``
suffix, a borrowing head that no longer fits after a non-borrowing one took the quota, and the
heads StrictFIFO and BestEffortFIFO offer.
"""

from __future__ import annotations

from typing import Any

import pytest

from gpusched.kueue.cycle import ADMITTED, PENDING, PREEMPTING, Pending, Snapshot, pick_heads, run_cycle
from gpusched.kueue.inputs import flavor_of, podset_request, queue_policy
from gpusched.kueue.ordering import QueuedWorkload
from gpusched.kueue.preemption import Admitted
from gpusched.kueue.quota import build_forest
from tests.kueue.builders import (FLAVORS, flavor_quota, make_cohort, make_cq, make_flavor, make_podset, queue, raw_quota,
                                  using, wanting)

GPU = ("a100", "nvidia.com/gpu")


def snapshot(queues: list[dict[str, Any]], admitted: list[Admitted] = ()) -> Snapshot:
    snap = Snapshot(build_forest(queues), {q["metadata"]["name"]: queue_policy(q) for q in queues},
                    {f["metadata"]["name"]: flavor_of(f) for f in FLAVORS})
    for item in admitted:
        snap.admit(item)
    return snap


def pending(name: str, cq: str, gpus: int, priority: int = 0, at: float = 0.0) -> Pending:
    return Pending(QueuedWorkload(f"ns/{name}", cq, priority, at, name), (podset_request(make_podset(gpu=gpus)),))


def test_high_priority_head_preempts_with_the_pending_suffix() -> None:
    snap = snapshot([make_cq("team-a", flavor_quota("a100", gpu=4), preemption={"withinClusterQueue": "LowerPriority"})],
                    [Admitted("ns/low", "team-a", {GPU: 4}, priority=-1)])
    [decision] = run_cycle(snap, [pending("urgent", "team-a", 4, priority=10)])
    assert (decision.outcome, decision.reason, [t.workload.key for t in decision.targets]) == (
        PREEMPTING, "WaitingForPreemptedWorkloads", ["ns/low"])
    assert decision.message == ("couldn't assign flavors to pod set main: insufficient unused quota for "
                                "nvidia.com/gpu in flavor a100, 4 more needed. Pending the preemption of 1 workload(s)")


def test_no_candidates_stays_waiting_for_quota() -> None:
    snap = snapshot([make_cq("team-a", flavor_quota("a100", gpu=4))], [Admitted("ns/other", "team-a", {GPU: 4})])
    [decision] = run_cycle(snap, [pending("job", "team-a", 4)])
    assert (decision.outcome, decision.reason, decision.message) == (
        PENDING, "WaitingForQuota",
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor a100, 4 more needed")


def test_exceeds_max_quota() -> None:
    snap = snapshot([make_cq("team-a", flavor_quota("a100", gpu=4))])
    [decision] = run_cycle(snap, [pending("huge", "team-a", 8)])
    assert (decision.outcome, decision.reason) == (PENDING, "ExceedsMaxQuota")


def test_non_borrowing_head_goes_first_and_the_borrower_no_longer_fits() -> None:
    queues = [make_cq("a", flavor_quota("a100", gpu=4), cohort="c"), make_cq("b", flavor_quota("a100", gpu=4), cohort="c")]
    snap = snapshot(queues)
    got = {d.key: d for d in run_cycle(snap, [pending("borrower", "a", 6, at=0), pending("modest", "b", 4, at=5)])}
    assert got["ns/modest"].outcome == ADMITTED
    assert (got["ns/borrower"].outcome, got["ns/borrower"].reason, got["ns/borrower"].message) == (
        PENDING, "WaitingForQuota", "Workload no longer fits after processing another workload")


@pytest.mark.parametrize("strategy,want", [("StrictFIFO", "ns/first"), ("BestEffortFIFO", "ns/second")],
                         ids=["StrictFIFO keeps its blocked head", "BestEffortFIFO moves to the next"])
def test_heads_skip_inadmissible_only_under_best_effort(strategy, want) -> None:
    cq = make_cq("q", flavor_quota("a100", gpu=4), queueingStrategy=strategy)
    policies = {"q": queue_policy(cq)}
    queue = {"q": [pending("first", "q", 8, at=0), pending("second", "q", 1, at=1)]}
    [head] = pick_heads(queue, policies, frozenset({"ns/first"}))
    assert head.queued.key == want


LP = {"withinClusterQueue": "LowerPriority"}
ON_DEMAND_ONLY = {name: flavor_of(make_flavor(name)) for name in ("default", "on-demand", "spot")}
NO_LONGER = "Workload no longer fits after processing another workload"
PENDING_ONE = ". Pending the preemption of 1 workload(s)"
TWO_BORROWING = [queue(f"other-{n}", raw_quota("default", cpu="2"), cohort="other",
                       preemption={**LP, "borrowWithinCohort": {"policy": "LowerPriority"}}) for n in ("alpha", "beta")]
ENG = [queue("eng-alpha", raw_quota("on-demand", cpu=("50", "50")), raw_quota("spot", cpu=("100", "0")), cohort="eng",
             queueingStrategy="StrictFIFO"),
       queue("eng-beta", raw_quota("on-demand", cpu=("50", "10")), raw_quota("spot", cpu=("0", "100")), cohort="eng",
             queueingStrategy="StrictFIFO", preemption={"reclaimWithinCohort": "Any", **LP})]

# (id = upstream case, queues, admitted, heads, want {head: (outcome, reason, message, {victim: reason})})
SCHEDULE: list[tuple[Any, ...]] = [
    ("A workload is only eligible to do preemptions if it fits fully within nominal quota",
     [queue("other-alpha", raw_quota("on-demand", cpu="2"), cohort="other",
            preemption={"reclaimWithinCohort": "Any", **LP}),
      queue("other-beta", raw_quota("on-demand", cpu="2"), cohort="other")],
     [using("eng-alpha/a1", "other-alpha", -1, cpu=("on-demand", "1")),
      using("eng-beta/b1", "other-beta", -1, cpu=("on-demand", "1"))],
     [wanting("eng-alpha/incoming", "other-alpha", 1, cpu="3")],
     {"eng-alpha/incoming": (PENDING, "WaitingForQuota", "couldn't assign flavors to pod set main: insufficient "
                                                         "unused quota for cpu in flavor on-demand, 1 more needed", {})}),
    ("multiple preemptions skip preemption when shared limited resource",
     TWO_BORROWING + [queue("resource-bank", raw_quota("default", cpu="1"), cohort="other")],
     [using("eng-alpha/a1", "other-alpha", cpu=("default", "2")), using("eng-beta/b1", "other-beta", cpu=("default", "2"))],
     [wanting("eng-alpha/preemptor", "other-alpha", 100, cpu="3"),
      wanting("eng-beta/pretending-preemptor", "other-beta", 99, cpu="3")],
     {"eng-alpha/preemptor": (PREEMPTING, "WaitingForPreemptedWorkloads",
                              "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
                              "default, 2 more needed" + PENDING_ONE, {"eng-alpha/a1": "InClusterQueue"}),
      "eng-beta/pretending-preemptor": (PENDING, "WaitingForQuota", NO_LONGER, {})}),
    ("multiple preemptions preemption possible after earlier workload fits",
     [queue("other-alpha", raw_quota("default", cpu="1"), cohort="other", preemption=LP),
      queue("other-beta", raw_quota("default", cpu="2"), cohort="other", preemption=LP)],
     [using("eng-beta/b1", "other-beta", cpu=("default", "2"))],
     [wanting("eng-alpha/fit", "other-alpha", 100, cpu="1"), wanting("eng-beta/preemptor", "other-beta", 99, cpu="2")],
     {"eng-alpha/fit": (ADMITTED, "", "", {}),
      "eng-beta/preemptor": (PREEMPTING, "WaitingForPreemptedWorkloads",
                             "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
                             "default, 1 more needed" + PENDING_ONE, {"eng-beta/b1": "InClusterQueue"})}),
    ("multiple preemptions without borrowing",
     [queue(f"other-{n}", raw_quota("default", cpu="2"), cohort="other", preemption=LP) for n in ("alpha", "beta")],
     [using("eng-alpha/a1", "other-alpha", cpu=("default", "2")), using("eng-beta/b1", "other-beta", cpu=("default", "2"))],
     [wanting("eng-alpha/preemptor", "other-alpha", 100, cpu="2"), wanting("eng-beta/preemptor", "other-beta", 100, cpu="2")],
     {f"eng-{n}/preemptor": (PREEMPTING, "WaitingForPreemptedWorkloads",
                             "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
                             "default, 2 more needed" + PENDING_ONE, {f"eng-{n}/{n[0]}1": "InClusterQueue"})
      for n in ("alpha", "beta")}),
    ("minimal preemptions when target queue is exhausted",
     [queue("other-alpha", raw_quota("on-demand", cpu="2"), cohort="other", preemption={"reclaimWithinCohort": "Any", **LP}),
      queue("other-beta", raw_quota("on-demand", cpu="2"), cohort="other"),
      queue("other-gamma", raw_quota("on-demand", cpu="2"), cohort="other")],
     [using("eng-alpha/a1", "other-alpha", -2, cpu=("on-demand", "1")),
      using("eng-alpha/a2", "other-alpha", -2, cpu=("on-demand", "1")),
      using("eng-alpha/a3", "other-alpha", -1, cpu=("on-demand", "1"))]
     + [using(f"eng-beta/b{i}", "other-beta", 0, cpu=("on-demand", "1")) for i in (1, 2, 3)],
     [wanting("eng-alpha/incoming", "other-alpha", 0, cpu="2")],
     {"eng-alpha/incoming": (PREEMPTING, "WaitingForPreemptedWorkloads",
                             "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
                             "on-demand, 2 more needed. Pending the preemption of 2 workload(s)",
                             {"eng-alpha/a1": "InClusterQueue", "eng-alpha/a2": "InClusterQueue"})}),
    ("cannot borrow if cohort was assigned and would result in overadmission", ENG, [],
     [wanting("eng-alpha/new", "eng-alpha", cpu="45"), wanting("eng-beta/new", "eng-beta", cpu="56")],
     {"eng-alpha/new": (ADMITTED, "", "", {}), "eng-beta/new": (PENDING, "WaitingForQuota", NO_LONGER, {})}),
]


@pytest.mark.parametrize("queues,admitted,heads,want", [c[1:] for c in SCHEDULE], ids=[c[0] for c in SCHEDULE])
def test_schedule(queues, admitted, heads, want) -> None:
    """scheduler_test.go ``TestSchedule``: each head's outcome, QuotaReserved=False reason and
    message, and the victims with their Preempted reasons."""
    snap = Snapshot(build_forest(queues), {q["metadata"]["name"]: queue_policy(q) for q in queues}, ON_DEMAND_ONLY)
    for item in admitted:
        snap.admit(item)
    before = {name: dict(node.usage) for name, node in snap.forest.queues.items()}
    got = {d.key: (d.outcome, d.reason, d.message, {t.workload.key: t.reason for t in d.targets})
           for d in run_cycle(snap, heads)}
    assert got == want
    if all(outcome != ADMITTED for outcome, *_ in want.values()):
        assert {name: dict(node.usage) for name, node in snap.forest.queues.items()} == before, \
            "what preemptors held is given back when the cycle ends"


LENDER_BORROWER = [make_cohort("root"), make_cohort("child", parent="root")]

# (id = upstream case, cohorts, queues, admitted, heads, want as in SCHEDULE)
HIERARCHY: list[tuple[Any, ...]] = [
    ("in a hierarchical cohort, workload borrowing less is scheduled first",
     [make_cohort("root"), make_cohort("guaranteed", flavor_quota("default", cpu="4"), parent="root")],
     [queue("guaranteed", raw_quota("default", cpu="0"), cohort="guaranteed"),
      queue("best-effort", raw_quota("default", cpu="0"), cohort="root")], [],
     [wanting("eng-alpha/guaranteed", "guaranteed", 0, cpu="4"), wanting("eng-alpha/best-effort", "best-effort", 3, cpu="4")],
     {"eng-alpha/guaranteed": (ADMITTED, "", "", {}), "eng-alpha/best-effort": (PENDING, "WaitingForQuota", NO_LONGER, {})}),
    ("hierarchical cohort respects lending limit when borrowing", LENDER_BORROWER,
     [queue("cq-lender", raw_quota("on-demand", cpu=("10", None, "3")), cohort="child"),
      queue("cq-borrower", raw_quota("on-demand", cpu=("5", "10")), cohort="child")],
     [using("eng-alpha/wl-existing", "cq-borrower", cpu=("on-demand", "5"))],
     [wanting("eng-alpha/wl-pending", "cq-borrower", cpu="4")],
     {"eng-alpha/wl-pending": (PENDING, "WaitingForQuota", "couldn't assign flavors to pod set main: insufficient "
                                                           "unused quota for cpu in flavor on-demand, 1 more needed", {})}),
    ("hierarchical cohort allows borrowing up to lending limit", LENDER_BORROWER,
     [queue("cq-lender", raw_quota("on-demand", cpu=("10", None, "5")), cohort="child"),
      queue("cq-borrower", raw_quota("on-demand", cpu=("5", "10")), cohort="child")],
     [using("eng-alpha/wl-existing", "cq-borrower", cpu=("on-demand", "5"))],
     [wanting("eng-alpha/wl-borrowing", "cq-borrower", cpu="5")], {"eng-alpha/wl-borrowing": (ADMITTED, "", "", {})}),
]


@pytest.mark.parametrize("cohorts,queues,admitted,heads,want", [c[1:] for c in HIERARCHY], ids=[c[0] for c in HIERARCHY])
def test_schedule_in_cohort_trees(cohorts, queues, admitted, heads, want) -> None:
    """scheduler_test.go ``TestSchedule``, the hierarchical-cohort cases: borrowing levels and
    lending limits at each level."""
    snap = Snapshot(build_forest(queues, cohorts), {q["metadata"]["name"]: queue_policy(q) for q in queues},
                    ON_DEMAND_ONLY)
    for item in admitted:
        snap.admit(item)
    got = {d.key: (d.outcome, d.reason, d.message, {t.workload.key: t.reason for t in d.targets})
           for d in run_cycle(snap, heads)}
    assert got == want
