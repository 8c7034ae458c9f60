"""The GPU Operator's ClusterPolicy: operand DaemonSets and pods, the device-plugin config it names.

Sources: NVIDIA/gpu-operator assets/state-*/..._daemonset.yaml (names, ``app`` labels, node
selectors ``nvidia.com/gpu.deploy.<operand>``), controllers/object_controls.go
(``transformConfigManagerInitContainer``: ``DEFAULT_CONFIG``, ``FALLBACK_STRATEGIES=empty``;
``applyMIGConfiguration``: ``MIG_STRATEGY``), NVIDIA's time-slicing guide ("Updating a
Time-Slicing Config Map": the operator does not watch the ConfigMap; restart the plugin pods).
"""

from __future__ import annotations

import pytest
import yaml

from gpusched.errors import GpuschedError

from .builders import apply, pool

OPERANDS = ["gpu-feature-discovery", "nvidia-container-toolkit-daemonset", "nvidia-dcgm-exporter",
            "nvidia-device-plugin-daemonset", "nvidia-driver-daemonset", "nvidia-mig-manager",
            "nvidia-operator-validator"]


def policy(name: str = "cluster-policy", **spec) -> str:
    return yaml.safe_dump({"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
                           "metadata": {"name": name}, "spec": spec})


def ts_config(replicas: int = 4, name: str = "time-slicing-config", key: str = "any",
              namespace: str = "gpu-operator") -> str:
    text = (f"version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
            f"      replicas: {replicas}\n")
    ns = yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    return ns + "---\n" + yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                                          "metadata": {"name": name, "namespace": namespace},
                                          "data": {key: text}})


def gpus(cluster, node: str) -> str | None:
    return cluster.get("nodes", [node])[0]["status"]["allocatable"].get("nvidia.com/gpu")


def operator_pods(cluster, app: str) -> list[dict]:
    return cluster.get("pods", namespace="gpu-operator", selector=f"app={app}")


@pytest.fixture
def gpu_cluster(cluster):
    apply(cluster, pool("a100", count=2, model="A100-40GB", gpus=8) + "---\n"
          + pool("t4", count=1, model="T4", gpus=2) + "---\n" + pool("cpu", count=1, gpus=0))
    return cluster


def test_operands_one_pod_per_gpu_node(gpu_cluster):
    apply(gpu_cluster, policy())
    names = sorted(d["metadata"]["name"] for d in gpu_cluster.get("daemonsets", namespace="gpu-operator"))
    assert names == OPERANDS
    for app in OPERANDS:
        pods = operator_pods(gpu_cluster, app)
        nodes = sorted(p["spec"]["nodeName"] for p in pods)
        expected = ["a100-1", "a100-2"] if app == "nvidia-mig-manager" else ["a100-1", "a100-2", "t4-1"]
        assert nodes == expected, app                      # mig-manager: MIG-capable nodes only
        assert all(p["status"]["phase"] == "Running" for p in pods)
    node = gpu_cluster.get("nodes", ["t4-1"])[0]
    assert node["metadata"]["labels"]["nvidia.com/gpu.deploy.device-plugin"] == "true"
    assert "nvidia.com/gpu.deploy.mig-manager" not in node["metadata"]["labels"]
    assert gpu_cluster.get("clusterpolicies")[0]["status"] == {"state": "ready",
                                                                "namespace": "gpu-operator"}


@pytest.mark.parametrize("section,missing", [
    ("dcgmExporter", "nvidia-dcgm-exporter"), ("driver", "nvidia-driver-daemonset"),
    ("migManager", "nvidia-mig-manager"),
], ids=lambda v: v)
def test_disabled_component_has_no_daemonset(gpu_cluster, section, missing):
    apply(gpu_cluster, policy(**{section: {"enabled": False}}))
    names = {d["metadata"]["name"] for d in gpu_cluster.get("daemonsets", namespace="gpu-operator")}
    assert missing not in names and len(names) == len(OPERANDS) - 1


def test_device_plugin_disabled_advertises_nothing(gpu_cluster):
    apply(gpu_cluster, policy(devicePlugin={"enabled": False}))
    assert gpus(gpu_cluster, "a100-1") is None


