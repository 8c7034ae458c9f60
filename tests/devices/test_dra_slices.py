"""NVIDIA-shaped ResourceSlices (``devices.dra_slices``), checked against the driver's code:
``kubernetes-sigs/dra-driver-nvidia-gpu`` ``cmd/gpu-kubelet-plugin/deviceinfo.go`` (GPU
attributes, ``gpu-<minor>``), ``mig.go`` (``ToCanonicalName``, ``CommonCapacitiesMig``,
``CommonAttributesMig``), ``partitions.go`` (counter sets, ``memory-slice-<i>``),
``driver.go`` ``generateSplitResourceSlices`` (counter sets alone in the first slice)."""

from __future__ import annotations

import pytest

from gpusched.devices.catalog import lookup_model
from gpusched.devices.dra_classes import device_classes
from gpusched.devices.dra_slices import (NodeGpus, dns_counter_name, mig_device_name, node_slices,
                                         semver, slice_specs)


def gpus(model: str = "A100-40GB", count: int = 8, dynamic: bool = False,
         layout: tuple = (), driver: str = "550.54.15") -> NodeGpus:
    return NodeGpus("node-1", lookup_model(model), count, driver, layout, dynamic, "uid-1")


def devices(spec_parts: list[dict]) -> list[dict]:
    return [d for part in spec_parts for d in part.get("devices", [])]


def by_name(spec_parts: list[dict]) -> dict[str, dict]:
    return {d["name"]: d for d in devices(spec_parts)}


GPU_ATTRIBUTES = {"architecture", "brand", "cudaComputeCapability", "cudaDriverVersion",
                  "driverVersion", "productName", "type", "uuid",
                  "resource.kubernetes.io/numaNode", "resource.kubernetes.io/pciBusID",
                  "resource.kubernetes.io/pcieRoot"}


def test_whole_gpu_has_the_drivers_attribute_set_and_a_memory_capacity():
    """deviceinfo.go ``GpuInfo.Attributes``: no ``index`` and no ``memory`` attribute; the
    minor is only in the name, memory is a capacity in bytes."""
    gpu = by_name(slice_specs(gpus("H100-80GB", 2)))["gpu-1"]
    assert set(gpu["attributes"]) == GPU_ATTRIBUTES
    assert gpu["attributes"]["type"] == {"string": "gpu"}
    assert gpu["attributes"]["productName"] == {"string": "NVIDIA H100 80GB HBM3"}
    assert gpu["attributes"]["cudaComputeCapability"] == {"version": "9.0.0"}
    assert gpu["attributes"]["cudaDriverVersion"] == {"version": "12.4.0"}
    assert gpu["capacity"] == {"memory": {"value": "81559Mi"}}


@pytest.mark.parametrize("version,expected", [("8.0", "8.0.0"), ("550.54.15", "550.54.15"),
                                              ("12", "12.0.0"), ("570.086.01", "570.86.1")],
                         ids=["two-parts", "three-parts", "one-part", "leading-zeros"])
def test_versions_go_through_semver(version, expected):
    assert semver(version) == expected


@pytest.mark.parametrize("minor,profile,start,expected", [
    (0, "1g.5gb", 3, "gpu-0-mig-1g5gb-19-3"),
    (0, "1g.5gb+me", 0, "gpu-0-mig-1g5gb-me-20-0"),
    (7, "3g.20gb", 4, "gpu-7-mig-3g20gb-9-4"),
    (1, "7g.40gb", 0, "gpu-1-mig-7g40gb-0-0"),
], ids=["1g", "plus-me", "3g-upper-half", "7g"])
def test_mig_device_names_are_the_canonical_names(minor, profile, start, expected):
    """mig.go ``ToCanonicalName``: profile without dots, RFC 1123, GI profile id, start."""
    geometry = lookup_model("A100-40GB").mig
    assert mig_device_name(minor, geometry.find(profile), start) == expected


@pytest.mark.parametrize("capacity,counter", [("copyEngines", "copy-engines"),
                                              ("multiprocessors", "multiprocessors"),
                                              ("HTTPServer", "http-server")],
                         ids=["camel", "plain", "acronym"])
