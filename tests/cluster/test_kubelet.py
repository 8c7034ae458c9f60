"""Kubelet admission (cluster/kubelet/admission.py): pods bound past the scheduler, cluster-owned
device holdings, and re-advertising under running pods. Each case cites the upstream source it follows."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from gpusched.cluster.scheduling.cache import node_devices
from gpusched.objects.pod import pod_info

from .builders import apply, join, phase, pod, pool

ASSIGNED = ("gpusched.io/assigned-gpus", "gpusched.io/assigned-devices")


def bound_pod(name: str, node: str = "gpu-1", gpus: int = 0, cpu: str = "", **spec) -> str:
    """A pod bound by the user through spec.nodeName (no scheduler involved)."""
    body = yaml.safe_load(pod(name, gpus=gpus, cpu=cpu, **spec))
    body["spec"]["nodeName"] = node
    return yaml.safe_dump(body)


def status_of(cluster, name: str) -> tuple[str, str, str]:
    status = cluster.get("pods", [name])[0].get("status") or {}
    return status.get("phase", ""), status.get("reason", ""), status.get("message", "")


CASES = [
    # pkg/kubelet/cm/devicemanager/manager.go devicesToAllocate + cm/admission/errors.go
    ("device-manager-gpus-short", pool(count=1, gpus=2, model="T4"),
     [bound_pod("a", gpus=2), bound_pod("b", gpus=1)], "b",
     ("Failed", "UnexpectedAdmissionError",
      "Pod was rejected: Allocate failed due to requested number of devices unavailable for "
      "nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected")),
    # devicemanager allocates per container (resourceAllocator.Admit): the second container
    # of a two-container pod finds none left
    ("device-manager-per-container", pool(count=1, gpus=1, model="T4"),
     [yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "two"}, "spec": {
         "nodeName": "gpu-1", "containers": [
             {"name": n, "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}
             for n in ("a", "b")]}})], "two",
     ("Failed", "UnexpectedAdmissionError",
      "Pod was rejected: Allocate failed due to requested number of devices unavailable for "
      "nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected")),
    # resourceAllocator.Admit walks init containers first: the init container's 2 GPUs are
    # short before the app container is looked at
    ("device-manager-init-container-first", pool(count=1, gpus=1, model="T4"),
     [yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "init"}, "spec": {
         "nodeName": "gpu-1",
         "initContainers": [{"name": "i", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 2}}}],
         "containers": [{"name": "a", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}})],
     "init",
     ("Failed", "UnexpectedAdmissionError",
      "Pod was rejected: Allocate failed due to requested number of devices unavailable for "
      "nvidia.com/gpu. Requested: 2, Available: 1, which is unexpected")),
    # pkg/kubelet/lifecycle/predicate.go InsufficientResourceError, reason OutOfcpu
    ("predicate-out-of-cpu", pool(count=1, gpus=0, cpu="4"),
     [bound_pod("a", cpu="3"), bound_pod("b", cpu="2")], "b",
     ("Failed", "OutOfcpu", "Pod was rejected: Node didn't have enough resource: cpu, "
      "requested: 2000, used: 3000, capacity: 4000")),
    # predicate.go: OutOfpods ("Too many pods" is the scheduler's wording; the kubelet's message)
    ("predicate-out-of-pods", pool(count=1, gpus=0, pods=1),
     [bound_pod("a"), bound_pod("b")], "b",
     ("Failed", "OutOfpods", "Pod was rejected: Node didn't have enough resource: pods, "
      "requested: 1, used: 1, capacity: 1")),
    # predicate.go generalFilter -> scheduler.AdmissionCheck nodeaffinity.ErrReasonPod
    ("predicate-node-affinity", pool(count=1, gpus=0),
     [bound_pod("a", nodeSelector={"zone": "b"})], "a",
     ("Failed", "NodeAffinity", "Pod was rejected: Predicate NodeAffinity failed: node(s) "
      "didn't match Pod's node affinity/selector")),
    # predicate.go generalFilter ignores NoSchedule taints: the kubelet runs the pod
    ("noschedule-taint-admitted", pool(count=1, gpus=0,
                                       taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
     [bound_pod("a")], "a", ("Running", "", "")),
    # predicate.go removeMissingExtendedResources: an extended resource the node does not
    # list is dropped, so the pod is admitted (upstream's caveat, kept for cluster-level
    # resources)...
    ("missing-extended-resource-admitted", pool(count=1, gpus=0),
     [yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {
         "nodeName": "gpu-1", "containers": [{"name": "c", "image": "x", "resources": {
             "limits": {"example.com/dongle": 1}}}]}})], "a", ("Running", "", "")),
    # ...but a GPU resource is a device plugin's, never cluster-level: predicate.go
    # InsufficientResourceError at capacity 0, as on a node listing it at 0 (issue 25 finding 4)
    ("missing-gpu-resource-out-of", pool(count=1, gpus=0),
     [bound_pod("a", gpus=4)], "a",
     ("Failed", "OutOfnvidia.com/gpu", "Pod was rejected: Node didn't have enough resource: "
      "nvidia.com/gpu, requested: 4, used: 0, capacity: 0")),
    # kubelet.go HandlePodAdditions: oldest first; the device manager runs before predicates,
    # so a pod short of GPUs and of affinity reports the device manager's error
    ("device-manager-before-predicates", pool(count=1, gpus=1, model="T4"),
     [bound_pod("a", gpus=1), bound_pod("b", gpus=1, nodeSelector={"zone": "b"})], "b",
     ("Failed", "UnexpectedAdmissionError",
      "Pod was rejected: Allocate failed due to requested number of devices unavailable for "
      "nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected")),
]


def test_case_ids_are_unique():
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("nodes,pods,name,want", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_kubelet_admission(cluster, nodes, pods, name, want):
    apply(cluster, nodes)
    for text in pods:
        apply(cluster, text)
    assert status_of(cluster, name) == want
    if want[0] == "Failed":
        events = [e for e in cluster.events() if e["reason"] == want[1]]
        assert events and events[-1]["message"] == want[2].removeprefix("Pod was rejected: ")
        assert events[-1]["source"]["component"] == "kubelet"


@pytest.mark.parametrize("effect,tolerated,want", [
    # predicate.go generalFilter: FindMatchingUntoleratedTaint over NoExecute taints only
    ("NoExecute", False, ("TaintToleration", "Predicate TaintToleration failed: node(s) had "
                          "taints that the pod didn't tolerate")),
    ("NoExecute", True, None),
    ("NoSchedule", False, None),
], ids=["noexecute-untolerated", "noexecute-tolerated", "noschedule-ignored"])
def test_taint_predicate(effect, tolerated, want):
    """Unit level: in a cluster the NoExecute taint manager evicts such a pod as well."""
    from gpusched.cluster.kubelet.admission import _NodeKubelet
    from gpusched.objects.node import node_info
    from gpusched.objects.pod import pod_info
    node = {"metadata": {"name": "n"}, "spec": {"taints": [{"key": "k", "value": "v", "effect": effect}]},
            "status": {"allocatable": {"cpu": "4", "memory": "4Gi", "pods": "10"}}}
    body = yaml.safe_load(bound_pod("a", node="n"))
    if tolerated:
        body["spec"]["tolerations"] = [{"key": "k", "operator": "Exists"}]
    rejection = _NodeKubelet(None, node_info(node), None)._predicates(body, pod_info(body))
    assert (None if rejection is None else (rejection.reason, rejection.message)) == want


def test_admitted_pods_never_overcommit_gpus(cluster):
    apply(cluster, pool(count=1, gpus=2, model="T4"))
    apply(cluster, join(*(bound_pod(f"p{i}", gpus=1) for i in range(4))))
    running = [p for p in cluster.get("pods") if p["status"]["phase"] == "Running"]
    assert [p["metadata"]["name"] for p in running] == ["p0", "p1"]
    held = [p["metadata"]["annotations"]["gpusched.io/assigned-devices"] for p in running]
    assert len(set(held)) == 2


@pytest.mark.parametrize("annotations", [
    {"gpusched.io/assigned-gpus": "0", "gpusched.io/assigned-devices": "GPU-forged"},
    {"gpusched.io/start-time": "0.0"},
], ids=["assignment", "start-time"])
def test_user_written_holdings_are_ignored(cluster, annotations):
    """gpusched's own rule: device holdings are the cluster's state, never a user's annotation."""
    apply(cluster, join(pool(count=1, gpus=1, model="T4"), pod("a", gpus=1)))
    held = cluster.get("pods", ["a"])[0]["metadata"]["annotations"]["gpusched.io/assigned-devices"]
    body = yaml.safe_load(bound_pod("b", gpus=1))
    body["metadata"]["annotations"] = dict(annotations)
    if "gpusched.io/assigned-devices" in annotations:
        annotations["gpusched.io/assigned-devices"] = held
        body["metadata"]["annotations"] = dict(annotations)
    apply(cluster, yaml.safe_dump(body))
    assert status_of(cluster, "b")[:2] == ("Failed", "UnexpectedAdmissionError")
    rows = [r for r in node_devices(cluster.view(), "gpu-1").rows() if r.holder]
    assert len(rows) == 1


