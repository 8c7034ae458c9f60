"""Kueue's scheduler passes on the embedded cluster (``cluster.controllers.kueue.scheduler``):
a reclaim within a cohort ends with the preemptor admitted and each victim preempted once,
and the settle reaches its fixpoint. Upstream: ``pkg/scheduler/scheduler.go`` (``schedule``:
the preemptor's usage is added to the snapshot once it issues its preemptions, and it is
requeued with ``RequeueReasonPendingPreemption``), ``pkg/scheduler/preemption/preemption.go``
(``IssuePreemptions``), ``pkg/scheduler/scheduler_test.go`` ("reclaim within cohort").
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from gpusched.kueue.jobframework import workload_name
from tests.cluster.builders import apply, pool

QUEUES = """
apiVersion: v1
kind: Namespace
metadata: {name: team-x}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-y}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: a100}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-x}
spec:
  namespaceSelector: {}
  cohortName: shared
  preemption: {reclaimWithinCohort: Any, withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: a100, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-y}
spec:
  namespaceSelector: {}
  cohortName: shared
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: a100, resources: [{name: nvidia.com/gpu, nominalQuota: 0}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: queue, namespace: team-x}
spec: {clusterQueue: team-x}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: queue, namespace: team-y}
spec: {clusterQueue: team-y}
"""


def job(name: str, team: str, gpus: int, priority_class: str = "") -> str:
    labels = "kueue.x-k8s.io/queue-name: queue"
    if priority_class:
        labels += f", kueue.x-k8s.io/priority-class: {priority_class}"
    return f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: {name}, namespace: {team}, labels: {{{labels}}}}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: train
        image: busybox
        resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}
"""


def workload(cluster, name: str, team: str) -> dict[str, Any]:
    [found] = cluster.get("Job", [name], namespace=team)
    [wl] = cluster.get("Workload", [workload_name(name, found["metadata"]["uid"])], namespace=team)
    return wl


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
