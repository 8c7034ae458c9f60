"""Kueue's topology-aware scheduling on the embedded cluster: a Job asking for one rack
(``kueue.x-k8s.io/podset-required-topology``) is admitted with a topologyAssignment, its pods
start gated by ``kueue.x-k8s.io/topology`` and the ungater pins each to a node of that rack; one
that fits no rack waits with Kueue's message; a TAS flavor whose Topology is missing makes its
ClusterQueue inactive. Upstream: ``pkg/scheduler/scheduler_tas_test.go``,
``pkg/controller/tas/topology_ungater_test.go``, ``test/integration/singlecluster/tas``."""

from __future__ import annotations

from typing import Any

import pytest

from gpusched.kueue.jobframework import workload_name
from tests.cluster.builders import apply, pool

RACK, BLOCK, HOST = "cloud.provider.com/topology-rack", "cloud.provider.com/topology-block", "kubernetes.io/hostname"

SETUP = f"""
apiVersion: v1
kind: Namespace
metadata: {{name: team-a}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {{name: default}}
spec:
  levels: [{{nodeLabel: {BLOCK}}}, {{nodeLabel: {RACK}}}, {{nodeLabel: {HOST}}}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: tas-a100}}
spec:
  nodeLabels: {{nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB}}
  topologyName: default
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: team-a}}
spec:
  namespaceSelector: {{}}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: tas-a100
      resources: [{{name: nvidia.com/gpu, nominalQuota: 64}}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: q, namespace: team-a}}
spec: {{clusterQueue: team-a}}
"""


def rack_pools() -> str:
    """Rack r1: 2 nodes of 8 GPUs, rack r2: 4 nodes, both in block b1."""
    return "---\n".join(pool(f"r{n}", count=count, labels={BLOCK: "b1", RACK: f"r{n}"})
                        for n, count in ((1, 2), (2, 4)))


def job(name: str, pods: int, gpus: int, level: str = RACK) -> str:
    return f"""
apiVersion: batch/v1
kind: Job
metadata: {{name: {name}, namespace: team-a, labels: {{kueue.x-k8s.io/queue-name: q}}}}
spec:
  parallelism: {pods}
  completions: {pods}
  completionMode: Indexed
  template:
    metadata:
      annotations: {{kueue.x-k8s.io/podset-required-topology: {level}}}
    spec:
      restartPolicy: Never
      containers:
      - name: train
        image: busybox
        command: [sleep, "3600"]
        resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}
"""


def workload(cluster: Any, job_name: str) -> dict[str, Any]:
    [found] = cluster.get("Job", [job_name], namespace="team-a")
    [wl] = cluster.get("Workload", [workload_name(job_name, found["metadata"]["uid"])], namespace="team-a")
    return wl


@pytest.fixture
def tas(cluster):
    apply(cluster, rack_pools() + "---\n" + SETUP)
    return cluster


def test_gang_of_four_lands_in_one_rack(tas) -> None:
    apply(tas, job("train", 4, 8))
    wl = workload(tas, "train")
    [assigned] = wl["status"]["admission"]["podSetAssignments"]
    assert assigned["topologyAssignment"] == {"levels": [HOST], "slices": [{
        "domainCount": 4, "valuesPerLevel": [{"individual": {"prefix": "r2-", "roots": ["1", "2", "3", "4"]}}],
        "podCounts": {"universal": 1}}]}
    assert wl["spec"]["podSets"][0]["topologyRequest"] == {
        "required": RACK, "podIndexLabel": "batch.kubernetes.io/job-completion-index"}
    pods = tas.get("Pod", namespace="team-a")
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["r2-1", "r2-2", "r2-3", "r2-4"]
    assert all(not p["spec"].get("schedulingGates") for p in pods)
    assert {p["metadata"]["annotations"]["kueue.x-k8s.io/workload"] for p in pods} == {wl["metadata"]["name"]}