def test_update_cannot_rewrite_holdings(cluster):
    apply(cluster, join(pool(count=1, gpus=2, model="T4"), pod("a", gpus=1), pod("b", gpus=1)))
    a, b = (cluster.get("pods", [n])[0] for n in ("a", "b"))
    forged = yaml.safe_load(pod("a", gpus=1))
    forged["metadata"]["annotations"] = {k: b["metadata"]["annotations"][k] for k in ASSIGNED}
    apply(cluster, yaml.safe_dump(forged))
    after = cluster.get("pods", ["a"])[0]["metadata"]["annotations"]
    assert {k: after[k] for k in ASSIGNED} == {k: a["metadata"]["annotations"][k] for k in ASSIGNED}


# ---- re-advertising under running pods ---------------------------------------------------------

def time_slicing(replicas: int) -> str:
    config = {"version": "v1", "sharing": {"timeSlicing": {
        "resources": [{"name": "nvidia.com/gpu", "replicas": replicas}]}}}
    return yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "time-slicing-config", "namespace": "default"},
                           "data": {"any": yaml.safe_dump(config)}})


def test_shrinking_replicas_fails_pods_that_lost_their_replica(cluster):
    """devicemanager/manager.go devicesToAllocate: ``previously allocated devices are no longer
    healthy; cannot allocate unhealthy devices <res>``, as when the kubelet re-admits after a
    device-plugin restart."""
    apply(cluster, join(pool(count=1, gpus=1, model="T4"), time_slicing(4)))
    apply(cluster, join(*(pod(f"p{i}", gpus=1) for i in range(4))))
    assert [phase(cluster, f"p{i}") for i in range(4)] == ["Running"] * 4
    apply(cluster, time_slicing(2))
    phases = [status_of(cluster, f"p{i}") for i in range(4)]
    assert [p[0] for p in phases].count("Running") == 2
    failed = [p for p in phases if p[0] == "Failed"]
    assert failed == [("Failed", "UnexpectedAdmissionError",
                       "Pod was rejected: Allocate failed due to previously allocated devices are "
                       "no longer healthy; cannot allocate unhealthy devices nvidia.com/gpu, which "
                       "is unexpected")] * 2
    assert_no_double_holding(cluster)