def test_counter_names_are_dns_names(capacity, counter):
    """mig.go ``camelToDNSName``."""
    assert dns_counter_name(capacity) == counter


def test_static_mig_gpu_publishes_its_instances_not_itself():
    """nvlib.go: a MIG-enabled GPU announces its created MIG devices, the other GPUs whole."""
    layout = (("3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"), None)
    named = by_name(slice_specs(gpus(count=2, layout=layout)))
    assert sorted(named) == ["gpu-0-mig-1g5gb-19-2", "gpu-0-mig-1g5gb-19-3",
                             "gpu-0-mig-2g10gb-14-0", "gpu-0-mig-3g20gb-9-4", "gpu-1"]
    mig = named["gpu-0-mig-3g20gb-9-4"]
    assert mig["attributes"]["profile"] == {"string": "3g.20gb"}
    whole = by_name(slice_specs(gpus(count=2)))["gpu-0"]
    assert mig["attributes"]["parentUUID"] == whole["attributes"]["uuid"]
    assert mig["attributes"]["uuid"]["string"].startswith("MIG-")
    assert {k for k, v in mig["capacity"].items() if k.startswith("memorySlice")} == \
        {"memorySlice4", "memorySlice5", "memorySlice6", "memorySlice7"}
    assert mig["capacity"]["memory"] == {"value": "20091Mi"}
    assert mig["capacity"]["multiprocessors"] == {"value": "42"}


@pytest.mark.parametrize("model,per_gpu", [("A100-40GB", 26), ("H100-80GB", 26), ("A30", 14)],
                         ids=["a100", "h100", "a30"])
def test_dynamic_mig_publishes_every_placement_of_every_profile(model, per_gpu):
    """nvlib.go ``inspectMigProfilesAndPlacements``: the GPU plus each profile's placements
    (A100: 1g x7, 1g+me x7, 1g.10gb x4, 2g x3, 3g x2, 4g x1, 7g x1; A30: 1g x4, 1g+me x4,
    2g x2, 2g+me x2, 4g x1)."""
    parts = slice_specs(gpus(model, 2, dynamic=True))
    assert "sharedCounters" in parts[0] and "devices" not in parts[0]
    assert [len(p["devices"]) for p in parts[1:]] == [per_gpu, per_gpu]
    names = [d["name"] for d in parts[1]["devices"]]
    assert names == sorted(names) and names[0] == "gpu-0"


def _memory_slices(device: dict) -> set[str]:
    counters = device["consumesCounters"][0]["counters"]
    return {name for name in counters if name.startswith("memory-slice-")}


def test_a_3g_placement_overlaps_exactly_the_placements_sharing_its_memory_slices():
    """The worked example of the module docstring: 3g.20gb at 0 takes memory slices 0-3."""
    named = by_name(slice_specs(gpus(count=1, dynamic=True)))
    taken = _memory_slices(named["gpu-0-mig-3g20gb-9-0"])
    assert taken == {f"memory-slice-{i}" for i in range(4)}
    blocked = sorted(n for n, d in named.items() if _memory_slices(d) & taken and
                     n != "gpu-0-mig-3g20gb-9-0")
    assert "gpu-0" in blocked and "gpu-0-mig-7g40gb-0-0" in blocked
    assert "gpu-0-mig-4g20gb-5-0" in blocked and "gpu-0-mig-2g10gb-14-2" in blocked
    assert "gpu-0-mig-3g20gb-9-4" not in blocked and "gpu-0-mig-2g10gb-14-4" not in blocked


def test_counter_set_holds_the_maxima_and_every_memory_slice():
    """partitions.go ``PartSharedCounterSets``; the whole GPU consumes all of it."""
    parts = slice_specs(gpus(count=1, dynamic=True))
    counter_set = parts[0]["sharedCounters"][0]
    assert counter_set["name"] == "gpu-0-counter-set"
    assert counter_set["counters"]["multiprocessors"] == {"value": "98"}
    assert counter_set["counters"]["memory"] == {"value": "40448Mi"}
    assert len([c for c in counter_set["counters"] if c.startswith("memory-slice-")]) == 8
    whole = by_name(parts)["gpu-0"]
    assert whole["consumesCounters"][0]["counters"] == counter_set["counters"]


