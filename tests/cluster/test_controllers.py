"""Controllers end to end on a small cluster: Deployment, ReplicaSet, Job, DaemonSet, node
lifecycle (NoExecute, drain with PDB), device plugin re-advertising, pod lifecycle."""

from __future__ import annotations

import pytest
import yaml

from gpusched.errors import GpuschedError
from gpusched.objects.types import Taint

from .builders import (apply, join, live_names, node_of, phase, pod, pod_names, pool, reasons,
                       terminating_names)


def deployment(name: str = "web", replicas: int = 2, gpus: int = 0, image: str = "nginx",
               **pod_spec) -> str:
    container = {"name": "c", "image": image}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    return yaml.safe_dump({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                           "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                                    "template": {"metadata": {"labels": {"app": name}},
                                                 "spec": {"containers": [container], **pod_spec}}}})


def job(name: str = "train", duration: str = "", completions: int = 1, parallelism: int = 1,
        deadline: int | None = None, backoff: int | None = None, gpus: int = 0) -> str:
    container = {"name": "c", "image": "x"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    template = {"spec": {"restartPolicy": "Never", "containers": [container]}}
    if duration:
        template["metadata"] = {"annotations": {"gpusched.io/duration": duration}}
    spec = {"completions": completions, "parallelism": parallelism, "template": template}
    if deadline is not None:
        spec["activeDeadlineSeconds"] = deadline
    if backoff is not None:
        spec["backoffLimit"] = backoff
    return yaml.safe_dump({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
                           "spec": spec})


# ---- Deployment / ReplicaSet ------------------------------------------------------------------

def test_deployment_creates_replicaset_and_pods_and_scales(cluster):
    apply(cluster, join(pool(count=2, gpus=0), deployment(replicas=3)))
    [rs] = cluster.get("rs")
    assert rs["metadata"]["name"].startswith("web-") and len(rs["metadata"]["name"]) == 14
    assert rs["metadata"]["labels"]["pod-template-hash"] == rs["metadata"]["name"][4:]
    pods = cluster.get("pods", selector="app=web")
    assert len(pods) == 3 and all(p["status"]["phase"] == "Running" for p in pods)
    assert all(p["metadata"]["ownerReferences"][0]["name"] == rs["metadata"]["name"] for p in pods)
    assert cluster.scale("deploy", "web", 1) == "deployment.apps/web scaled"
    # Scaled-down pods are deleted gracefully: Terminating (not counted as active,
    # pkg/controller/controller_utils.go IsPodActive) until their 30 s grace period ends.
    assert len(live_names(cluster, selector="app=web")) == 1
    assert len(terminating_names(cluster)) == 2
    cluster.advance(30)
    assert len(pod_names(cluster, selector="app=web")) == 1
    status = cluster.get("deploy", ["web"])[0]["status"]
    assert (status["replicas"], status["readyReplicas"]) == (1, 1)


def test_deleting_a_deployment_collects_its_replicaset_and_pods(cluster):
    # garbagecollector.go (background propagation): dependents whose controller is gone go; the
    # ReplicaSet at once, its pods gracefully (Terminating for 30 s)
    apply(cluster, join(pool(count=2, gpus=0), deployment(replicas=2)))
    cluster.delete("deployment", "web")
    assert cluster.get("rs") == []
    assert live_names(cluster, selector="app=web") == []
    assert len(terminating_names(cluster)) == 2
    cluster.advance(30)
    assert pod_names(cluster, selector="app=web") == []


def test_deleted_pod_is_recreated(cluster):
    apply(cluster, join(pool(count=1, gpus=0), deployment(replicas=2)))
    before = pod_names(cluster)
    assert cluster.delete("pod", before[0]) == f'pod "{before[0]}" deleted'
    # The replacement is created while the deleted pod is still Terminating (IsPodActive).
    assert terminating_names(cluster) == [before[0]]
    after = live_names(cluster)
    assert len(after) == 2 and before[0] not in after and before[1] in after
    cluster.advance(30)
    assert sorted(pod_names(cluster)) == sorted(after)


def test_template_change_rolls_to_new_replicaset(cluster):
    apply(cluster, join(pool(count=1, gpus=0), deployment(replicas=2)))
    [old] = cluster.get("rs")
    outcome = apply(cluster, deployment(replicas=2, image="nginx:2"))
    assert outcome[0].action == "configured"
    sets = {rs["metadata"]["name"]: rs["spec"]["replicas"] for rs in cluster.get("rs")}
    assert sets[old["metadata"]["name"]] == 0 and sorted(sets.values()) == [0, 2]
    cluster.advance(30)       # the old pods' grace period
    images = {p["spec"]["containers"][0]["image"] for p in cluster.get("pods")}
    assert images == {"nginx:2"}


def test_same_manifest_again_is_unchanged(cluster):
    apply(cluster, pool(count=1, gpus=0))
    assert apply(cluster, deployment())[0].action == "created"
    assert apply(cluster, deployment())[0].action == "unchanged"


# ---- Job ----------------------------------------------------------------------------------------

def test_job_completes_after_its_pods_finish(cluster):
    apply(cluster, join(pool(count=1, gpus=0), job(duration="10m", completions=3, parallelism=2)))
    assert cluster.get("jobs", ["train"])[0]["status"]["active"] == 2
    cluster.advance(600)
    status = cluster.get("jobs", ["train"])[0]["status"]
    assert (status["succeeded"], status["active"]) == (2, 1)
    cluster.advance(600)
    status = cluster.get("jobs", ["train"])[0]["status"]
    # job_controller.go (v1.35, delayTerminalCondition): SuccessCriteriaMet, then Complete
    assert status["succeeded"] == 3
    assert [c["type"] for c in status["conditions"]] == ["SuccessCriteriaMet", "Complete"]
    assert status["completionTime"] == "2026-01-01T00:20:00Z"


def test_job_deadline_exceeded_kills_pods(cluster):
    apply(cluster, join(pool(count=1, gpus=0), job(duration="1h", deadline=300)))
    cluster.advance(299)
    assert cluster.get("jobs", ["train"])[0]["status"]["active"] == 1
    cluster.advance(1)
    status = cluster.get("jobs", ["train"])[0]["status"]
    # job_controller.go: the interim FailureTarget, then Failed with the same reason/message
    assert [c["type"] for c in status["conditions"]] == ["FailureTarget", "Failed"]
    cond = status["conditions"][-1]
    assert (cond["type"], cond["reason"], cond["message"]) == (
        "Failed", "DeadlineExceeded", "Job was active longer than specified deadline")
    assert status.get("active", 0) == 0 and live_names(cluster) == []
    cluster.advance(30)       # the killed pod's grace period (Terminating until then)
    status = cluster.get("jobs", ["train"])[0]["status"]
    assert status["failed"] == 1 and cluster.get("pods") == []


def test_job_backoff_limit_exceeded(cluster):
    # failRequestsGreaterThanOne makes every pod of this job fail kubelet admission
    apply(cluster, join(pool(count=1, gpus=1, model="T4"), time_slicing_configmap(fail=True),
                        job(gpus=2, backoff=1)))
    assert cluster.get("jobs", ["train"])[0]["status"]["failed"] == 1
    cluster.advance(10)   # backoff_utils.go: the second pod waits 10 s after the first failure
    status = cluster.get("jobs", ["train"])[0]["status"]
    assert status["failed"] == 2
    cond = status["conditions"][-1]
    assert (cond["type"], cond["reason"]) == ("Failed", "BackoffLimitExceeded")


# ---- node status (the kubelet's part) ----------------------------------------------------------

def test_nodes_report_ready_addresses_and_version_and_pods_get_ips(cluster):
    apply(cluster, join(pool(count=2, gpus=0), pod("p")))
    nodes = cluster.get("Node", namespace=None)
    ips = set()
    for node in nodes:
        status = node["status"]
        ready = [c for c in status["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True" and ready[0]["reason"] == "KubeletReady"
        assert status["nodeInfo"]["kubeletVersion"].startswith("v1.")
        addresses = {a["type"]: a["address"] for a in status["addresses"]}
        assert addresses["Hostname"] == node["metadata"]["name"]
        ips.add(addresses["InternalIP"])
    assert len(ips) == 2
    [p] = cluster.get("Pod", ["p"])
    assert p["status"]["hostIP"] in ips
    assert p["status"]["podIP"].startswith("10.244.")


# ---- pod lifecycle ------------------------------------------------------------------------------

def test_pod_runs_for_its_duration(cluster):
    apply(cluster, join(pool(count=1, gpus=0), pod("p", duration="30m")))
    assert phase(cluster, "p") == "Running"
    cluster.advance(1799)
    assert phase(cluster, "p") == "Running"
    cluster.advance(1)
    assert phase(cluster, "p") == "Succeeded"


def test_sleep_command_sets_run_time(cluster):
    apply(cluster, join(pool(count=1, gpus=0), pod("p", containers=[
        {"name": "c", "image": "x", "command": ["sh", "-c", "sleep 90"]}])))
    cluster.advance(89)
    assert phase(cluster, "p") == "Running"
    cluster.advance(1)
    assert phase(cluster, "p") == "Succeeded"


def time_slicing_configmap(replicas: int = 4, fail: bool = False) -> str:
    config = {"version": "v1", "sharing": {"timeSlicing": {
        "failRequestsGreaterThanOne": fail,
        "resources": [{"name": "nvidia.com/gpu", "replicas": replicas}]}}}
    return yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "time-slicing-config", "namespace": "default"},
                           "data": {"any": yaml.safe_dump(config)}})