def mig_pod(name: str, profile: str) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
        "containers": [{"name": "c", "image": "x", "resources": {"limits": {profile: 1}}}]}})


@pytest.mark.parametrize("before,holder", [
    ("", pod("a", gpus=1)),
    ("all-balanced", mig_pod("a", "nvidia.com/mig-2g.10gb")),
    ("", yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {
        "nodeName": "gpu-1", "containers": [{"name": "c", "image": "x", "resources": {
            "limits": {"gpusched.io/gpu-milli": 300}}}]}})),
], ids=["whole-gpu", "mig-instance", "pinned-share"])
def test_mig_layout_change_waits_for_gpus_in_use(cluster, before, holder):
    """mig-parted pkg/mig/config/config.go ClearMigConfig: NVML refuses to destroy a compute
    instance in use ("In use by another client") and a mode change waits for a GPU reset, so a
    layout change never removes a device a pod holds; gpusched holds it as mig-manager's
    ``pending`` (reconfigure.go) and applies it once the GPU is free (issue 25, finding 4)."""
    from gpusched.cluster.kubelet.invariants import violations
    apply(cluster, pool(count=1, gpus=1, model="A100-40GB", migStrategy="mixed"))
    if before:
        cluster.label("node", "gpu-1", {"nvidia.com/mig.config": before})
    apply(cluster, holder)
    assert phase(cluster, "a") == "Running"
    advertised = cluster.get("nodes", ["gpu-1"], None)[0]["status"]["allocatable"]
    cluster.label("node", "gpu-1", {"nvidia.com/mig.config": "all-1g.5gb"}, overwrite=True)
    node = cluster.get("nodes", ["gpu-1"], None)[0]
    assert (phase(cluster, "a"), node["metadata"]["labels"]["nvidia.com/mig.config.state"]) == \
        ("Running", "pending")
    assert node["status"]["allocatable"] == advertised
    events = [e["message"] for e in cluster.events(None) if e["reason"] == "MigConfigPending"]
    assert events == ["GPU 0: In use by another client (pods default/a): waiting for them to "
                      "finish; Changing the 'nvidia.com/mig.config.state' node label to 'pending'"]
    assert violations(cluster.view()) == []
    # meanwhile the device plugin is paused (reconfigure.go shutdownKubernetesGPUClients): no
    # new pod takes a device the change waits on
    apply(cluster, mig_pod("late", "nvidia.com/mig-1g.5gb"))
    assert not cluster.get("pods", ["late"])[0]["spec"].get("nodeName")
    cluster.delete("pod", "a", grace=0)
    node = cluster.get("nodes", ["gpu-1"], None)[0]
    assert node["metadata"]["labels"]["nvidia.com/mig.config.state"] == "success"
    assert node["status"]["allocatable"]["nvidia.com/mig-1g.5gb"] == "7"
    assert phase(cluster, "late") == "Running"


