"""The DRA slices publisher (``cluster.controllers.dra.slices``): one pool per DRA-managed node,
republished with a higher ``pool.generation`` when the node's GPUs change, as the resourceslice
controller of ``k8s.io/dynamic-resource-allocation/resourceslice`` does for NVIDIA's
``gpu-kubelet-plugin`` (``driver.go`` ``publishResources``)."""

from __future__ import annotations

import pytest
import yaml

from gpusched.errors import GpuschedError
from tests.cluster.builders import apply, pool


def dra_pool(name: str = "gpu", management: str = "dra", gpus: int = 2, **spec) -> str:
    body = yaml.safe_load(pool(name, 1, gpus=gpus, **spec))
    body["spec"]["gpu"]["management"] = management
    return yaml.safe_dump(body)


def slices_of(cluster, node: str) -> list[dict]:
    return sorted((s for s in cluster.get("ResourceSlice") if s["spec"]["nodeName"] == node),
                  key=lambda s: s["metadata"]["name"])


def device_names(cluster, node: str) -> list[str]:
    return sorted(d["name"] for s in slices_of(cluster, node) for d in s["spec"].get("devices", []))


def node(cluster, name: str) -> dict:
    return cluster.get("Node", [name])[0]


@pytest.mark.parametrize("management,slices,devices", [
    ("dra", 1, ["gpu-0", "gpu-1"]),
    ("dra-dynamic-mig", 3, None),
], ids=["whole-gpus", "dynamic-mig"])
def test_a_dra_managed_pool_publishes_one_pool_per_node(cluster, management, slices, devices):
    apply(cluster, dra_pool(management=management))
    published = slices_of(cluster, "gpu-1")
    assert len(published) == slices
    assert {s["spec"]["pool"]["name"] for s in published} == {"gpu-1"}
    assert {s["spec"]["driver"] for s in published} == {"gpu.nvidia.com"}
    if devices is not None:
        assert device_names(cluster, "gpu-1") == devices
    else:
        assert len(device_names(cluster, "gpu-1")) == 2 * 26
    assert sorted(c["metadata"]["name"] for c in cluster.get("DeviceClass")) == \
        ["gpu.nvidia.com", "mig.nvidia.com"]


def test_a_dra_managed_node_advertises_no_device_plugin_gpus(cluster):
    """KEP-5004: a node has nvidia.com/gpu through the device plugin or through slices."""
    apply(cluster, dra_pool("dra") + "---\n" + pool("plugin", 1, gpus=2))
    assert "nvidia.com/gpu" not in node(cluster, "dra-1")["status"]["allocatable"]
    assert node(cluster, "plugin-1")["status"]["allocatable"]["nvidia.com/gpu"] == "2"
    assert node(cluster, "dra-1")["metadata"]["labels"]["gpusched.io/gpu-management"] == "dra"
    assert slices_of(cluster, "plugin-1") == []


def test_a_cluster_without_dra_nodes_has_no_device_classes(cluster):
    apply(cluster, pool("plugin", 1, gpus=2))
    assert cluster.get("DeviceClass") == [] and cluster.get("ResourceSlice") == []


def test_a_new_mig_layout_republishes_the_pool_with_the_next_generation(cluster):
    apply(cluster, dra_pool(migConfig="all-balanced"))
    assert device_names(cluster, "gpu-1")[:4] == ["gpu-0-mig-1g5gb-19-2", "gpu-0-mig-1g5gb-19-3",
                                                   "gpu-0-mig-2g10gb-14-0", "gpu-0-mig-3g20gb-9-4"]
    assert [s["spec"]["pool"]["generation"] for s in slices_of(cluster, "gpu-1")] == [0]
    cluster.label("node", "gpu-1", {"nvidia.com/mig.config": "all-3g.20gb"}, overwrite=True)
    assert device_names(cluster, "gpu-1") == [f"gpu-{g}-mig-3g20gb-9-{s}"
                                              for g in (0, 1) for s in (0, 4)]
    assert [s["spec"]["pool"]["generation"] for s in slices_of(cluster, "gpu-1")] == [1]


def test_an_unchanged_pool_is_not_republished(cluster):
    apply(cluster, dra_pool(management="dra-dynamic-mig"))
    before = [s["metadata"]["resourceVersion"] for s in slices_of(cluster, "gpu-1")]
    cluster.label("node", "gpu-1", {"team": "a"})
    cluster.advance(60)
    assert [s["metadata"]["resourceVersion"] for s in slices_of(cluster, "gpu-1")] == before


def test_a_node_that_leaves_dra_loses_its_slices(cluster):
    apply(cluster, dra_pool())
    cluster.label("node", "gpu-1", {"gpusched.io/gpu-management": "device-plugin"},
                  overwrite=True)
    assert slices_of(cluster, "gpu-1") == []
    assert node(cluster, "gpu-1")["status"]["allocatable"]["nvidia.com/gpu"] == "2"


def test_a_deleted_pool_takes_its_slices_with_its_nodes(cluster):
    apply(cluster, dra_pool())
    cluster.delete("nodepool", "gpu", None)
    cluster.advance(1)
    assert cluster.get("ResourceSlice") == []


def test_an_unknown_management_is_refused_with_one_line(cluster):
    with pytest.raises(GpuschedError) as err:
        apply(cluster, dra_pool(management="dra-magic"))
    assert str(err.value).endswith('NodePool "gpu": spec.gpu.management: Unsupported value: '
                                   '"dra-magic": supported values: "device-plugin", "dra", '
                                   '"dra-dynamic-mig"')
    assert cluster.get("NodePool") == [] and cluster.get("Node") == []


def test_consumable_shares_are_published_from_the_pool(cluster):
    body = yaml.safe_load(dra_pool())
    body["spec"]["gpu"]["consumableShares"] = "memory"
    apply(cluster, yaml.safe_dump(body))
    assert node(cluster, "gpu-1")["metadata"]["labels"]["gpusched.io/dra-consumable-shares"] == \
        "memory"
    devices = [d for s in slices_of(cluster, "gpu-1") for d in s["spec"]["devices"]]
    assert all(d["allowMultipleAllocations"] for d in devices)


def test_an_unknown_consumable_shares_value_is_refused(cluster):
    body = yaml.safe_load(dra_pool())
    body["spec"]["gpu"]["consumableShares"] = "half"
    with pytest.raises(GpuschedError) as err:
        apply(cluster, yaml.safe_dump(body))
    assert str(err.value).endswith('spec.gpu.consumableShares: unsupported value "half": '
                                   'supported values: "disabled", "unlimited", "memory" or a '
                                   'positive number of shares')


def test_a_mig_layout_is_refused_under_dynamic_mig(cluster):
    with pytest.raises(GpuschedError) as err:
        apply(cluster, dra_pool(management="dra-dynamic-mig", migConfig="all-balanced"))
    assert str(err.value).endswith('NodePool "gpu": spec.migConfig: must not be set with '
                                   'gpu.management dra-dynamic-mig: the DRA driver creates and '
                                   'deletes the MIG devices itself')