def test_fail_requests_greater_than_one_fails_admission(cluster):
    apply(cluster, join(pool(count=1, gpus=1, model="T4"), time_slicing_configmap(fail=True),
                        pod("p", gpus=2)))
    body = cluster.get("pods", ["p"])[0]
    assert body["status"]["phase"] == "Failed"
    assert body["status"]["reason"] == "UnexpectedAdmissionError"
    # pkg/kubelet/kubelet.go rejectPod prefixes "Pod was rejected: " to the admit message
    assert body["status"]["message"] == (
        "Pod was rejected: Allocate failed due to rpc error: code = Unknown desc = invalid allocation request for "
        '"nvidia.com/gpu": invalid request: maximum request size for shared resources is 1; '
        "found 2, which is unexpected")
    assert "UnexpectedAdmissionError" in reasons(cluster)


# ---- device plugin ------------------------------------------------------------------------------

def test_configmap_change_readvertises_and_keeps_running_pods_devices(cluster):
    apply(cluster, join(pool(count=1, gpus=2, model="T4"), pod("a", gpus=1)))
    node = cluster.get("nodes")[0]
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "2"
    held = cluster.get("pods", ["a"])[0]["metadata"]["annotations"]["gpusched.io/assigned-gpus"]
    apply(cluster, time_slicing_configmap(replicas=4))
    node = cluster.get("nodes")[0]
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    assert node["metadata"]["labels"]["nvidia.com/gpu.replicas"] == "4"
    assert phase(cluster, "a") == "Running"
    assert cluster.get("pods", ["a"])[0]["metadata"]["annotations"]["gpusched.io/assigned-gpus"] == held
    apply(cluster, join(*(pod(f"s{i}", gpus=1) for i in range(8))))
    running = [p["metadata"]["name"] for p in cluster.get("pods") if p["status"]["phase"] == "Running"]
    assert "a" in running and len(running) == 8      # 2 GPUs x 4 replicas, one kept by "a"
    pending = [p for p in cluster.get("pods") if p["status"]["phase"] == "Pending"]
    assert [p["status"]["conditions"][0]["message"] for p in pending] == [
        "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. no new claims to deallocate, preemption: 0/1 nodes are "
        "available: 1 No preemption victims found for incoming pod."]


