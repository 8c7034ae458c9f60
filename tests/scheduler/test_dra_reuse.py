"""DynamicResources' kept allocation outcomes change no decision: a seeded stream of claims on
partitionable devices (one counter set per GPU, whole GPUs, halves and quarters consuming its
memory slices, as NVIDIA's DynamicMIG publishes them) is scheduled twice, once reusing kept
outcomes (``helper.dra_allocate``) and once running the allocator on every node for every pod
as upstream's Filter does; every pod gets the same node and the same devices. Claims are freed
along the way (a device freed forces the allocator again).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from gpusched.objects.pod import pod_info
from gpusched.scheduler.plugins.helper.dra_allocate import AllocationMemo
from gpusched.scheduler.plugins.helper.dra_manager import DraObjects, claim_key
from tests.dra.bodies import device, device_class, pod, request, resource_slice
from tests.scheduler.builders import make_node, scheduler_of

DRIVER = "gpu.example.com"
KINDS = {"whole": (0, 4), "half": (0, 2), "quarter": (0, 1)}     # first slice, slices
PLACEMENTS = {"whole": (0,), "half": (0, 2), "quarter": (0, 1, 2, 3)}


def _counters(gpu: int, start: int, size: int) -> list[dict[str, Any]]:
    return [{"counterSet": f"gpu-{gpu}", "counters": {
        **{f"slice-{i}": {"value": "1"} for i in range(start, start + size)},
        "memory": {"value": f"{size * 10}Gi"}}}]


def _node_slices(node: str, gpus: int = 2) -> list[dict[str, Any]]:
    counters = resource_slice(node, DRIVER, name=f"{node}-counters", sharedCounters=[
        {"name": f"gpu-{g}", "counters": {**{f"slice-{i}": {"value": "1"} for i in range(4)},
                                          "memory": {"value": "40Gi"}}} for g in range(gpus)])
    del counters["spec"]["devices"]
    devices = [device(f"gpu-{g}-{kind}-{start}", {"kind": {"string": kind}},
                      consumesCounters=_counters(g, start, KINDS[kind][1]))
               for g in range(gpus) for kind in KINDS for start in PLACEMENTS[kind]]
    body = resource_slice(node, DRIVER, *sorted(devices, key=lambda d: d["name"]), name=f"{node}-devices")
    for one in (counters, body):
        one["spec"]["pool"]["resourceSliceCount"] = 2
        one["metadata"]["resourceVersion"] = "1"
        one["metadata"]["uid"] = one["metadata"]["name"]
    return [counters, body]


def _claim(index: int, kind: str) -> dict[str, Any]:
    selector = f"device.attributes['{DRIVER}'].kind == '{kind}'"
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"c{index}", "namespace": "default", "uid": f"c{index}",
                         "resourceVersion": "1"},
            "spec": {"devices": {"requests": [request("gpu", "gpus", 1, selector)]}}}


def _run(seed: int, reuse: bool) -> list[tuple[str, tuple[str, ...]]]:
    rng = np.random.default_rng(seed)
    nodes = [f"n{i}" for i in range(4)]
    scheduler = scheduler_of(*[make_node(n) for n in nodes], seed=seed)
    plugin = scheduler.frameworks["default-scheduler"].plugins["DynamicResources"]
    if not reuse:
        plugin.memo._still_first = lambda node, kept: False          # upstream: always allocate
    kinds = rng.choice(list(KINDS), size=60, p=[0.2, 0.3, 0.5])
    claims = {claim_key(c): c for c in (_claim(i, str(k)) for i, k in enumerate(kinds))}
    classes = {"gpus": {**device_class("gpus", f"device.driver == '{DRIVER}'"),
                        "metadata": {"name": "gpus", "resourceVersion": "1"}}}
    slices = [s for n in nodes for s in _node_slices(n)]
    plugin.set_objects(DraObjects(dict(claims), slices, classes))
    decisions, version, placed = [], 1, []
    for i in range(len(kinds)):
        info = pod_info(pod(f"p{i}", ("gpu", f"c{i}")), i)
        result = scheduler.schedule_one(info)
        devices: tuple[str, ...] = ()
        for write in plugin.pre_bind(info, result.node) if result.scheduled else ():
            version += 1
            stored = copy.deepcopy(write.body)
            stored["metadata"]["resourceVersion"] = str(version)
            plugin.assumed(write, stored)
            claims[claim_key(stored)] = stored
            devices = tuple(r["device"] for r in stored["status"]["allocation"]["devices"]["results"])
            placed.append((info.uid, claim_key(stored)))
        decisions.append((result.node, devices))
        if i % 7 == 6 and placed:           # a pod ends: its claim is deallocated
            uid, key = placed.pop(int(rng.integers(len(placed))))
            scheduler.snapshot.remove_pod(uid)
            freed = copy.deepcopy(claims[key])
            freed["status"] = {}
            version += 1
            freed["metadata"]["resourceVersion"] = str(version)
            claims[key] = freed
            plugin.set_objects(DraObjects(dict(claims), slices, classes))
    return decisions


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kept_outcomes_make_the_decisions_the_allocator_makes(seed):
    reused, fresh = _run(seed, reuse=True), _run(seed, reuse=False)
    assert reused == fresh
    assert sum(1 for node, _ in reused if node) > 20      # the stream fills the devices


def test_the_comparison_sees_a_wrong_reuse(monkeypatch):
    """The check above is not vacuous: reusing every kept outcome blindly decides otherwise."""
    monkeypatch.setattr(AllocationMemo, "_still_first", lambda self, node, kept: True)
    assert _run(1, reuse=True) != _run(1, reuse=False)
