"""NVIDIA-shaped ResourceSlices: what ``dra-driver-nvidia-gpu``'s kubelet plugin publishes for
one node's GPUs (``resource.k8s.io/v1``), computed from the GPU catalog.

Upstream (``kubernetes-sigs/dra-driver-nvidia-gpu``, ``cmd/gpu-kubelet-plugin``):

- a whole GPU is the device ``gpu-<minor>`` (``deviceinfo.go`` ``CanonicalName``) with the
  attributes ``type: gpu``, ``uuid``, ``productName`` (NVML's name), ``brand``,
  ``architecture``, the versions ``cudaComputeCapability``, ``driverVersion``,
  ``cudaDriverVersion`` (each through ``semver.MustParse(...).String()``: ``8.0`` -> ``8.0.0``)
  and the standard ``resource.kubernetes.io/pciBusID`` / ``pcieRoot`` / ``numaNode``; its one
  capacity is ``memory`` in bytes (no ``index`` attribute, no ``memory`` attribute);
- a GPU with MIG enabled publishes its MIG devices instead of itself (static MIG, ``nvlib.go``),
  named ``gpu-<minor>-mig-<profile without dots, RFC 1123>-<GI profile id>-<placement start>``
  (``mig.go`` ``ToCanonicalName``: ``1g.5gb+me`` at 0 on GPU 0 is ``gpu-0-mig-1g5gb-me-20-0``),
  with ``type: mig``, ``uuid``, ``parentUUID``, ``profile`` and the parent's product, brand,
  architecture, versions, PCI and NUMA attributes; capacities ``multiprocessors``,
  ``copyEngines``, ``decoders``, ``encoders``, ``jpegEngines``, ``ofaEngines``, ``memory``
  (MiB x 2^20) and ``memorySlice<i>: 1`` for each memory slice of its placement. Without
  DynamicMIG the plugin publishes one slice holding every device;
- with the DynamicMIG gate (``partitions.go``, ``driver.go`` ``generateSplitResourceSlices``, the
  1.35+ form): per GPU one counter set ``gpu-<minor>-counter-set`` whose counters are the
  per-capacity maxima over all profiles (names camelCase -> DNS: ``copyEngines`` ->
  ``copy-engines``) plus ``memory-slice-<i>`` = 1 for every memory slice; the whole GPU (capacity =
  those maxima) consumes all of them, and every legal placement of every profile is a device
  consuming its profile's capacities and its placement's memory slices. So allocating the
  ``3g.20gb`` at 0 on an A100 takes memory slices 0-3 and every placement overlapping them (the
  1g at 0..3, the 2g at 0 and 2, the 4g, the 7g, the whole GPU) can no longer be allocated, while
  the 3g at 4 still can. The first slice of the pool holds the counter sets alone (a v1 slice
  has ``sharedCounters`` or ``devices``, never both), then one slice per GPU with its devices.

All slices of a node are one pool named after the node, ``nodeName`` set, owned by the Node;
devices are sorted by name (the allocator's order, which the driver relies on to put a GPU's
smaller MIG placements first). Names are the resourceslice controller's generated
``<node>-gpu.nvidia.com-<5 characters>``, here derived from the node and the slice's place so a
republish keeps them. gpusched's stand-ins for what NVML would report: PCI bus ids and NUMA
nodes by GPU index (the DGX layout ``metrics`` also uses), the brand ``Nvidia`` (GeForce models
``GeForce``), UUIDs from ``devices.node`` (the same the device plugin path hands out).

Neighbours: ``devices.catalog`` / ``devices.mig_profiles`` (the data), ``devices.mig`` (static
placements), ``devices.dra_classes`` (the DeviceClasses and how a node says it is DRA-managed);
published by ``cluster.controllers.dra.slices``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from gpusched.devices.catalog import GpuModel
from gpusched.devices.gfd import CUDA_OF_DRIVER_BRANCH
from gpusched.devices.mig import place
from gpusched.devices.mig_profiles import MigProfile
from gpusched.devices.node import gpu_uuid, mig_uuid
from gpusched.objects.quantity import parse_quantity, quantity_string

DRIVER = "gpu.nvidia.com"
API_VERSION = "resource.k8s.io/v1"
MAX_COUNTER_SETS = 8          # ResourceSliceMaxCounterSets
NUMA = "resource.kubernetes.io/numaNode"
PCI_BUS_ID = "resource.kubernetes.io/pciBusID"
PCIE_ROOT = "resource.kubernetes.io/pcieRoot"
_PCI_BUSES = (0x07, 0x0F, 0x47, 0x4E, 0x87, 0x90, 0xB7, 0xBD)
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"     # apimachinery's utilrand alphabet
MIB = 2 ** 20

Attributes = dict[str, dict[str, Any]]


@dataclass(frozen=True, slots=True)
class NodeGpus:
    """What the kubelet plugin discovers on one node: model, count, driver, MIG state."""

    node: str
    model: GpuModel
    count: int
    driver_version: str
    layout: tuple[tuple[str, ...] | None, ...] = ()   # per GPU: static MIG profiles, None = off
    dynamic_mig: bool = False
    node_uid: str = ""
    consumable_shares: str = ""     # the driver's consumableShares: "", unlimited, memory, <N>


def semver(version: str) -> str:
    """``semver.MustParse(v).String()`` for the dotted numbers NVML reports.

    >>> semver("8.0"), semver("550.54.15"), semver("12")
    ('8.0.0', '550.54.15', '12.0.0')
    """
    parts = [str(int(p)) for p in version.split(".")[:3]]
    return ".".join(parts + ["0"] * (3 - len(parts)))


def cuda_driver_version(driver_version: str) -> str:
    """The CUDA driver API version of a driver branch (``SystemGetCudaDriverVersion``)."""
    major = int(driver_version.split(".")[0])
    branch = max((b for b in CUDA_OF_DRIVER_BRANCH if b <= major), default=min(CUDA_OF_DRIVER_BRANCH))
    return semver(".".join(str(v) for v in CUDA_OF_DRIVER_BRANCH[branch]))


def pci_bus_id(index: int) -> str:
    """``resource.kubernetes.io/pciBusID`` of GPU ``index`` (sysfs form, ``0000:07:00.0``)."""
    bus = _PCI_BUSES[index] if index < len(_PCI_BUSES) else 0xC0 + index
    return f"0000:{bus:02x}:00.0"


def pcie_root(index: int) -> str:
    """The PCIe root complex of GPU ``index``: GPUs pair under one root as on a DGX board."""
    return f"pci0000:{(index // 2) * 0x40 % 0x100:02x}"


def numa_node(index: int, count: int) -> int:
    """The first half of a node's GPUs on NUMA node 0, the second half on 1."""
    return 0 if count < 2 or index < (count + 1) // 2 else 1