# ---- DaemonSet ----------------------------------------------------------------------------------

def daemonset(node_selector: dict | None = None) -> str:
    spec = {"containers": [{"name": "c", "image": "dcgm-exporter"}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    return yaml.safe_dump({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ds"},
                           "spec": {"selector": {"matchLabels": {"app": "ds"}},
                                    "template": {"metadata": {"labels": {"app": "ds"}}, "spec": spec}}})


def test_daemonset_one_pod_per_matching_node(cluster):
    apply(cluster, join(pool("gpu", count=2, labels={"kind": "gpu"}),
                        pool("cpu", count=1, gpus=0, labels={"kind": "cpu"}),
                        pool("tainted", count=1, labels={"kind": "gpu"},
                             taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]),
                        daemonset({"kind": "gpu"})))
    nodes = sorted(node_of(cluster, n) for n in pod_names(cluster, selector="app=ds"))
    assert nodes == ["gpu-1", "gpu-2"]
    apply(cluster, pool("gpu", count=3, labels={"kind": "gpu"}))
    nodes = sorted(node_of(cluster, n) for n in pod_names(cluster, selector="app=ds"))
    assert nodes == ["gpu-1", "gpu-2", "gpu-3"]
    assert cluster.get("ds", ["ds"])[0]["status"]["desiredNumberScheduled"] == 3


def test_daemonset_pod_leaves_a_node_no_longer_eligible(cluster):
    # daemon_controller.go podsShouldBeOnNode: a pod on a node that stopped matching is deleted
    apply(cluster, join(pool("gpu", count=2, labels={"kind": "gpu"}), daemonset({"kind": "gpu"})))
    cluster.label("node", "gpu-2", {"kind": None})
    assert sorted(node_of(cluster, n) for n in live_names(cluster, selector="app=ds")) == ["gpu-1"]
    assert cluster.get("ds", ["ds"])[0]["status"]["desiredNumberScheduled"] == 1


# ---- node lifecycle -----------------------------------------------------------------------------

def test_cordon_keeps_new_pods_off(cluster):
    apply(cluster, pool(count=1, gpus=0))
    assert cluster.cordon("gpu-1") == "node/gpu-1 cordoned"
    assert cluster.cordon("gpu-1") == "node/gpu-1 already cordoned"
    apply(cluster, pod("p"))
    assert node_of(cluster, "p") == ""
    assert cluster.uncordon("gpu-1") == "node/gpu-1 uncordoned"
    # the next command comes after the pod's back-off (the clock stands still between
    # commands; queueing.commands_end_backoffs): the node event moves it and it binds at once
    assert node_of(cluster, "p") == "gpu-1"


def test_noexecute_taint_evicts_untolerating_pods(cluster):
    tolerate_60 = [{"key": "maint", "operator": "Exists", "effect": "NoExecute",
                    "tolerationSeconds": 60}]
    tolerate = [{"key": "maint", "operator": "Exists", "effect": "NoExecute"}]
    apply(cluster, join(pool(count=1, gpus=0), pod("plain"), pod("for-a-minute", tolerations=tolerate_60),
                        pod("forever", tolerations=tolerate)))
    assert cluster.taint("gpu-1", [Taint("maint", "", "NoExecute")], []) == "node/gpu-1 tainted"
    # pkg/controller/tainteviction/taint_eviction.go: evicted pods are deleted gracefully
    # (Terminating for their 30 s default grace period), the others when tolerationSeconds end.
    assert terminating_names(cluster) == ["plain"]
    assert "TaintManagerEviction" in reasons(cluster)
    cluster.advance(30)
    assert pod_names(cluster) == ["for-a-minute", "forever"]
    cluster.advance(29)
    assert terminating_names(cluster) == []
    cluster.advance(1)
    assert terminating_names(cluster) == ["for-a-minute"]
    cluster.advance(30)
    assert pod_names(cluster) == ["forever"]


def pdb(min_available) -> str:
    return yaml.safe_dump({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                           "metadata": {"name": "web-pdb"},
                           "spec": {"minAvailable": min_available,
                                    "selector": {"matchLabels": {"app": "web"}}}})


def test_drain_respects_pdb(cluster):
    apply(cluster, join(pool(count=1, gpus=0), deployment(replicas=2), pdb(2)))
    status = cluster.get("pdb", ["web-pdb"])[0]["status"]
    assert (status["currentHealthy"], status["desiredHealthy"], status["disruptionsAllowed"]) == (2, 2, 0)
    with pytest.raises(GpuschedError) as err:
        cluster.drain("gpu-1")
    assert "Cannot evict pod as it would violate the pod's disruption budget." in str(err.value)
    assert cluster.get("nodes")[0]["spec"]["unschedulable"] is True
    assert len(pod_names(cluster)) == 2


def test_drain_evicts_and_pods_come_back_elsewhere(cluster):
    apply(cluster, join(pool(count=2, gpus=0), deployment(replicas=2, nodeSelector={}), pdb(1),
                        daemonset()))
    target = node_of(cluster, pod_names(cluster, selector="app=web")[0])
    with pytest.raises(GpuschedError) as err:
        cluster.drain(target)
    assert "cannot delete DaemonSet-managed Pods (use --ignore-daemonsets to ignore)" in str(err.value)
    lines = cluster.drain(target, ignore_daemonsets=True)
    assert lines[0] == f"node/{target} already cordoned" and lines[-1] == f"node/{target} drained"
    web = live_names(cluster, selector="app=web")
    assert len(web) == 2 and all(node_of(cluster, n) not in ("", target) for n in web)
    cluster.advance(30)       # the evicted pod's grace period
    assert sorted(pod_names(cluster, selector="app=web")) == sorted(web)


def test_label_overwrite_rules(cluster):
    apply(cluster, pool(count=1, gpus=0))
    assert cluster.label("node", "gpu-1", {"tier": "a"}) == "node/gpu-1 labeled"
    with pytest.raises(GpuschedError) as err:
        cluster.label("node", "gpu-1", {"tier": "b"})
    assert str(err.value) == "'tier' already has a value (a), and --overwrite is false"
    assert cluster.label("node", "gpu-1", {"tier": "b"}, overwrite=True) == "node/gpu-1 labeled"
    assert cluster.label("node", "gpu-1", {"tier": None}) == "node/gpu-1 unlabeled"
    assert "tier" not in cluster.get("nodes")[0]["metadata"]["labels"]


def test_mig_config_label_readvertises_and_back(cluster):
    apply(cluster, pool(count=1, gpus=2, model="A100-40GB", migStrategy="mixed"))
    assert cluster.get("nodes")[0]["status"]["allocatable"]["nvidia.com/gpu"] == "2"
    cluster.label("node", "gpu-1", {"nvidia.com/mig.config": "all-1g.5gb"})
    node = cluster.get("nodes")[0]
    gpu_resources = {k: v for k, v in node["status"]["allocatable"].items() if k.startswith("nvidia.com/")}
    assert gpu_resources == {"nvidia.com/mig-1g.5gb": "14"}
    assert node["metadata"]["labels"]["nvidia.com/mig-1g.5gb.count"] == "14"
    apply(cluster, join(*(yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"m{i}"},
                                          "spec": {"containers": [{"name": "c", "image": "x", "resources": {
                                              "limits": {"nvidia.com/mig-1g.5gb": 1}}}]}})
                          for i in range(15))))
    bound = [p for p in cluster.get("pods") if p["spec"].get("nodeName")]
    assert len(bound) == 14
    devices = [p["metadata"]["annotations"]["gpusched.io/assigned-devices"] for p in bound]
    assert len(set(devices)) == 14 and all(d.startswith("MIG-") for d in devices)
    for p in bound:
        cluster.delete("pod", p["metadata"]["name"])
    # mig-parted cmd/nvidia-mig-manager/main.go SyncableMigConfig.Set: a removed label (value "")
    # wakes nobody, so the GPUs keep their MIG devices; all-disabled turns MIG off
    cluster.label("node", "gpu-1", {"nvidia.com/mig.config": None})
    node = cluster.get("nodes")[0]
    assert node["status"]["allocatable"]["nvidia.com/mig-1g.5gb"] == "14"
    cluster.label("node", "gpu-1", {"nvidia.com/mig.config": "all-disabled"})
    # the deleted pods still run their grace period on their MIG devices: the change waits
    # (devices.mig_manager, state pending) and applies once they are gone
    labels = cluster.get("nodes")[0]["metadata"]["labels"]
    assert labels["nvidia.com/mig.config.state"] == "pending"
    cluster.advance(60)
    node = cluster.get("nodes")[0]
    assert not any(k.startswith("nvidia.com/mig-1g") for k in node["metadata"]["labels"])
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "2"
    assert node["metadata"]["labels"]["nvidia.com/mig.config.state"] == "success"
