"""A normal cluster's furniture: system namespaces, PriorityClasses, DefaultTolerationSeconds,
the kubernetes Service, default ServiceAccounts and StorageClass, and GFD's label set with only
GFD-owned labels managed."""

from __future__ import annotations

import pytest
import yaml

from gpusched.errors import ForbiddenError

from .builders import apply, join, pod, pool

CONFIG = yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "time-slicing-config-all"},
                         "data": {"any": "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                                         "    - name: nvidia.com/gpu\n      replicas: 4\n"}})


def labels_of(cluster, node: str) -> dict[str, str]:
    return cluster.get("nodes", [node])[0]["metadata"]["labels"]


def test_system_objects_exist_from_the_start(cluster):
    assert [n["metadata"]["name"] for n in cluster.get("ns")] == [
        "default", "kube-node-lease", "kube-public", "kube-system"]
    # pkg/apis/scheduling/types.go SystemPriorityClasses
    assert {pc["metadata"]["name"]: pc["value"] for pc in cluster.get("pc")} == {
        "system-cluster-critical": 2000000000, "system-node-critical": 2000001000}
    kubernetes = cluster.get("svc", ["kubernetes"])[0]
    assert kubernetes["spec"]["clusterIP"] == "10.96.0.1"
    assert kubernetes["spec"]["ports"] == [{"name": "https", "port": 443, "protocol": "TCP",
                                            "targetPort": 6443}]
    assert sorted(sa["metadata"]["namespace"] for sa in cluster.get("sa", all_namespaces=True)) == [
        "default", "kube-node-lease", "kube-public", "kube-system"]
    classes = cluster.get("sc")
    assert [(sc["metadata"]["name"], sc["provisioner"], sc["volumeBindingMode"]) for sc in classes] \
        == [("standard", "rancher.io/local-path", "WaitForFirstConsumer")]


def test_new_namespace_gets_its_default_service_account_and_name_label(cluster):
    apply(cluster, yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace",
                                   "metadata": {"name": "team-a"}}))
    assert [sa["metadata"]["name"] for sa in cluster.get("sa", namespace="team-a")] == ["default"]
    ns = cluster.get("ns", ["team-a"])[0]
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}


@pytest.mark.parametrize("kind,name,message", [
    ("ns", "kube-system", 'namespaces "kube-system" is forbidden: this namespace may not be deleted'),
    ("ns", "default", 'namespaces "default" is forbidden: this namespace may not be deleted'),
    ("pc", "system-node-critical", 'priorityclasses.scheduling.k8s.io "system-node-critical" is '
     "forbidden: this is a system priority class and cannot be deleted"),
], ids=["kube-system", "default", "system-node-critical"])
def test_system_objects_cannot_be_deleted(cluster, kind, name, message):
    with pytest.raises(ForbiddenError) as err:
        cluster.delete(kind, name)
    assert str(err.value) == message


def test_deleted_default_storage_class_is_not_put_back(cluster):
    cluster.delete("sc", "standard")
    apply(cluster, pod("p"))
    assert cluster.get("sc") == []


# plugin/pkg/admission/defaulttolerationseconds/admission.go (Admit)
NOT_READY = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 300}
UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
               "effect": "NoExecute", "tolerationSeconds": 300}
OWN_NOT_READY = {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                 "effect": "NoExecute", "tolerationSeconds": 30}