def gpu_attributes(gpus: NodeGpus, index: int) -> Attributes:
    """The attributes a whole GPU and its MIG devices share, minus ``type``/``uuid``."""
    model = gpus.model
    return {
        "architecture": {"string": model.architecture or "Unknown"},
        "brand": {"string": "GeForce" if "GeForce" in model.product else "Nvidia"},
        "cudaComputeCapability": {"version": semver(f"{model.compute_major}.{model.compute_minor}")},
        "cudaDriverVersion": {"version": cuda_driver_version(gpus.driver_version)},
        "driverVersion": {"version": semver(gpus.driver_version)},
        "productName": {"string": model.nvml_name},
        NUMA: {"int": numa_node(index, gpus.count)},
        PCI_BUS_ID: {"string": pci_bus_id(index)},
        PCIE_ROOT: {"string": pcie_root(index)},
    }


def _int(value: int) -> dict[str, str]:
    return {"value": quantity_string(value, "BinarySI")}


def gpu_device(gpus: NodeGpus, index: int) -> dict[str, Any]:
    """The whole GPU ``gpu-<index>`` without DynamicMIG: capacity ``memory`` in bytes."""
    attributes = {**gpu_attributes(gpus, index), "type": {"string": "gpu"},
                  "uuid": {"string": gpu_uuid(gpus.node, index)}}
    return {"name": f"gpu-{index}", "attributes": dict(sorted(attributes.items())),
            "capacity": {"memory": _int(gpus.model.memory_mib * MIB)}}


def mig_capacities(profile: MigProfile) -> dict[str, int]:
    """``CommonCapacitiesMig``: a GPU-instance profile's engines, SMs and memory in bytes."""
    return {"copyEngines": profile.copy_engines, "decoders": profile.decoders,
            "encoders": profile.encoders, "jpegEngines": profile.jpeg,
            "memory": profile.memory_mib * MIB, "multiprocessors": profile.sms,
            "ofaEngines": profile.ofa}


def mig_device_name(index: int, profile: MigProfile, start: int) -> str:
    """``ToCanonicalName``: ``gpu-0-mig-1g5gb-19-3``; ``+me`` becomes ``-me``.

    >>> from gpusched.devices.mig_profiles import A100_40GB
    >>> mig_device_name(0, A100_40GB.find("1g.5gb+me"), 0)
    'gpu-0-mig-1g5gb-me-20-0'
    """
    return f"gpu-{index}-mig-{rfc1123(profile.name.replace('.', ''))}-{profile.profile_id}-{start}"


