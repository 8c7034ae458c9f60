"""Kueue's scheduler passes on the embedded cluster (``cluster.controllers.kueue.scheduler``):
a reclaim within a cohort ends with the preemptor admitted and each victim preempted once,
and the settle reaches its fixpoint. Upstream: ``pkg/scheduler/scheduler.go`` (``schedule``:
the preemptor's usage is added to the snapshot once it issues its preemptions, and it is
requeued with ``RequeueReasonPendingPreemption``), ``pkg/scheduler/preemption/preemption.go``
(``IssuePreemptions``), ``pkg/scheduler/scheduler_test.go`` ("reclaim within cohort").
"""

from __future__ import annotations

import logging

import pytest

from tests.cluster.builders import apply, pool
from tests.kueue.builders import (KUEUE_API, flavor_quota, local_queue, make_cq, manifests, namespace,
                                  queued_job, workload_priority_class)
from tests.kueue.builders import job_workload as workload

QUEUES = manifests(
    namespace("team-x"), namespace("team-y"),
    {"apiVersion": KUEUE_API, "kind": "ResourceFlavor", "metadata": {"name": "a100"}},     # no spec at all
    workload_priority_class("high", 1000),
    make_cq("team-x", flavor_quota("a100", gpu=8), cohort="shared", namespaceSelector={},
            preemption={"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}),
    make_cq("team-y", flavor_quota("a100", gpu=0), cohort="shared", namespaceSelector={}),
    local_queue("queue", "team-x", "team-x"), local_queue("queue", "team-y", "team-y"))


def job(name: str, team: str, gpus: int, priority_class: str = "") -> str:
    return manifests(queued_job(name, gpus, "queue", team, priority_class, command=()))


# (id, Jobs applied first, Jobs applied after; each (name, team, GPUs, priority class)).
# team-y has no quota of its own: its "borrower" borrows team-x's 8 GPUs until team-x reclaims.
CASES = [
    ("reclaim-at-the-head", [("borrower", "team-y", 8, "")], [("reclaimer", "team-x", 8, "")]),
    # The higher-priority "too-big" (16 GPUs, more than the cohort holds) heads team-x's queue
    # in each pass; "reclaimer" comes after it. The borrower, requeued, was re-admitted in the
    # next pass before the reclaimer's turn and reclaimed again, for ever.
    ("reclaim-behind-an-inadmissible-head", [("borrower", "team-y", 8, "")],
     [("too-big", "team-x", 16, "high"), ("reclaimer", "team-x", 8, "")]),
]


@pytest.mark.parametrize("first, then", [(c[1], c[2]) for c in CASES], ids=[c[0] for c in CASES])
def test_a_reclaim_admits_the_preemptor_and_settles(cluster, caplog, first, then) -> None:
    apply(cluster, pool(count=2, gpus=8) + "---\n" + QUEUES)
    apply(cluster, "---\n".join(job(*spec) for spec in first))
    with caplog.at_level(logging.WARNING):
        apply(cluster, "---\n".join(job(*spec) for spec in then))
    assert not [r.message for r in caplog.records if "no fixpoint" in r.message]
    assert (workload(cluster, "reclaimer", "team-x")["status"].get("admission") or {}).get("clusterQueue") == "team-x"
    borrower = workload(cluster, "borrower", "team-y")
    assert not borrower["status"].get("admission")
    preempted = [e for e in cluster.events(namespace="team-y")
                 if e.get("reason") == "Preempted" and e["involvedObject"]["name"] == borrower["metadata"]["name"]]
    assert len(preempted) == 1, [e.get("message") for e in preempted]