def assert_no_double_holding(cluster) -> None:
    """Every live pod's devices exist on its node, and no device has two live holders."""
    view = cluster.view()
    seen: dict[tuple[str, str], str] = {}
    for body in view.list("Pod"):
        if body["status"].get("phase") not in ("Running", "Pending") or not body["spec"].get("nodeName"):
            continue
        ids = (body["metadata"].get("annotations") or {}).get("gpusched.io/assigned-devices", "")
        node = body["spec"]["nodeName"]
        devices = node_devices(view, node)
        known = {r.device_id for r in devices.rows()} if devices is not None else set()
        share = pod_info(body).gpu_milli  # shares of one GPU: kubelet.invariants sums them
        for device in filter(None, ids.split(",")):
            assert device in known, f"{body['metadata']['name']} holds vanished {device}"
            if share:
                continue
            key = (node, device)
            assert key not in seen, f"{device} held by {seen.get(key)} and {body['metadata']['name']}"
            seen[key] = body["metadata"]["name"]


CHURN = st.lists(st.one_of(
    st.tuples(st.just("replicas"), st.integers(1, 4)),
    st.tuples(st.just("plain"), st.just(0)),
    st.tuples(st.just("mig"), st.sampled_from(["all-1g.5gb", "all-3g.20gb", "all-balanced",
                                               "all-disabled"])),
    st.tuples(st.just("pods"), st.integers(1, 4)),
    st.tuples(st.just("mig-pods"), st.integers(1, 3)),
    st.tuples(st.just("bound"), st.integers(1, 2)),
    st.tuples(st.just("share"), st.integers(1, 3)),
    st.tuples(st.just("delete"), st.integers(0, 9)),
), min_size=1, max_size=8)