_MIG_NAME = re.compile(r"^gpu-(\d+)-mig-(.+)-(\d+)-(\d+)$")     # mig.go canonicalMigNameRegex
_GPU_NAME = re.compile(r"^gpu-(\d+)$")


def parse_device_name(name: str) -> tuple[int, int, int] | None:
    """(GPU minor, GI profile id, placement start) of a device name; profile id and start are
    -1 for a whole GPU; None for a name the driver does not publish.

    >>> parse_device_name("gpu-3"), parse_device_name("gpu-0-mig-1g5gb-me-20-6"), parse_device_name("x")
    ((3, -1, -1), (0, 20, 6), None)
    """
    whole = _GPU_NAME.match(name)
    if whole:
        return int(whole.group(1)), -1, -1
    mig = _MIG_NAME.match(name)
    if mig:
        return int(mig.group(1)), int(mig.group(3)), int(mig.group(4))
    return None


def rfc1123(name: str) -> str:
    """``toRFC1123Compliant``: lower case, other characters to ``-``, trimmed."""
    return re.sub(r"[^a-z0-9-.]", "-", name.lower()).strip("-").removesuffix(".")[:253]


def dns_counter_name(capacity: str) -> str:
    """``camelToDNSName``: ``copyEngines`` -> ``copy-engines``, ``HTTPServer`` -> ``http-server``."""
    hyphenated = re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", capacity)
    return rfc1123(re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1-\2", hyphenated))


def mig_device(gpus: NodeGpus, index: int, profile: MigProfile, start: int,
               static: bool) -> dict[str, Any]:
    """A MIG device: a static one (a created instance: ``uuid`` and ``memorySlice<i>``
    capacities) or a DynamicMIG placement (no ``uuid``; its counters are added by the caller)."""
    attributes = {**gpu_attributes(gpus, index), "type": {"string": "mig"},
                  "parentUUID": {"string": gpu_uuid(gpus.node, index)},
                  "profile": {"string": profile.name}}
    capacity = {name: _int(value) for name, value in mig_capacities(profile).items()}
    if static:
        attributes["uuid"] = {"string": mig_uuid(gpus.node, index, profile.name, start)}
        capacity.update({f"memorySlice{i}": _int(1)
                         for i in range(start, start + profile.memory_slices)})
    return {"name": mig_device_name(index, profile, start),
            "attributes": dict(sorted(attributes.items())),
            "capacity": dict(sorted(capacity.items()))}


def counter_set_name(index: int) -> str:
    return f"gpu-{index}-counter-set"


def _max_capacities(gpus: NodeGpus) -> dict[str, int]:
    """Per capacity, the largest value over every profile (``inspectMigProfilesAndPlacements``)."""
    geometry = gpus.model.mig
    assert geometry is not None
    maxima: dict[str, int] = {}
    for profile in geometry.profiles:
        for name, value in mig_capacities(profile).items():
            maxima[name] = max(maxima.get(name, 0), value)
    return maxima


def _counters(capacities: dict[str, int], start: int, size: int) -> dict[str, dict[str, str]]:
    """``capacitiesToCounters`` + ``addCountersForMemSlices``."""
    counters = {dns_counter_name(name): _int(value) for name, value in capacities.items()}
    counters.update({f"memory-slice-{i}": _int(1) for i in range(start, start + size)})
    return dict(sorted(counters.items()))


def _consumes(index: int, counters: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
    return [{"counterSet": counter_set_name(index), "counters": counters}]


def dynamic_gpu_devices(gpus: NodeGpus, index: int) -> list[dict[str, Any]]:
    """One GPU's DynamicMIG devices: itself and every placement of every profile."""
    geometry = gpus.model.mig
    assert geometry is not None
    maxima = _max_capacities(gpus)
    whole = gpu_device(gpus, index)
    whole["capacity"] = {name: _int(value) for name, value in sorted(maxima.items())}
    whole["consumesCounters"] = _consumes(index, _counters(maxima, 0, geometry.memory_slices))
    devices = [whole]
    for profile in geometry.profiles:
        for start in profile.starts:
            device = mig_device(gpus, index, profile, start, static=False)
            device["consumesCounters"] = _consumes(
                index, _counters(mig_capacities(profile), start, profile.memory_slices))
            devices.append(device)
    return sorted(devices, key=lambda d: str(d["name"]))


def counter_set(gpus: NodeGpus, index: int) -> dict[str, Any]:
    """``PartSharedCounterSets``: the GPU's counters, all of it free."""
    geometry = gpus.model.mig
    assert geometry is not None
    return {"name": counter_set_name(index),
            "counters": _counters(_max_capacities(gpus), 0, geometry.memory_slices)}


def static_devices(gpus: NodeGpus) -> list[dict[str, Any]]:
    """Without DynamicMIG: each GPU whole, or its created MIG devices when MIG is enabled."""
    devices: list[dict[str, Any]] = []
    for index in range(gpus.count):
        profiles = gpus.layout[index] if index < len(gpus.layout) else None
        if profiles is None or gpus.model.mig is None:
            devices.append(gpu_device(gpus, index))
            continue
        for name, start in place(gpus.model, list(profiles)):
            profile = gpus.model.mig.find(name)
            assert profile is not None
            devices.append(mig_device(gpus, index, profile, start, static=True))
    return sorted(devices, key=lambda d: str(d["name"]))


def consumable_shares_problem(option: str) -> str | None:
    """Why ``option`` is not one of the driver's ``consumableShares`` values, or None."""
    value = option.strip()
    if value in ("", "disabled", "unlimited", "memory") or (value.isdigit() and int(value) > 0):
        return None
    return (f'unsupported value "{option}": supported values: "disabled", "unlimited", '
            '"memory" or a positive number of shares')


def _range(default: str, low: str, high: str, step: str) -> dict[str, Any]:
    return {"default": default, "validRange": {"min": low, "max": high, "step": step}}


def apply_consumable_shares(device: dict[str, Any], option: str) -> None:
    """``consumable_shares.go`` ``applyConsumableShares`` (the driver's ConsumableShares gate,
    Helm ``consumableShares``): the device may be allocated many times, its ``memory`` rounded
    down to whole MiB gets a request policy (``unlimited``: default 0, 0..max in 1Mi steps;
    ``memory``: default max, 1Mi..max; ``N``: as unlimited plus a ``shares`` capacity N, default
    1, 1..N)."""
    value = option.strip()
    if value in ("", "disabled") or consumable_shares_problem(value):
        return
    device["allowMultipleAllocations"] = True
    capacity = device.setdefault("capacity", {})
    if "memory" not in capacity:
        return
    top = quantity_string((parse_quantity(capacity["memory"]["value"]) // MIB) * MIB, "BinarySI")
    policy = _range(top, "1Mi", top, "1Mi") if value == "memory" else _range("0", "0", top, "1Mi")
    capacity["memory"] = {"value": top, "requestPolicy": policy}
    if value.isdigit():
        capacity["shares"] = {"value": value, "requestPolicy": _range("1", "1", value, "1")}
    device["capacity"] = dict(sorted(capacity.items()))


def slice_specs(gpus: NodeGpus) -> list[dict[str, Any]]:
    """The pool's slices as ``{devices}`` / ``{sharedCounters}`` spec parts, in publish order.

    DynamicMIG on a GPU without MIG data publishes no counter set and the GPU whole (upstream
    issue 1092: an L4 under DynamicMIG), as a GPU the driver cannot partition."""
    if not gpus.dynamic_mig or gpus.model.mig is None:
        return [{"devices": static_devices(gpus)}] if gpus.count else []
    sets = [counter_set(gpus, i) for i in range(gpus.count)]
    specs: list[dict[str, Any]] = [{"sharedCounters": sets[i:i + MAX_COUNTER_SETS]}
                                   for i in range(0, len(sets), MAX_COUNTER_SETS)]
    specs.extend({"devices": dynamic_gpu_devices(gpus, i)} for i in range(gpus.count))
    return specs


def slice_name(node: str, position: int) -> str:
    """``<node>-gpu.nvidia.com-<5>``: generateName's form with a suffix fixed by the node and the
    slice's place in the pool."""
    digest = hashlib.sha256(f"{node}/{DRIVER}/{position}".encode()).digest()
    suffix = "".join(_NAME_ALPHABET[b % len(_NAME_ALPHABET)] for b in digest[:5])
    return f"{node}-{DRIVER}-{suffix}"


def node_slices(gpus: NodeGpus, generation: int = 0) -> list[dict[str, Any]]:
    """The ResourceSlice bodies of ``gpus``'s node: one pool named after the node."""
    specs = slice_specs(gpus)
    for part in specs:
        for device in part.get("devices", []):
            apply_consumable_shares(device, gpus.consumable_shares)
    owner = {"apiVersion": "v1", "kind": "Node", "name": gpus.node, "uid": gpus.node_uid,
             "controller": True}
    bodies = []
    for position, part in enumerate(specs):
        spec = {"driver": DRIVER, "nodeName": gpus.node,
                "pool": {"name": gpus.node, "generation": generation,
                         "resourceSliceCount": len(specs)}, **part}
        bodies.append({"apiVersion": API_VERSION, "kind": "ResourceSlice",
                       "metadata": {"name": slice_name(gpus.node, position),
                                    "ownerReferences": [dict(owner)]},
                       "spec": spec})
    return bodies
