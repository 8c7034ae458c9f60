"""examples/kueue with real kubectl 1.32 against ``gpusched serve``: Kueue's kinds through
discovery (``kubectl apply -f``, ``kubectl get cq,lq``, short names as Kueue's CRDs declare
them), the CRDs' printer columns (ClusterQueue's wide columns at their CRD places), the v1beta1
deprecation warning, and refusals with the CRD's CEL messages and the webhooks' field errors."""

from __future__ import annotations

import json
import shutil

import pytest

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")]
EXAMPLE = "examples/kueue"


@pytest.fixture
def kueue(serve):
    serve.kubectl("apply", "-f", EXAMPLE)
    return serve


def test_apply_prints_each_object_with_its_group(serve):
    out = serve.kubectl("apply", "-f", EXAMPLE).stdout.split("\n")
    assert "clusterqueue.kueue.x-k8s.io/team-a created" in out
    assert "resourceflavor.kueue.x-k8s.io/h100 created" in out
    assert "localqueue.kueue.x-k8s.io/team-queue created" in out
    assert "workloadpriorityclass.kueue.x-k8s.io/urgent created" in out
    assert "cohort.kueue.x-k8s.io/gpu-pool created" in out


def test_get_cluster_and_local_queues_with_the_crd_columns(kueue):
    cq = kueue.kubectl("get", "cq").stdout.splitlines()
    assert cq[0].split() == ["NAME", "COHORT", "PENDING", "WORKLOADS"]
    assert [line.split() for line in cq[1:]] == [["team-a", "gpu-pool", "0"], ["team-b", "gpu-pool", "0"],
                                                 ["team-c", "gpu-pool", "0"]]
    wide = kueue.kubectl("get", "clusterqueues", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["NAME", "COHORT", "STRATEGY", "PENDING", "WORKLOADS", "ADMITTED",
                               "WORKLOADS"]
    assert wide[3].split() == ["team-c", "gpu-pool", "StrictFIFO", "0", "0"]
    both = kueue.kubectl("get", "cq,lq", "-n", "team-b").stdout
    assert "clusterqueue.kueue.x-k8s.io/team-b" in both
    assert "localqueue.kueue.x-k8s.io/team-queue   team-b" in both
    assert kueue.kubectl("get", "wpc").stdout.split() == ["NAME", "VALUE", "batch", "100", "urgent", "1000"]
    assert kueue.kubectl("get", "rf").stdout.split()[:2] == ["NAME", "AGE"]
    assert kueue.kubectl("get", "kwl", "-A").stderr.strip() == "No resources found"


def test_stored_object_is_defaulted_as_the_crd_defaults_it(kueue):
    cq = json.loads(kueue.kubectl("get", "cq", "team-a", "-o", "json").stdout)
    assert cq["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert cq["spec"]["flavorFungibility"] == {"whenCanBorrow": "MayStopSearch",
                                               "whenCanPreempt": "TryNextFlavor"}
    assert cq["spec"]["preemption"]["borrowWithinCohort"] == {"policy": "Never"}
    assert cq["spec"]["stopPolicy"] == "None"


def test_v1beta1_is_converted_with_the_deprecation_warning(kueue, tmp_path):
    old = tmp_path / "old.yaml"
    old.write_text("apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: legacy}\n"
                   "spec:\n  cohort: gpu-pool\n  resourceGroups:\n  - coveredResources: [cpu]\n"
                   "    flavors:\n    - name: a100\n      resources: [{name: cpu, nominalQuota: 8}]\n")
    done = kueue.kubectl("apply", "-f", str(old))
    assert "Warning: This version is deprecated. Use v1beta2 instead." in done.stderr
    cq = json.loads(kueue.kubectl("get", "cq", "legacy", "-o", "json").stdout)
    assert cq["spec"]["cohortName"] == "gpu-pool" and "cohort" not in cq["spec"]
    # read back in v1beta1, and re-applied changed: kubectl patches the v1beta1 object it read
    old_cq = json.loads(kueue.kubectl("get", "clusterqueues.v1beta1.kueue.x-k8s.io", "legacy", "-o",
                                      "json").stdout)
    assert old_cq["apiVersion"] == "kueue.x-k8s.io/v1beta1" and old_cq["spec"]["cohort"] == "gpu-pool"
    old.write_text(old.read_text().replace("gpu-pool", "other").replace("nominalQuota: 8", "nominalQuota: 9"))
    again = kueue.kubectl("apply", "-f", str(old))
    assert again.stdout.strip() == "clusterqueue.kueue.x-k8s.io/legacy configured"
    cq = json.loads(kueue.kubectl("get", "cq", "legacy", "-o", "json").stdout)
    assert cq["spec"]["cohortName"] == "other"
    assert cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == 9


@pytest.mark.parametrize("body, message", [
    pytest.param("spec:\n  queueingStrategy: Fifo\n",
                 'spec.queueingStrategy: Unsupported value: "Fifo": supported values: '
                 '"StrictFIFO", "BestEffortFIFO"', id="enum"),
    pytest.param("spec:\n  preemption: {reclaimWithinCohort: Never, borrowWithinCohort: {policy: LowerPriority}}\n",
                 'spec.preemption: Invalid value: "object": reclaimWithinCohort=Never and '
                 'borrowWithinCohort.Policy!=Never', id="cel"),
    pytest.param("spec:\n  cohortName: c\n  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n"
                 "    - name: f\n      resources: [{name: cpu, nominalQuota: 1, lendingLimit: 2}]\n",
                 'admission webhook "vclusterqueue.kb.io" denied the request: spec.resourceGroups[0]'
                 '.flavors[0].resources[0].lendingLimit: Invalid value: "2": must be less than or equal '
                 'to the nominalQuota', id="webhook"),
])
def test_refusals_carry_kueues_messages(serve, tmp_path, body, message):
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: bad}\n" + body)
    done = serve.kubectl("apply", "-f", str(bad), check=False)
    assert done.returncode == 1 and message in done.stderr
    assert "Traceback" not in done.stderr
    assert serve.kubectl("get", "cq", "bad", check=False).returncode == 1