def test_a_gpu_without_mig_under_dynamic_mig_is_published_whole():
    """Upstream issue 1092 (an L4 under DynamicMIG): no counter set for a GPU without MIG."""
    parts = slice_specs(gpus("L4", 2, dynamic=True))
    assert len(parts) == 1 and sorted(by_name(parts)) == ["gpu-0", "gpu-1"]
    assert all("consumesCounters" not in d for d in devices(parts))


@pytest.mark.parametrize("model,count,dynamic", [("A100-40GB", 8, True), ("H200-141GB", 16, True),
                                                 ("A100-80GB", 8, False), ("T4", 4, False)],
                         ids=["a100x8-dynamic", "h200x16-dynamic", "a100x8-whole", "t4x4"])
def test_slices_stay_within_the_v1_limits(model, count, dynamic):
    """types.go: 64 devices per slice with consumesCounters (else 128), 8 counter sets per
    slice, 32 attributes and capacities together per device; one pool, every slice counted."""
    bodies = node_slices(gpus(model, count, dynamic), generation=3)
    assert {b["spec"]["pool"]["resourceSliceCount"] for b in bodies} == {len(bodies)}
    assert {b["spec"]["pool"]["name"] for b in bodies} == {"node-1"}
    assert len({b["metadata"]["name"] for b in bodies}) == len(bodies)
    for body in bodies:
        spec = body["spec"]
        assert spec["nodeName"] == "node-1" and spec["pool"]["generation"] == 3
        assert not ("devices" in spec and "sharedCounters" in spec)
        assert len(spec.get("devices", [])) <= (64 if dynamic else 128)
        assert len(spec.get("sharedCounters", [])) <= 8
        for device in spec.get("devices", []):
            assert len(device["attributes"]) + len(device.get("capacity", {})) <= 32
        assert body["metadata"]["ownerReferences"][0]["kind"] == "Node"


def test_device_classes_select_by_driver_and_type():
    """deployments/helm/.../deviceclass-gpu.yaml and deviceclass-mig.yaml (v1 rendering)."""
    classes = {c["metadata"]["name"]: c["spec"] for c in device_classes()}
    assert classes["gpu.nvidia.com"] == {
        "selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && "
                                             "device.attributes['gpu.nvidia.com'].type == 'gpu'"}}],
        "extendedResourceName": "nvidia.com/gpu"}
    assert classes["mig.nvidia.com"]["selectors"][0]["cel"]["expression"].endswith("== 'mig'")


@pytest.mark.parametrize("option,memory,shares", [
    ("unlimited", {"value": "81559Mi", "requestPolicy": {
        "default": "0", "validRange": {"min": "0", "max": "81559Mi", "step": "1Mi"}}}, None),
    ("memory", {"value": "81559Mi", "requestPolicy": {
        "default": "81559Mi", "validRange": {"min": "1Mi", "max": "81559Mi", "step": "1Mi"}}}, None),
    ("4", {"value": "81559Mi", "requestPolicy": {
        "default": "0", "validRange": {"min": "0", "max": "81559Mi", "step": "1Mi"}}},
     {"value": "4", "requestPolicy": {"default": "1",
                                      "validRange": {"min": "1", "max": "4", "step": "1"}}}),
], ids=["unlimited", "memory", "four-shares"])
def test_consumable_shares_give_memory_a_request_policy(option, memory, shares):
    """consumable_shares.go ``applyConsumableShares``."""
    gpu = NodeGpus("node-1", lookup_model("H100-80GB"), 1, "550.54.15", consumable_shares=option)
    (device,) = node_slices(gpu)[0]["spec"]["devices"]
    assert device["allowMultipleAllocations"] is True
    assert device["capacity"]["memory"] == memory
    assert device["capacity"].get("shares") == shares


@pytest.mark.parametrize("option", ["", "disabled"], ids=["unset", "disabled"])
def test_without_consumable_shares_a_device_is_allocated_once(option):
    gpu = NodeGpus("node-1", lookup_model("H100-80GB"), 1, "550.54.15", consumable_shares=option)
    (device,) = node_slices(gpu)[0]["spec"]["devices"]
    assert "allowMultipleAllocations" not in device
    assert device["capacity"] == {"memory": {"value": "81559Mi"}}
