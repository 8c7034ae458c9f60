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
from tests.kueue.builders import FLAVORS, flavor_quota, make_cq, make_podset

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
