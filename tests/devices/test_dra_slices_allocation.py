"""The slices of ``devices.dra_slices`` through ``gpusched.dra``'s allocator (upstream's
structured allocator): on one DynamicMIG A100-40GB, each claim gets the first free placement
in name order, and a placement takes its memory slices from every placement that overlaps it
(``partitions.go``: the counters; ``mig.go``: names order MIG devices for the allocator); the
static ``all-balanced`` layout serves only its own instances; consumable shares let claims split
a GPU's memory (``consumable_shares.go``)."""

from __future__ import annotations

import pytest

from gpusched.devices.catalog import lookup_model
from gpusched.devices.dra_classes import device_classes
from gpusched.devices.dra_slices import NodeGpus, node_slices
from gpusched.devices.mig import per_gpu_profiles
from gpusched.dra.allocator import Allocated, InUse, NodeFacts, allocate
from gpusched.dra.model import Claim, DeviceClass, Slice

CLASSES = {c["metadata"]["name"]: DeviceClass.from_object(c) for c in device_classes()}
NODE = NodeFacts("node-1", {"kubernetes.io/hostname": "node-1"})


def slices(dynamic: bool = True, layout: tuple = (), shares: str = "") -> list[Slice]:
    gpus = NodeGpus("node-1", lookup_model("A100-40GB"), 1, "550.54.15", layout, dynamic,
                    consumable_shares=shares)
    return [Slice.from_object(body) for body in node_slices(gpus)]


def ask(index: int, profile: str | None, memory: str = "") -> Claim:
    exactly: dict = {"deviceClassName": "mig.nvidia.com" if profile else "gpu.nvidia.com"}
    if profile:
        exactly["selectors"] = [{"cel": {"expression":
                                         f"device.attributes['gpu.nvidia.com'].profile == '{profile}'"}}]
    if memory:
        exactly["capacity"] = {"requests": {"memory": memory}}
    return Claim.from_object({"metadata": {"name": f"c{index}", "namespace": "default"},
                              "spec": {"devices": {"requests": [{"name": "r", "exactly": exactly}]}}})


def run(asks: list[Claim], published: list[Slice]) -> list[str | None]:
    """Allocate the claims one after another; the device each gets (None: no fit)."""
    held: list[Claim] = []
    out: list[str | None] = []
    for wanted in asks:
        got = allocate([wanted], NODE, published, CLASSES, InUse.from_claims(held))
        if not isinstance(got, Allocated):
            out.append(None)
            continue
        held.append(Claim.from_object({"metadata": {"name": wanted.name, "namespace": "default"},
                                       "spec": {}, "status": {"allocation": got.allocations[0]}}))
        out.append(str(got.allocations[0]["devices"]["results"][0]["device"]))
    return out


@pytest.mark.parametrize("profiles,expected", [
    (["3g.20gb", "3g.20gb", "1g.5gb"], ["gpu-0-mig-3g20gb-9-0", "gpu-0-mig-3g20gb-9-4", None]),
    (["3g.20gb", "4g.20gb"], ["gpu-0-mig-3g20gb-9-0", None]),
    (["1g.5gb", "3g.20gb", "2g.10gb"], ["gpu-0-mig-1g5gb-19-0", "gpu-0-mig-3g20gb-9-4",
                                        "gpu-0-mig-2g10gb-14-2"]),
    (["7g.40gb", "1g.5gb"], ["gpu-0-mig-7g40gb-0-0", None]),
    ([None, "1g.5gb"], ["gpu-0", None]),
    (["1g.5gb+me", "1g.5gb+me"], ["gpu-0-mig-1g5gb-me-20-0", None]),
], ids=["two-3g-fill-the-gpu", "4g-overlaps-3g", "placements-left-free", "7g-takes-all",
        "whole-gpu-takes-all", "one-media-extension"])
def test_dynamic_mig_placements_through_the_allocator(profiles, expected):
    assert run([ask(i, p) for i, p in enumerate(profiles)], slices()) == expected


def test_the_static_all_balanced_layout_serves_only_its_instances():
    layout = (tuple(per_gpu_profiles(lookup_model("A100-40GB"), "all-balanced") or ()),)
    got = run([ask(0, "4g.20gb"), ask(1, "3g.20gb"), ask(2, "1g.5gb"), ask(3, "1g.5gb"),
               ask(4, "1g.5gb")], slices(dynamic=False, layout=layout))
    assert got == [None, "gpu-0-mig-3g20gb-9-4", "gpu-0-mig-1g5gb-19-2", "gpu-0-mig-1g5gb-19-3",
                   None]


def test_consumable_shares_split_a_gpus_memory():
    got = run([ask(i, None, "16Gi") for i in range(3)], slices(dynamic=False, shares="unlimited"))
    assert got == ["gpu-0", "gpu-0", None]          # 2 x 16Gi of 39.5Gi, not 3