def churn_step(cluster, kind: str, n, made: int) -> int:
    """Apply one churn step; returns how many pods exist by name p0..p<made-1>."""
    if kind == "replicas":
        apply(cluster, time_slicing(n))
    elif kind == "plain" and cluster.get("configmap", namespace="default"):
        names = [c["metadata"]["name"] for c in cluster.get("configmap", namespace="default")]
        if "time-slicing-config" in names:
            cluster.delete("configmap", "time-slicing-config")
    elif kind == "mig":
        cluster.label("node", "mig-1", {"nvidia.com/mig.config": n}, overwrite=True)
    elif kind == "pods":
        apply(cluster, join(*(pod(f"p{made + i}", gpus=1) for i in range(n))))
        return made + n
    elif kind == "mig-pods":
        profiles = ["nvidia.com/mig-1g.5gb", "nvidia.com/mig-3g.20gb", "nvidia.com/gpu"]
        apply(cluster, join(*(mig_pod(f"p{made + i}", profiles[(made + i) % 3]) for i in range(n))))
        return made + n
    elif kind == "bound":
        apply(cluster, bound_pod(f"p{made}", node="gpu-1", gpus=n))
        return made + 1
    elif kind == "share":           # pinned 300/600/900-milli shares, on either node
        node = "gpu-1" if n % 2 else "mig-1"
        apply(cluster, yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{made}"},
                                       "spec": {"nodeName": node, "containers": [{
                                           "name": "c", "image": "x", "resources": {
                                               "limits": {"gpusched.io/gpu-milli": 300 * n}}}]}}))
        return made + 1
    elif kind == "delete" and f"p{n}" in [p["metadata"]["name"] for p in cluster.get("pods")]:
        cluster.delete("pod", f"p{n}")
    return made


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=CHURN)
def test_config_churn_never_double_holds(tmp_path_factory, steps):
    """Property: random device-plugin churn (time-slicing replicas up and down, back to plain
    GPUs, MIG layouts changing) under running and user-bound pods (shares included) never
    leaves a device held twice, a live pod on a device that vanished, or more devices held than
    a node advertises (``cluster.kubelet.invariants``)."""
    from gpusched.cluster.cluster import Cluster
    from gpusched.cluster.kubelet.invariants import violations
    with Cluster.open(str(tmp_path_factory.mktemp("churn") / "c.db")) as cluster:
        apply(cluster, join(pool(count=1, gpus=2, model="T4"),
                            pool(name="mig", count=1, gpus=2, model="A100-40GB", migStrategy="mixed")))
        made = 0
        for kind, n in steps:
            made = churn_step(cluster, kind, n, made)
            assert_no_double_holding(cluster)
            view = cluster.view()
            assert violations(view) == [], (kind, n)
            for node in ("gpu-1", "mig-1"):
                devices = node_devices(view, node)
                live = [p for p in view.list("Pod") if p["status"].get("phase") == "Running"
                        and p["spec"].get("nodeName") == node]
                held = {d for p in live for d in (p["metadata"].get("annotations") or {}).get(
                    "gpusched.io/assigned-devices", "").split(",") if d}   # shares: one GPU ID
                assert len(held) <= sum(devices.advertised.values())


def test_pod_bound_to_missing_node_stays_pending(cluster):
    """No kubelet watches a node that does not exist: the pod stays Pending (upstream)."""
    apply(cluster, pool(count=1, gpus=0))
    apply(cluster, bound_pod("a", node="nowhere"))
    assert status_of(cluster, "a")[0] in ("", "Pending")
    cluster.advance(3600)
    assert status_of(cluster, "a")[0] in ("", "Pending")


def test_user_written_status_is_the_clusters(cluster):
    """pkg/registry/core/pod/strategy.go PrepareForCreate: a new pod's status is reset (phase
    Pending, qosClass), so a manifest cannot claim ``Running`` past kubelet admission."""
    apply(cluster, pool(count=1, gpus=1, model="T4"))
    apply(cluster, bound_pod("a", gpus=1))
    body = yaml.safe_load(bound_pod("b", gpus=1))
    body["status"] = {"phase": "Running"}
    apply(cluster, yaml.safe_dump(body))
    assert status_of(cluster, "b")[:2] == ("Failed", "UnexpectedAdmissionError")


@pytest.mark.parametrize("resources,qos", [
    ({}, "BestEffort"),
    ({"limits": {"nvidia.com/gpu": 1}}, "BestEffort"),     # GPUs do not count for QoS
    ({"requests": {"cpu": "1"}}, "Burstable"),
    ({"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
    ({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}, "Burstable"),
], ids=["empty", "gpu-only", "cpu-request", "limits-equal-requests", "request-below-limit"])
def test_qos_class(cluster, resources, qos):
    """pkg/apis/core/helper/qos GetPodQOS, written at creation."""
    apply(cluster, pool(count=1, gpus=1, model="T4"))
    apply(cluster, yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                   "spec": {"containers": [{"name": "c", "image": "x",
                                                            "resources": resources}]}}))
    assert cluster.get("pods", ["p"])[0]["status"]["qosClass"] == qos
