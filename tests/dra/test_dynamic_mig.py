"""Dynamic MIG through shared counters: one A100-80GB-shaped GPU as NVIDIA's driver publishes it
with DynamicMIG (one counter set of eight memory slices and 98 multiprocessors; the whole GPU
and every placement of each profile consume from it). The worked example of
``gpusched/dra/counters.py``: taking a placement removes the placements it overlaps."""

from __future__ import annotations

from typing import Any

import pytest

from gpusched.dra.allocator import Allocated, InUse, allocate
from gpusched.dra.model import Claim, DeviceClass, Slice
from tests.dra.builders import claim, node, request

DRIVER = "gpu.nvidia.com"
PLACEMENTS = {"1g.10gb": (1, 1, range(7)), "2g.20gb": (2, 2, range(0, 6, 2)), "3g.40gb": (3, 4, range(0, 8, 4)),
              "4g.40gb": (4, 4, range(1)), "7g.80gb": (7, 8, range(1))}


def _device(name: str, kind: str, profile: str, compute: int, slices: range) -> dict[str, Any]:
    counters = {"multiprocessors": {"value": str(compute * 14)}, **{f"memory-slice-{i}": {"value": "1"} for i in slices}}
    return {"name": name, "attributes": {"type": {"string": kind}, "profile": {"string": profile}},
            "consumesCounters": [{"counterSet": "gpu-0-counter-set", "counters": counters}]}


def gpu_slices() -> list[Slice]:
    pool = {"name": "node-1", "generation": 1, "resourceSliceCount": 2}
    devices = [_device("gpu-0", "gpu", "", 7, range(8))]
    devices += [_device(f"gpu-0-mig-{p.replace('.', '')}-{start}", "mig", p, c, range(start, start + m))
                for p, (c, m, starts) in PLACEMENTS.items() for start in starts]
    counters = {"multiprocessors": {"value": "98"}, **{f"memory-slice-{i}": {"value": "1"} for i in range(8)}}
    return [Slice.from_object({"metadata": {"name": "node-1-counters"}, "spec": {
                "driver": DRIVER, "pool": pool, "nodeName": "node-1",
                "sharedCounters": [{"name": "gpu-0-counter-set", "counters": counters}]}}),
            Slice.from_object({"metadata": {"name": "node-1-gpu-0"}, "spec": {
                "driver": DRIVER, "pool": pool, "nodeName": "node-1", "devices": devices}})]


CLASSES = {name: DeviceClass.from_object({"metadata": {"name": name}, "spec": {"selectors": [{"cel": {
    "expression": f"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '{kind}'"}}]}})
    for name, kind in (("gpu.nvidia.com", "gpu"), ("mig.nvidia.com", "mig"))}


def ask(profile: str | None, index: int = 0) -> Claim:
    if profile is None:
        return claim(f"c{index}", request("gpu", "gpu.nvidia.com"))
    return claim(f"c{index}", request("mig", "mig.nvidia.com", 1, f"device.attributes['gpu.nvidia.com'].profile == '{profile}'"))


def take(held: list[Claim], wanted: Claim) -> str | None:
    """The device ``wanted`` gets next to ``held`` (``None``: none fits)."""
    got = allocate([wanted], node(), gpu_slices(), CLASSES, InUse.from_claims(held))
    if not isinstance(got, Allocated):
        return None
    held.append(Claim.from_object({"metadata": {"name": wanted.name}, "spec": {},
                                   "status": {"allocation": got.allocations[0]}}))
    return str(got.allocations[0]["devices"]["results"][0]["device"])


@pytest.mark.parametrize("first,then,expected", [
    pytest.param("3g.40gb", "4g.40gb", None, id="4g-overlaps-3g-at-0"),
    pytest.param("3g.40gb", "3g.40gb", "gpu-0-mig-3g40gb-4", id="second-3g-at-4"),
    pytest.param("3g.40gb", None, None, id="whole-gpu-blocked"),
    pytest.param("3g.40gb", "1g.10gb", "gpu-0-mig-1g10gb-4", id="1g-after-the-3g-slices"),
    pytest.param(None, "1g.10gb", None, id="whole-gpu-takes-everything"),
    pytest.param("7g.80gb", "1g.10gb", None, id="7g-takes-every-slice"),
])
def test_a_placement_removes_what_it_overlaps(first: str | None, then: str | None, expected: str | None) -> None:
    held: list[Claim] = []
    assert take(held, ask(first)) is not None
    assert take(held, ask(then, 1)) == expected


def test_seven_1g_fill_the_gpu() -> None:
    held: list[Claim] = []
    taken = [take(held, ask("1g.10gb", i)) for i in range(8)]
    assert taken[:7] == [f"gpu-0-mig-1g10gb-{i}" for i in range(7)] and taken[7] is None
