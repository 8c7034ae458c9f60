"""Kueue's Job integration and scheduler on the embedded cluster (``cluster.controllers.kueue``):
a queued Job is created suspended, gets its Workload, is admitted with its flavor's node labels
and tolerations and runs; one that does not fit waits with Kueue's message; a higher-priority
Job preempts a lower one in its ClusterQueue (``withinClusterQueue: LowerPriority``); bad input
(a missing LocalQueue, a ClusterQueue naming a missing flavor) gets Kueue's conditions.
Upstream: ``pkg/controller/jobs/job/job_controller_test.go``, ``pkg/scheduler/scheduler_test.go``,
``test/integration/singlecluster/scheduler`` (admission, preemption).
"""

from __future__ import annotations

from typing import Any

import pytest

from gpusched.kueue.jobframework import workload_name
from tests.cluster.builders import apply, pool
from tests.kueue.builders import (condition, flavor_quota, local_queue, make_cq, make_flavor, manifests,
                                  namespace, queued_job, workload_priority_class)
from tests.kueue.builders import job_workload as workload

A100_LABELS = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
SETUP = manifests(
    namespace("team-a"),
    make_flavor("a100", A100_LABELS, tolerations=[GPU_TOLERATION]),
    make_cq("team-a", flavor_quota("a100", gpu=8), namespaceSelector={},
            preemption={"withinClusterQueue": "LowerPriority"}),
    local_queue("team-a-queue", "team-a", "team-a"),
    workload_priority_class("high", 1000))


def job(name: str, gpus: int, queue: str = "team-a-queue", priority_class: str = "", parallelism: int = 1) -> str:
    return manifests(queued_job(name, gpus, queue, priority_class=priority_class, pods=parallelism))


@pytest.fixture
def kueue(cluster):
    apply(cluster, pool(gpus=8) + "---\n" + SETUP)
    return cluster


def test_admitted_job_runs_with_its_flavor(kueue) -> None:
    apply(kueue, job("small", 4))
    wl = workload(kueue, "small")
    assert condition(wl, "QuotaReserved") == ("True", "QuotaReserved", "Quota reserved in ClusterQueue team-a")
    assert wl["status"]["admission"]["podSetAssignments"][0]["flavors"] == {"nvidia.com/gpu": "a100"}
    [found] = kueue.get("Job", ["small"], namespace="team-a")
    assert found["spec"]["suspend"] is False
    assert found["spec"]["template"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}


def test_job_past_its_quota_waits_with_kueues_message(kueue) -> None:
    apply(kueue, job("first", 6))
    apply(kueue, job("second", 4))
    assert condition(workload(kueue, "second"), "QuotaReserved") == (
        "False", "WaitingForQuota",
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor a100, "
        "2 more needed")
    [found] = kueue.get("Job", ["second"], namespace="team-a")
    assert found["spec"]["suspend"] is True


def test_higher_priority_job_preempts_and_the_victim_stops(kueue) -> None:
    apply(kueue, job("low", 8))
    apply(kueue, job("urgent", 8, priority_class="high"))
    low = workload(kueue, "low")
    assert condition(low, "Evicted")[:2] == ("True", "Preempted")
    assert condition(low, "Preempted")[1] == "InClusterQueue"
    assert "due to prioritization in the ClusterQueue; preemptor path: /team-a; preemptee path: /team-a" in \
        condition(low, "Preempted")[2]
    assert condition(workload(kueue, "urgent"), "Admitted")[0] == "True"
    [stopped] = kueue.get("Job", ["low"], namespace="team-a")
    assert stopped["spec"]["suspend"] is True


def test_missing_local_queue_is_misconfigured(kueue) -> None:
    apply(kueue, job("lost", 1, queue="nowhere"))
    assert condition(workload(kueue, "lost"), "QuotaReserved") == (
        "False", "Misconfigured", "LocalQueue nowhere is terminating or missing")


def test_cluster_queue_with_a_missing_flavor_is_inactive(kueue) -> None:
    apply(kueue, """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: broken}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
""")
    [cq] = kueue.get("ClusterQueue", ["broken"], namespace=None)
    assert condition(cq, "Active") == (
        "False", "FlavorNotFound", "Can't admit new workloads: references missing ResourceFlavor(s): h100.")