def test_rack_too_small_waits_with_kueues_message(tas) -> None:
    apply(tas, job("huge", 5, 8))
    reserved = next(c for c in workload(tas, "huge")["status"]["conditions"] if c["type"] == "QuotaReserved")
    assert (reserved["status"], reserved["reason"], reserved["message"]) == (
        "False", "TopologyPlacementFailed",
        'couldn\'t assign flavors to pod set main: topology "default" allows to fit only 4 out of 5 pod(s)')
    [found] = tas.get("Job", ["huge"], namespace="team-a")
    assert found["spec"]["suspend"] is True


def test_second_gang_waits_for_the_rack_the_first_holds(tas) -> None:
    apply(tas, job("first", 4, 8))
    apply(tas, job("second", 3, 8))
    reserved = next(c for c in workload(tas, "second")["status"]["conditions"] if c["type"] == "QuotaReserved")
    assert (reserved["status"], reserved["reason"]) == ("False", "WaitingForQuota")
    assert reserved["message"] == ('couldn\'t assign flavors to pod set main: topology "default" allows to fit '
                                   'only 2 out of 3 pod(s). Total nodes: 6; excluded: resource "nvidia.com/gpu": 4')


def test_missing_topology_makes_the_cluster_queue_inactive(cluster) -> None:
    apply(cluster, SETUP.replace("topologyName: default", "topologyName: nowhere"))
    [cq] = cluster.get("ClusterQueue", ["team-a"])
    active = next(c for c in cq["status"]["conditions"] if c["type"] == "Active")
    assert (active["status"], active["reason"], active["message"]) == (
        "False", "TopologyNotFound",
        'Can\'t admit new workloads: there is no Topology "nowhere" for TAS flavor "tas-a100".')


CLIQUE_SETUP = """
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: nvlink}
spec:
  levels: [{nodeLabel: nvidia.com/gpu.clique}, {nodeLabel: kubernetes.io/hostname}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gb200}
spec:
  nodeLabels: {nvidia.com/gpu.product: NVIDIA-GB200}
  topologyName: nvlink
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: gb200
      resources: [{name: nvidia.com/gpu, nominalQuota: 64}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: team-a}
spec: {clusterQueue: team-a}
"""


def test_gang_stays_inside_one_nvlink_clique(cluster) -> None:
    """GFD's nvidia.com/gpu.clique as a Topology level: GB200 trays of two NVLink domains (c1: 2
    trays, c2: 3 trays of 4 GPUs); a 3 x 4-GPU gang requiring one clique lands in c2."""
    pools = "---\n".join(pool(f"c{n}", count=count, model="GB200", gpus=4) .replace(
        "model: GB200", f"model: GB200\n    clique: fabric-0.{n}") for n, count in ((1, 2), (2, 3)))
    apply(cluster, pools + "---\n" + CLIQUE_SETUP)
    apply(cluster, job("nvl", 3, 4, level="nvidia.com/gpu.clique"))
    pods = cluster.get("Pod", namespace="team-a")
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["c2-1", "c2-2", "c2-3"]


def test_a_queue_of_tas_flavors_only_places_an_unannotated_job(tas) -> None:
    """Implied TAS (isTASImplied: the ClusterQueue's flavors are all TAS flavors): the Job's
    template gets podset-unconstrained-topology "true" with the gate (podset.FromAssignment), and
    its pods go to the fullest nodes that fit (LeastFreeCapacity)."""
    apply(tas, job("plain", 2, 4).replace(
        "    metadata:\n      annotations: {kueue.x-k8s.io/podset-required-topology: cloud.provider.com/topology-rack}\n", ""))
    wl = workload(tas, "plain")
    assert wl["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]["levels"] == [HOST]
    [found] = tas.get("Job", ["plain"], namespace="team-a")
    meta = found["spec"]["template"]["metadata"]
    assert meta["annotations"]["kueue.x-k8s.io/podset-unconstrained-topology"] == "true"
    assert meta["labels"]["kueue.x-k8s.io/podset"] == "main"
    assert found["spec"]["template"]["spec"]["schedulingGates"] == [{"name": "kueue.x-k8s.io/topology"}]
    assert sorted(p["spec"]["nodeName"] for p in tas.get("Pod", namespace="team-a")) == ["r1-1"] * 2
