"""Kueue's topology-aware scheduling on the embedded cluster: a Job asking for one rack
(``kueue.x-k8s.io/podset-required-topology``) is admitted with a topologyAssignment, its pods
start gated by ``kueue.x-k8s.io/topology`` and the ungater pins each to a node of that rack; one
that fits no rack waits with Kueue's message; a TAS flavor whose Topology is missing makes its
ClusterQueue inactive. Upstream: ``pkg/scheduler/scheduler_tas_test.go``,
``pkg/controller/tas/topology_ungater_test.go``, ``test/integration/singlecluster/tas``."""

from __future__ import annotations

import pytest

from tests.cluster.builders import apply, pool
from tests.kueue.builders import (flavor_quota, local_queue, make_cq, make_flavor, manifests, namespace, queued_job,
                                  queued_jobset, topology)
from tests.kueue.builders import job_workload as workload

RACK, BLOCK, HOST = "cloud.provider.com/topology-rack", "cloud.provider.com/topology-block", "kubernetes.io/hostname"

SETUP = manifests(
    namespace("team-a"), topology("default", BLOCK, RACK, HOST),
    make_flavor("tas-a100", {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}, topology="default"),
    make_cq("team-a", flavor_quota("tas-a100", gpu=64), namespaceSelector={}),
    local_queue("q", "team-a", "team-a"))


def rack_pools() -> str:
    """Rack r1: 2 nodes of 8 GPUs, rack r2: 4 nodes, both in block b1."""
    return "---\n".join(pool(f"r{n}", count=count, labels={BLOCK: "b1", RACK: f"r{n}"})
                        for n, count in ((1, 2), (2, 4)))


def job(name: str, pods: int, gpus: int, level: str = RACK) -> str:
    """An Indexed Job of ``pods`` pods requiring one domain of ``level`` (none: no annotation)."""
    annotations = {"kueue.x-k8s.io/podset-required-topology": level} if level else None
    return manifests(queued_job(name, gpus, "q", pods=pods, indexed=True, annotations=annotations))


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


CLIQUE_SETUP = manifests(
    namespace("team-a"), topology("nvlink", "nvidia.com/gpu.clique", HOST),
    make_flavor("gb200", {"nvidia.com/gpu.product": "NVIDIA-GB200"}, topology="nvlink"),
    make_cq("team-a", flavor_quota("gb200", gpu=64), namespaceSelector={}),
    local_queue("q", "team-a", "team-a"))


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
    apply(tas, job("plain", 2, 4, level=""))
    wl = workload(tas, "plain")
    assert wl["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]["levels"] == [HOST]
    [found] = tas.get("Job", ["plain"], namespace="team-a")
    meta = found["spec"]["template"]["metadata"]
    assert meta["annotations"]["kueue.x-k8s.io/podset-unconstrained-topology"] == "true"
    assert meta["labels"]["kueue.x-k8s.io/podset"] == "main"
    assert found["spec"]["template"]["spec"]["schedulingGates"] == [{"name": "kueue.x-k8s.io/topology"}]
    assert sorted(p["spec"]["nodeName"] for p in tas.get("Pod", namespace="team-a")) == ["r1-1"] * 2


def test_jobset_requiring_one_rack_lands_in_one_rack(tas) -> None:
    """A JobSet gets TAS like a Job (``pkg/controller/jobs/jobset/jobset_controller.go``:
    ``PodSets`` builds each replicatedJob's topology request with the completion index and the
    job index as sub-group; ``RunWithPodSetsInfo`` merges the whole PodSetInfo, so its templates
    carry the PodSet label, the Workload annotation and the topology gate the ungater lifts)."""
    body = queued_jobset("js", "q", [("workers", 2, 2, 8)], annotations={
        "kueue.x-k8s.io/podset-required-topology": RACK})
    apply(tas, manifests(body))
    [found] = tas.get("JobSet", ["js"], namespace="team-a")
    [wl] = [w for w in tas.get("Workload", namespace="team-a") if w["metadata"]["name"].startswith("jobset-js-")]
    assert wl["spec"]["podSets"][0]["topologyRequest"] == {
        "required": RACK, "podIndexLabel": "batch.kubernetes.io/job-completion-index",
        "subGroupIndexLabel": "jobset.sigs.k8s.io/job-index", "subGroupCount": 2}
    meta = found["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]
    assert meta["labels"]["kueue.x-k8s.io/podset"] == "workers"
    assert meta["annotations"]["kueue.x-k8s.io/workload"] == wl["metadata"]["name"]
    pods = tas.get("Pod", namespace="team-a")
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["r2-1", "r2-2", "r2-3", "r2-4"]
    assert all(not p["spec"].get("schedulingGates") for p in pods)