def test_explain_job_says_why_it_waits_in_its_queue(kueue) -> None:
    apply(kueue, job("first", 6))
    apply(kueue, job("second", 4))
    facts = kueue.explain("second", "team-a", kind="Job").facts
    text = "\n".join(fact.text for fact in facts)
    assert "waits in LocalQueue team-a-queue" in text
    assert ("WaitingForQuota): couldn't assign flavors to pod set main: insufficient unused quota for "
            "nvidia.com/gpu in flavor a100, 2 more needed") in text


def test_metrics_carry_kueues_per_queue_gauges(kueue) -> None:
    """/metrics: upstream's pkg/metrics names (kueue_pending_workloads{cluster_queue,status},
    kueue_admitted_active_workloads, kueue_cluster_queue_resource_usage, nominal quota,
    kueue_admission_attempts_total{result})."""
    from prometheus_client.parser import text_string_to_metric_families

    from gpusched.metrics.exposition import render_cluster
    apply(kueue, job("first", 6))
    apply(kueue, job("second", 4))
    got = {(s.name, tuple(sorted(s.labels.items()))): s.value
           for family in text_string_to_metric_families(render_cluster(kueue)[1].decode())
           for s in family.samples if s.name.startswith("kueue_")}
    role = ("replica_role", "standalone")
    assert got[("kueue_pending_workloads", (("cluster_queue", "team-a"), role, ("status", "inadmissible")))] == 1
    assert got[("kueue_admitted_active_workloads", (("cluster_queue", "team-a"), role))] == 1
    quota = (("cluster_queue", "team-a"), ("cohort", ""), ("flavor", "a100"), ("replica_role", "standalone"),
             ("resource", "nvidia.com/gpu"))
    assert got[("kueue_cluster_queue_resource_usage", quota)] == 6
    assert got[("kueue_cluster_queue_nominal_quota", quota)] == 8
    # scheduler.go AdmissionAttempt: one cycle admitted "first"; "second" was tried in later ones
    assert got[("kueue_admission_attempts_total", (role, ("result", "success")))] == 1
    assert got[("kueue_admission_attempts_total", (role, ("result", "inadmissible")))] >= 1


COHORT_PAIR = manifests(
    namespace("team-b"),
    *(make_cq(name, flavor_quota("a100", gpu=8), cohort="COHORT", namespaceSelector={}) for name in ("team-b", "team-c")),
    local_queue("team-b-queue", "team-b", "team-b"))


def test_a_job_borrows_its_cohorts_unused_quota(kueue) -> None:
    """scheduler_test.go "borrow resources": 12 GPUs fit team-b's 8 plus team-c's idle 8."""
    apply(kueue, COHORT_PAIR.replace("COHORT", "shared"))
    apply(kueue, job("big", 12, queue="team-b-queue").replace("namespace: team-a", "namespace: team-b"))
    [found] = kueue.get("Job", ["big"], namespace="team-b")
    wl = kueue.get("Workload", [workload_name("big", found["metadata"]["uid"])], namespace="team-b")[0]
    assert condition(wl, "Admitted")[0] == "True"


def test_a_cohort_cycle_disables_its_queues_and_admits_nothing(kueue) -> None:
    apply(kueue, COHORT_PAIR.replace("COHORT", "loop-a") + """
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: loop-a}
spec: {parentName: loop-b}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: loop-b}
spec: {parentName: loop-a}
""")
    apply(kueue, job("stuck", 1, queue="team-b-queue").replace("namespace: team-a", "namespace: team-b"))
    [cq] = kueue.get("ClusterQueue", ["team-b"], namespace=None)
    assert condition(cq, "Active")[0] == "False"
    [found] = kueue.get("Job", ["stuck"], namespace="team-b")
    wl = kueue.get("Workload", [workload_name("stuck", found["metadata"]["uid"])], namespace="team-b")[0]
    assert condition(wl, "QuotaReserved") == ("False", "Misconfigured", "ClusterQueue team-b is inactive")
    assert found["spec"]["suspend"] is True