def test_local_queue_cluster_queue_is_immutable(kueue, tmp_path):
    moved = tmp_path / "lq.yaml"
    moved.write_text("apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: team-queue, "
                     "namespace: team-a}\nspec: {clusterQueue: team-b}\n")
    done = kueue.kubectl("apply", "-f", str(moved), check=False)
    assert 'spec.clusterQueue: Invalid value: "string": field is immutable' in done.stderr


def test_explain_reads_the_crd_schema(serve):
    """kubectl explain through /openapi/v3: the generated schema's enum and description."""
    out = serve.kubectl("explain", "cq.spec.queueingStrategy").stdout
    assert "ENUM:" in out and "StrictFIFO" in out and "BestEffortFIFO" in out
    containers = serve.kubectl("explain", "workloads.spec.podSets.template.spec.containers").stdout
    assert "FIELD: containers <[]Container>" in containers


def test_gang_examples_through_serve(serve):
    """examples/kueue/gangs with real kubectl: the JobSet and the Coscheduling gang run whole,
    scheduled in serve's controller process (its waiting pods kept between settles)."""
    serve.kubectl("apply", "-f", "examples/kueue/embedded/nodes.yaml", "-f", EXAMPLE)
    serve.kubectl("apply", "-f", "examples/kueue/gangs/")
    serve.settled()
    pods = json.loads(serve.kubectl("get", "pods", "-A", "-o", "json").stdout)["items"]
    running = sorted(p["metadata"]["name"].rsplit("-", 1)[0] for p in pods
                     if p["status"].get("phase") == "Running")
    assert running == ["allreduce-0", "allreduce-1", "allreduce-2", "allreduce-3",
                       "llm-pretrain-leader-0-0", "llm-pretrain-workers-0-0",
                       "llm-pretrain-workers-0-1", "llm-pretrain-workers-0-2"]
    groups = serve.kubectl("get", "pg", "-n", "team-b").stdout.splitlines()
    assert groups[1].split()[:3] == ["allreduce", "Running", "4"]


def test_topology_example_places_the_gang_in_one_rack(serve):
    """examples/kueue/topology through kubectl: the Topology and TAS flavor apply as Kueue's CRDs
    take them, and the 4 x 8-GPU gang's pods run in one rack (the ungater pinned each)."""
    out = serve.kubectl("apply", "-f", "examples/kueue/topology/embedded/nodes.yaml",
                        "-f", "examples/kueue/topology/").stdout
    assert "topology.kueue.x-k8s.io/gpu-racks created" in out
    assert serve.kubectl("get", "topo").stdout.split()[:3] == ["NAME", "AGE", "gpu-racks"]
    serve.settled()
    pods = json.loads(serve.kubectl("get", "pods", "-n", "research", "-o", "json").stdout)["items"]
    assert sorted(p["spec"].get("nodeName", "") for p in pods) == ["b1-r2-1", "b1-r2-2", "b1-r2-3", "b1-r2-4"]
    assert all(not p["spec"].get("schedulingGates") for p in pods)
