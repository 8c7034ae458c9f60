"""Current GPU models, user-defined models (ConfigMap, NodePool) and unknown products.

Product label values follow GFD's sanitising of the NVML name (k8s-device-plugin
internal/lm/resource.go); MIG profile names follow mig-parted deployments/systemd/
config-default.yaml (nvidia-gpu-stack.md 3.6-3.8).
"""

from __future__ import annotations

import pytest

from gpusched.devices.advertise import node_device_state, node_gpus
from gpusched.devices.catalog import CATALOG, lookup_model
from gpusched.devices.nodepool import expand_nodepool
from gpusched.devices.user_models import (generic_model, model_from_spec, parse_models,
                                          user_models)
from gpusched.errors import UsageError

RTX_PRO = {"name": "RTX-PRO-6000", "product": "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",
           "memory": "96Gi", "architecture": "Blackwell", "computeCapability": "12.0",
           "migProfiles": ["1g.24gb", "2g.48gb", "4g.96gb"]}


def models_configmap(text: str, namespace: str = "kube-system") -> dict:
    return {"kind": "ConfigMap", "metadata": {"name": "gpusched-gpu-models",
                                              "namespace": namespace},
            "data": {"models.yaml": text}}


def gpu_node(name: str = "n1", count: str = "4", **labels: str) -> dict:
    return {"kind": "Node", "metadata": {"name": name, "labels": dict(labels)},
            "status": {"capacity": {"nvidia.com/gpu": count}}}


@pytest.mark.parametrize("name,product,family,mig", [
    ("B200", "NVIDIA-B200", "blackwell", "7g.180gb"),
    ("GB200", "NVIDIA-GB200", "blackwell", "7g.186gb"),
    ("GB10", "NVIDIA-GB10", "blackwell", None),
    ("H200-141GB", "NVIDIA-H200", "hopper", "7g.141gb"),
    ("H100-80GB", "NVIDIA-H100-80GB-HBM3", "hopper", "7g.80gb"),
    ("H100-PCIE", "NVIDIA-H100-PCIe", "hopper", "7g.80gb"),
    ("H100-NVL", "NVIDIA-H100-NVL", "hopper", "7g.94gb"),
    ("L40S", "NVIDIA-L40S", "ada-lovelace", None),
    ("L4", "NVIDIA-L4", "ada-lovelace", None),
    ("A10G", "NVIDIA-A10G", "ampere", None),
    ("RTX-6000-ADA", "NVIDIA-RTX-6000-Ada-Generation", "ada-lovelace", None),
    ("RTX-4090", "NVIDIA-GeForce-RTX-4090", "ada-lovelace", None),
], ids=lambda v: str(v))
def test_current_models(name, product, family, mig):
    model = lookup_model(product)
    assert (model.name, model.family) == (name, family)
    assert (model.mig.find(mig) is not None) if mig else model.mig is None


@pytest.mark.parametrize("alias,name", [("H100-SXM", "H100-80GB"), ("NVIDIA-H100-PCIe", "H100-PCIE"),
                                        ("rtx4090", "RTX-4090")], ids=lambda v: v)
def test_aliases(alias, name):
    assert lookup_model(alias).name == name


def test_gb200_mig_names_and_memory():
    names = CATALOG["GB200"].mig.names
    assert names == ("1g.23gb", "1g.23gb+me", "1g.47gb", "2g.47gb", "3g.93gb", "4g.93gb", "7g.186gb")


def test_user_model_from_spec():
    model = model_from_spec(RTX_PRO, "m")
    assert (model.product, model.memory_mib, model.family, model.compute_capability) == (
        "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", 98304, "blackwell", (12, 0))
    assert model.mig.find("2g.48gb").memory_slices == 2
    assert model.nvml_name == "NVIDIA RTX PRO 6000 Blackwell Server Edition"


@pytest.mark.parametrize("change,message", [
    ({"name": ""}, "m.name: Required value"),
    ({"product": None}, "m.product: Required value"),
    ({"memory": "lots"}, 'm.memory: Invalid value: "lots"'),
    ({"architecture": "Kepler", "computeCapability": None}, 'm.architecture: Unsupported value: "Kepler"'),
    ({"computeCapability": "twelve"}, 'm.computeCapability: Invalid value: "twelve"'),
    ({"migProfiles": ["9g.1gb"]}, 'm.migProfiles: invalid MIG profile "9g.1gb"'),
    ({"colour": "green"}, 'm: unknown field "colour"'),
], ids=lambda v: str(v))
def test_user_model_errors(change, message):
    spec = {**RTX_PRO, **change}
    spec = {k: v for k, v in spec.items() if v is not None}
    with pytest.raises(UsageError) as err:
        model_from_spec(spec, "m")
    assert message in str(err.value)


def test_models_configmap_adds_a_model_a_node_can_use():
    cm = models_configmap("models:\n- {name: RTX-PRO-6000, product: NVIDIA-RTX-PRO-6000-"
                          "Blackwell-Server-Edition, memoryMiB: 97887, architecture: Blackwell}\n")
    node = gpu_node(**{"nvidia.com/gpu.product": "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition"})
    state = node_device_state(node, [cm])
    assert state.warning is None and state.capacity == {"nvidia.com/gpu": 4}
    assert state.labels["nvidia.com/gpu.memory"] == "97887"
    assert state.labels["nvidia.com/gpu.family"] == "blackwell"


def test_models_configmap_rejects_catalog_names():
    with pytest.raises(UsageError, match=r'models\[0\].name: Duplicate value: "A100-40GB"'):
        parse_models("models:\n- {name: A100-40GB, product: X, memory: 1Gi, architecture: Ampere}", "cm")


def test_unknown_product_still_advertises_its_gpus():
    """An unknown product is not a node without GPUs: count from capacity, memory from GFD."""
    node = gpu_node(**{"nvidia.com/gpu.product": "NVIDIA-Future-GPU", "nvidia.com/gpu.memory": "65536"})
    model, count, warning = node_gpus(node)
    assert (model.product, model.memory_mib, count) == ("NVIDIA-Future-GPU", 65536, 4)
    assert 'GPU product "NVIDIA-Future-GPU" is not in gpusched\'s catalog' in warning
    assert node_device_state(node, []).capacity == {"nvidia.com/gpu": 4}


def test_generic_model_without_labels_has_unknown_memory():
    assert generic_model("X", {}).memory_mib == 0


def test_nodepool_inline_definition_and_configmap_model():
    pool = {"metadata": {"name": "pro"}, "spec": {"count": 1, "gpu": {"count": 2, "define": RTX_PRO}}}
    node = expand_nodepool(pool)[0]
    assert node_gpus(node)[0].name == "RTX-PRO-6000"
    extra = user_models([models_configmap("models:\n- {name: MY-GPU, product: My-GPU, memory: 8Gi, "
                                          "architecture: Turing}\n")])
    pool = {"metadata": {"name": "mine"}, "spec": {"count": 1, "gpu": {"model": "MY-GPU", "count": 1}}}
    assert expand_nodepool(pool, extra)[0]["metadata"]["annotations"]["gpusched.io/gpu-model"] == "MY-GPU"
    with pytest.raises(UsageError, match="or define one: spec.gpu.define"):
        expand_nodepool(pool)