@pytest.mark.parametrize("given,expected", [
    (None, [NOT_READY, UNREACHABLE]),
    ([OWN_NOT_READY], [OWN_NOT_READY, UNREACHABLE]),
    ([{"operator": "Exists"}], [{"operator": "Exists"}]),                     # empty key+effect
    ([{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}],         # empty effect
     [{"key": "node.kubernetes.io/unreachable", "operator": "Exists"}, NOT_READY]),
    ([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"}],
     [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoSchedule"},
      NOT_READY, UNREACHABLE]),
], ids=["none", "own-not-ready-kept", "tolerate-everything", "unreachable-any-effect",
        "noschedule-does-not-count"])
def test_default_toleration_seconds(cluster, given, expected):
    apply(cluster, pod("p", tolerations=given))
    assert cluster.get("pods", ["p"])[0]["spec"]["tolerations"] == expected
    apply(cluster, pod("p", tolerations=given))      # re-applying the same manifest is allowed
    assert cluster.get("pods", ["p"])[0]["spec"]["tolerations"] == expected


# ---- GFD labels (k8s-device-plugin internal/lm) --------------------------------------------------

def test_gfd_writes_version_machine_and_mode_labels(cluster):
    apply(cluster, pool("a100", count=1))
    labels = labels_of(cluster, "a100-1")
    # internal/lm/nvml.go newVersionLabeler, newGPUModeLabeler; machine-type.go
    expected = {
        "nvidia.com/cuda.driver.major": "550", "nvidia.com/cuda.driver.minor": "54",
        "nvidia.com/cuda.driver.rev": "15", "nvidia.com/cuda.driver-version.full": "550.54.15",
        "nvidia.com/cuda.driver-version.revision": "15",
        "nvidia.com/cuda.runtime.major": "12", "nvidia.com/cuda.runtime.minor": "4",
        "nvidia.com/cuda.runtime-version.full": "12.4", "nvidia.com/gpu.machine": "unknown",
        "nvidia.com/gpu.mode": "compute", "nvidia.com/gpu.family": "ampere",
        "nvidia.com/gpu.compute.major": "8", "nvidia.com/gpu.compute.minor": "0",
        "nvidia.com/mig.capable": "true", "nvidia.com/gpu.count": "8",
        "nvidia.com/gpu.replicas": "1", "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.memory": "40960",
        "nvidia.com/gfd.timestamp": "1767225600",        # 2026-01-01T00:00:00Z, the virtual clock
    }
    assert {k: labels.get(k) for k in expected} == expected
    assert "nvidia.com/mig.strategy" not in labels        # only when the strategy is not none


def test_driver_version_annotation_and_a_bad_one(cluster):
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n1", "annotations": {"gpusched.io/gpu-model": "T4",
                                                       "gpusched.io/gpu-count": "1",
                                                       "gpusched.io/driver-version": "570.86"}},
            "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}
    apply(cluster, yaml.safe_dump(node))
    labels = labels_of(cluster, "n1")
    assert (labels["nvidia.com/cuda.driver.rev"], labels["nvidia.com/cuda.runtime-version.full"]) \
        == ("", "12.8")
    node["metadata"]["annotations"]["gpusched.io/driver-version"] = "abc"
    apply(cluster, yaml.safe_dump(node))
    events = [e for e in cluster.get("events") if e["reason"] == "FailedDevicePluginConfig"]
    assert events[-1]["message"] == ('node n1: error getting driver version: Version "abc" does '
                                     'not match format "X.Y[.Z]"')
    assert "nvidia.com/cuda.driver.major" not in labels_of(cluster, "n1")


def test_user_labels_under_nvidia_com_survive_reconfiguration(cluster):
    """The lab labels GPU nodes nvidia.com/gpu=true; GFD owns only the labels it writes (NFD's
    nfd.node.kubernetes.io/feature-labels annotation), so the label survives a config change."""
    apply(cluster, join(pool("t4", count=1, model="T4", gpus=2), pool("cpu", count=1, gpus=0)))
    cluster.label("node", "t4-1", {"nvidia.com/gpu": "true", "nvidia.com/team": "ml"})
    apply(cluster, CONFIG)
    labels = labels_of(cluster, "t4-1")
    assert labels["nvidia.com/gpu"] == "true" and labels["nvidia.com/team"] == "ml"
    assert labels["nvidia.com/gpu.product"] == "Tesla-T4-SHARED"
    cluster.delete("cm", "time-slicing-config-all")
    labels = labels_of(cluster, "t4-1")
    assert labels["nvidia.com/gpu"] == "true" and labels["nvidia.com/gpu.product"] == "Tesla-T4"
    assert [n["metadata"]["name"] for n in cluster.get("nodes", selector="nvidia.com/gpu=true")] \
        == ["t4-1"]
    owned = cluster.get("nodes", ["t4-1"])[0]["metadata"]["annotations"][
        "nfd.node.kubernetes.io/feature-labels"].split(",")
    assert "nvidia.com/gpu" not in owned and "nvidia.com/gpu.product" in owned


