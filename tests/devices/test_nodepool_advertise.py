"""NodePool expansion and node_device_state: pool nodes and real Node manifests, one path."""

from __future__ import annotations

import pytest

from gpusched.devices.advertise import node_device_state
from gpusched.devices.nodepool import expand_nodepool
from gpusched.errors import UsageError

TIME_SLICING = """
version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
"""


def pool(**spec) -> dict:
    base = {"count": 2, "gpu": {"model": "A100-40GB", "count": 8}}
    return {"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "a100"},
            "spec": {**base, **spec}}


def configmap(data: dict, name="time-slicing-config", namespace="gpu-operator", **annotations) -> dict:
    return {"kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace,
                                              "annotations": annotations}, "data": data}


def real_node(name="gpu-node-3", product="Tesla-T4", gpus="2", labels=None) -> dict:
    return {"kind": "Node", "metadata": {"name": name, "labels": {
        "nvidia.com/gpu.product": product, **(labels or {})}},
        "status": {"capacity": {"cpu": "16", "memory": "64Gi", "nvidia.com/gpu": gpus}}}


def test_expand_names_labels_capacity():
    nodes = expand_nodepool(pool(namePrefix="gpu-node", labels={"gpu-type": "a100"}, cpu="96",
                                 memory="1Ti", taints=[{"key": "dedicated", "value": "gpu",
                                                        "effect": "NoSchedule"}]))
    assert [n["metadata"]["name"] for n in nodes] == ["gpu-node-1", "gpu-node-2"]
    node = nodes[0]
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "gpu-node-1"
    assert node["metadata"]["labels"]["gpusched.io/nodepool"] == "a100"
    assert node["metadata"]["labels"]["gpu-type"] == "a100"
    assert node["metadata"]["annotations"] == {"gpusched.io/gpu-model": "A100-40GB",
                                               "gpusched.io/gpu-count": "8"}
    assert node["status"]["capacity"] == {"cpu": "96", "memory": "1Ti", "pods": "110",
                                          "ephemeral-storage": "100Gi"}
    assert node["spec"]["taints"] == [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    assert not any(k.startswith("nvidia.com/") for k in node["status"]["capacity"])


def test_expand_names_list_and_cpu_pool():
    nodes = expand_nodepool({"metadata": {"name": "cpu"}, "spec": {"names": ["cpu-1"]}})
    assert nodes[0]["metadata"]["name"] == "cpu-1" and nodes[0]["metadata"]["annotations"] == {}


@pytest.mark.parametrize("spec,message", [
    ({"gpu": {"model": "RTX-9090", "count": 1}}, 'NodePool "a100": spec.gpu.model: unknown GPU model "RTX-9090"; known models: V100-16GB'),
    ({"gpu": {"model": "T4", "count": 0}}, 'NodePool "a100": spec.gpu.count'),
    ({"migStrategy": "half"}, 'NodePool "a100": spec.migStrategy: unsupported value "half"'),
    ({"memory": "lots"}, 'NodePool "a100": spec.memory: invalid value "lots"'),
    ({"taints": [{"key": "a", "effect": "Sometimes"}]}, 'NodePool "a100": spec.taints[0].effect'),
    ({"count": -1}, 'NodePool "a100": spec.count'),
], ids=["model", "gpu-count", "mig-strategy", "memory", "taint-effect", "count"])
def test_expand_errors(spec, message):
    with pytest.raises(UsageError) as err:
        expand_nodepool(pool(**spec))
    assert str(err.value).startswith(message)


def test_pool_node_whole_gpus():
    state = node_device_state(expand_nodepool(pool())[0], [])
    assert state.error is None and state.capacity == {"nvidia.com/gpu": 8}
    assert state.labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB"
    assert state.labels["gpusched.io/gpu-count"] == "8"


def test_tutorial_configmap_applies_unchanged():
    state = node_device_state(real_node(), [configmap({"any": TIME_SLICING})])
    assert state.config_key == "any"
    assert state.capacity == {"nvidia.com/gpu": 8}
    assert state.labels["nvidia.com/gpu.replicas"] == "4"
    assert state.labels["nvidia.com/gpu.product"] == "Tesla-T4-SHARED"


def test_readvertise_is_stable():
    """Advertised capacity (replicas) must not be read back as the physical GPU count."""
    cms = [configmap({"any": TIME_SLICING})]
    node = real_node()
    state = node_device_state(node, cms)
    node["metadata"]["labels"].update(state.labels)
    node["status"]["capacity"].update({k: str(v) for k, v in state.capacity.items()})
    again = node_device_state(node, cms)
    assert again.capacity == state.capacity and again.labels == state.labels


def test_per_node_label_selects_key():
    cms = [configmap({"t4": TIME_SLICING, "a100": TIME_SLICING.replace("4", "10")})]
    labelled = real_node(labels={"nvidia.com/device-plugin.config": "t4"})
    assert node_device_state(labelled, cms).capacity == {"nvidia.com/gpu": 8}
    assert node_device_state(real_node(), cms).capacity == {"nvidia.com/gpu": 2}
    default = [configmap({"t4": TIME_SLICING, "a100": TIME_SLICING.replace("4", "3")},
                         **{"gpusched.io/device-plugin-config-default": "a100"})]
    assert node_device_state(real_node(), default).capacity == {"nvidia.com/gpu": 6}


def test_mig_pool_node_mixed():
    node = expand_nodepool(pool(migConfig="all-balanced", migStrategy="mixed"))[0]
    state = node_device_state(node, [])
    assert state.capacity == {"nvidia.com/mig-1g.5gb": 16, "nvidia.com/mig-2g.10gb": 8,
                              "nvidia.com/mig-3g.20gb": 8}
    assert state.labels["nvidia.com/mig.config.state"] == "success"
    assert state.labels["nvidia.com/mig-1g.5gb.count"] == "16"


@pytest.mark.parametrize("node,cms,fragment", [
    (real_node(), [configmap({"any": "version: v9"})],
     'ConfigMap gpu-operator/time-slicing-config key \'any\': unknown version: v9'),
    (real_node(product="NVIDIA-A100-SXM4-40GB", gpus="1", labels={"nvidia.com/mig.config": "all-2g.10gb"}),
     [configmap({"any": "version: v1\nflags: {migStrategy: single}\nsharing:\n  mps:\n    resources:\n"
                        "    - {name: gpu, replicas: 2}\n"})], "MPS"),
], ids=["bad-config", "mps-on-mig"])
def test_errors_advertise_nothing(node, cms, fragment):
    state = node_device_state(node, cms)
    assert fragment in state.error
    assert state.capacity == {} and state.devices.advertised == {}


# NVIDIA k8s-device-plugin: the plugin refuses these layouts under the single strategy
# (internal/rm/device_map.go, "invalid MIG configuration: ..."), while GFD, its own DaemonSet,
# labels the node as invalid (internal/lm/mig-strategy.go newMigStrategySingleLabeler ->
# newInvalidMigStrategyLabeler: "<product>-MIG-INVALID", count/replicas/memory 0, empty sharing
# strategy), merged over the full-GPU labeler's family and compute labels.
@pytest.mark.parametrize("mig_config,plugin_error", [
    ("all-balanced", "more than one MIG device type present on node"),
    ("all-enabled", "device 0 has no MIG devices configured"),
], ids=["mixed-profiles", "enabled-but-empty"])
def test_single_strategy_invalid_layout_keeps_gfd_invalid_labels(mig_config, plugin_error):
    node = expand_nodepool(pool(migConfig=mig_config, migStrategy="single"))[0]
    state = node_device_state(node, [])
    assert state.error == f"node a100-1: invalid MIG configuration: {plugin_error}"
    assert state.capacity == {}
    assert {k: state.labels.get(k) for k in (
        "nvidia.com/gpu.product", "nvidia.com/gpu.count", "nvidia.com/gpu.replicas",
        "nvidia.com/gpu.memory", "nvidia.com/gpu.sharing-strategy", "nvidia.com/mig.strategy",
        "nvidia.com/gpu.family", "nvidia.com/gpu.machine")} == {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-INVALID", "nvidia.com/gpu.count": "0",
        "nvidia.com/gpu.replicas": "0", "nvidia.com/gpu.memory": "0",
        "nvidia.com/gpu.sharing-strategy": "", "nvidia.com/mig.strategy": "single",
        "nvidia.com/gpu.family": "ampere", "nvidia.com/gpu.machine": "unknown"}


def test_mig_label_on_a_gpu_without_mig_is_ignored():
    # gpu-operator deploys mig-manager only on nodes labelled nvidia.com/mig.capable=true
    # (nvidia.com/gpu.deploy.mig-manager): nothing acts on the label of a T4 node.
    state = node_device_state(real_node(labels={"nvidia.com/mig.config": "all-1g.5gb"}), [])
    assert state.error is None and state.capacity == {"nvidia.com/gpu": 2}
    assert "nvidia.com/mig.config.state" not in state.labels and state.annotations == {}


def test_custom_mig_parted_configmap():
    custom = configmap({"config.yaml": "version: v1\nmig-configs:\n  halves:\n"
                                       "    - devices: all\n      mig-enabled: true\n"
                                       "      mig-devices: {3g.20gb: 2}\n"},
                       name="custom-mig-parted-config")
    node = expand_nodepool(pool(migConfig="halves", migStrategy="single"))[0]
    state = node_device_state(node, [custom])
    assert state.error is None and state.capacity == {"nvidia.com/gpu": 16}
    assert state.labels["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-40GB-MIG-3g.20gb"


def test_cpu_node():
    state = node_device_state({"metadata": {"name": "cpu-1"}}, [])
    assert state.capacity == {} and state.labels == {} and state.error is None