@pytest.mark.parametrize("config,label,expected", [
    ({"name": "time-slicing-config", "default": "any"}, None, "32"),     # default key
    ({"name": "time-slicing-config"}, None, "8"),       # no default: fallback "empty", not "single"
    ({"name": "time-slicing-config"}, "any", "32"),     # node label selects the key
], ids=["default", "empty-fallback", "node-label"])
def test_policy_names_the_configmap(gpu_cluster, config, label, expected):
    apply(gpu_cluster, ts_config() + "---\n" + policy(devicePlugin={"config": config}))
    if label:
        gpu_cluster.label("node", "a100-1", {"nvidia.com/device-plugin.config": label})
    assert gpus(gpu_cluster, "a100-1") == expected


def test_missing_configmap_is_a_node_event(gpu_cluster):
    apply(gpu_cluster, policy(devicePlugin={"config": {"name": "nope", "default": "any"}}))
    assert gpus(gpu_cluster, "a100-1") is None
    messages = [e["message"] for e in gpu_cluster.events() if e["reason"] == "FailedDevicePluginConfig"]
    assert any('configmap "nope" not found in namespace gpu-operator' in m for m in messages)


def test_policy_mig_strategy_wins_over_the_config_file(gpu_cluster):
    """MIG_STRATEGY from the ClusterPolicy is an env var, which urfave/cli counts as set
    (k8s-device-plugin api/config/v1/flags.go updateFromCLIFlag)."""
    apply(gpu_cluster, pool("mig", count=1, model="A100-40GB", gpus=1, migConfig="all-1g.5gb"))
    cm = yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gpu-operator"}})
    cm += "---\n" + yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "dp", "namespace": "gpu-operator"},
                         "data": {"cfg": "version: v1\nflags:\n  migStrategy: none\n"}})
    apply(gpu_cluster, cm + "---\n" + policy(devicePlugin={"config": {"name": "dp", "default": "cfg"}},
                                             mig={"strategy": "mixed"}))
    node = gpu_cluster.get("nodes", ["mig-1"])[0]
    assert node["status"]["allocatable"].get("nvidia.com/mig-1g.5gb") == "7"


def test_changed_configmap_applies_after_plugin_restart(gpu_cluster):
    apply(gpu_cluster, ts_config(4) + "---\n" + policy(devicePlugin={"config": {
        "name": "time-slicing-config", "default": "any"}}))
    assert gpus(gpu_cluster, "a100-1") == "32"
    apply(gpu_cluster, ts_config(8))
    assert gpus(gpu_cluster, "a100-1") == "32"            # the running plugin keeps its config
    for plugin in operator_pods(gpu_cluster, "nvidia-device-plugin-daemonset"):
        gpu_cluster.delete("pod", plugin["metadata"]["name"], "gpu-operator")
    assert gpus(gpu_cluster, "a100-1") == "64"            # new pods read the new config


def test_without_policy_the_configmap_applies_at_once(gpu_cluster):
    """The stand-in (no ClusterPolicy): gpusched re-advertises on a changed ConfigMap."""
    apply(gpu_cluster, ts_config(4, namespace="default").split("---\n")[1])
    assert gpus(gpu_cluster, "a100-1") == "32"
    apply(gpu_cluster, ts_config(8, namespace="default").split("---\n")[1])
    assert gpus(gpu_cluster, "a100-1") == "64"


def test_deleting_the_policy_removes_the_operands(gpu_cluster):
    apply(gpu_cluster, policy())
    gpu_cluster.delete("clusterpolicies", "cluster-policy")
    assert gpu_cluster.get("daemonsets", namespace="gpu-operator") == []
    gpu_cluster.advance(60)                     # the pods' termination grace period
    assert gpu_cluster.get("pods", namespace="gpu-operator") == []


def test_second_policy_is_ignored(gpu_cluster):
    apply(gpu_cluster, policy())
    apply(gpu_cluster, policy("another"))
    states = {p["metadata"]["name"]: p["status"]["state"] for p in gpu_cluster.get("clusterpolicies")}
    assert states == {"cluster-policy": "ready", "another": "ignored"}


@pytest.mark.parametrize("spec,message", [
    ({"mig": {"strategy": "half"}}, 'spec.mig.strategy: Unsupported value: "half"'),
    ({"devicePlugin": {"enabled": "yes"}}, "spec.devicePlugin.enabled"),
    ({"devicePlugin": {"config": {"name": 7}}}, "spec.devicePlugin.config.name"),
], ids=["mig-strategy", "enabled", "config-name"])
def test_bad_policy_is_rejected(gpu_cluster, spec, message):
    with pytest.raises(GpuschedError) as err:
        apply(gpu_cluster, policy(**spec))
    assert message in str(err.value)
    assert gpu_cluster.get("clusterpolicies") == []