def test_gfd_timestamp_moves_only_when_labels_change(cluster):
    apply(cluster, pool("t4", count=1, model="T4", gpus=2))
    first = labels_of(cluster, "t4-1")["nvidia.com/gfd.timestamp"]
    cluster.advance(600)
    assert labels_of(cluster, "t4-1")["nvidia.com/gfd.timestamp"] == first
    apply(cluster, CONFIG)
    assert int(labels_of(cluster, "t4-1")["nvidia.com/gfd.timestamp"]) == int(first) + 600


def test_taint_and_selector_on_the_lab_label(cluster):
    """The lab's label-selector taint and nodeSelector on nvidia.com/gpu=true."""
    apply(cluster, join(pool("t4", count=2, model="T4", gpus=1), pool("cpu", count=1, gpus=0)))
    cluster.label("node", "t4-1", {"nvidia.com/gpu": "true"})
    cluster.label("node", "t4-2", {"nvidia.com/gpu": "true"})
    from gpusched.objects.types import Taint
    for node in ("t4-1", "t4-2"):
        cluster.taint(node, [Taint("nvidia.com/gpu", "true", "NoSchedule")], [])
    apply(cluster, join(pod("plain"), pod("gpu-job", nodeSelector={"nvidia.com/gpu": "true"},
                                          tolerations=[{"key": "nvidia.com/gpu", "operator": "Equal",
                                                        "value": "true", "effect": "NoSchedule"}])))
    assert cluster.get("pods", ["plain"])[0]["spec"]["nodeName"] == "cpu-1"
    assert cluster.get("pods", ["gpu-job"])[0]["spec"]["nodeName"] in ("t4-1", "t4-2")


def test_cluster_policy_driver_version_reaches_the_gfd_labels(cluster):
    """The GPU Operator installs driver.version; GFD reads it back from NVML."""
    apply(cluster, join(pool("t4", count=1, model="T4", gpus=1), yaml.safe_dump({
        "apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
        "spec": {"driver": {"version": "570.124.06"}}})))
    labels = labels_of(cluster, "t4-1")
    assert (labels["nvidia.com/cuda.driver-version.full"], labels["nvidia.com/cuda.runtime-version.full"]) \
        == ("570.124.06", "12.8")


@pytest.mark.parametrize("spec,finalizers", [({}, ["kubernetes"]),
                                             ({"finalizers": ["example.com/x"]}, ["example.com/x", "kubernetes"]),
                                             ({"finalizers": ["kubernetes"]}, ["kubernetes"])],
                         ids=["none", "another", "already"])
def test_new_namespace_is_active_with_the_kubernetes_finalizer(cluster, spec, finalizers):
    """registry/core/namespace/strategy.go PrepareForCreate: status Active, ``kubernetes`` in
    spec.finalizers; PrepareForUpdate keeps both as stored (a user's update cannot drop them)."""
    apply(cluster, yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"},
                                   "spec": spec}))
    ns = cluster.get("ns", ["team-b"])[0]
    assert (ns["status"], ns["spec"]["finalizers"]) == ({"phase": "Active"}, finalizers)
    apply(cluster, yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace",
                                   "metadata": {"name": "team-b", "labels": {"a": "b"}},
                                   "spec": {"finalizers": []}, "status": {"phase": "Terminating"}}))
    ns = cluster.get("ns", ["team-b"])[0]
    assert (ns["status"], ns["spec"]["finalizers"], ns["metadata"]["labels"]["a"]) == ({"phase": "Active"}, finalizers, "b")
