"""NVLink domains per GPU model and the whole-GPU choice inside one domain
(``devices.interconnect``; the device plugin's choice is go-gpuallocator's
``gpuallocator/besteffort_policy.go``, which prefers the set with the most NVLink links)."""

from __future__ import annotations

import pytest

from gpusched.devices.catalog import CATALOG
from gpusched.devices.interconnect import (NONE, NVLINK_BRIDGE, NVLINK_MESH, NVSWITCH, interconnect_of,
                                           pick_whole_gpus, placement_note)
from tests.devices.builders import make_node, make_pod


@pytest.mark.parametrize("model,kind", [
    ("A100-80GB", NVSWITCH), ("H100-80GB", NVSWITCH), ("H200-141GB", NVSWITCH), ("B200", NVSWITCH),
    ("V100-16GB", NVLINK_MESH), ("A30", NVLINK_BRIDGE), ("H100-NVL", NVLINK_BRIDGE), ("H100-PCIE", NVLINK_BRIDGE),
    ("T4", NONE), ("L4", NONE), ("L40S", NONE), ("A10", NONE), ("G2", NONE), ("V100M16", NONE),
], ids=lambda v: str(v))
def test_interconnect_per_model(model, kind):
    assert model in CATALOG
    assert interconnect_of(model).kind == kind


@pytest.mark.parametrize("model,gpus,free,count,expected", [
    ("H100-80GB", 8, [1, 3, 6], 2, [1, 3]),               # NVSwitch: one domain, lowest free
    ("V100-16GB", 8, [0, 1, 4, 5, 6], 2, [0, 1]),         # tightest quad: {0-3} has 2 free, {4-7} 3
    ("V100-16GB", 8, [0, 1, 4, 5, 6], 3, [4, 5, 6]),      # only {4-7} holds 3
    ("V100-16GB", 8, [3, 4], 2, [3, 4]),                  # no quad has 2 free: lowest indices, spanning
    ("A30", 4, [1, 2, 3], 2, [2, 3]),                     # bridged pair 2-3 rather than 1-2 across pairs
    ("H100-NVL", 4, [0, 1, 2, 3], 2, [0, 1]),             # ties: lowest pair
    ("T4", 4, [2, 3, 0], 2, [0, 2]),                      # no NVLink: lowest free indices
    ("A30", 4, [1, 2, 3], 1, [1]),                        # one GPU: lowest free
], ids=["nvswitch-lowest", "mesh-tightest-quad", "mesh-only-room", "mesh-spanning", "bridge-pair",
        "bridge-tie-lowest", "pcie-only", "single-gpu"])
def test_pick_whole_gpus(model, gpus, free, count, expected):
    assert pick_whole_gpus(interconnect_of(model), gpus, free, count) == expected


@pytest.mark.parametrize("spec,held,count,expected", [
    ("4xA30", ["a", "b"], 2, (2, 3)),            # GPU 0 and 1 taken by two 1-GPU pods; 2-3 is a pair
    ("4xA30", ["a"], 2, (2, 3)),                 # GPU 0 taken: pair 2-3 is free, 1-2 would span pairs
    ("8xV100-16GB", ["a", "b", "c"], 4, (4, 5, 6, 7)),
], ids=["pair-after-pair", "pair-not-1-2", "quad"])
def test_node_allocates_inside_one_domain(spec, held, count, expected):
    node = make_node(spec)
    for uid in held:
        got = node.allocate(make_pod(uid, gpus=1))
        assert got is not None
        node.hold(uid, got)
    assignment = node.allocate(make_pod("big", gpus=count))
    assert assignment is not None and assignment.gpu_indices == expected


@pytest.mark.parametrize("model,gpus,indices,expected", [
    ("A30", 4, [2, 3], "GPUs 2,3 share one NVLink domain (GPUs 2-3; NVLink bridges, GPUs in bridged pairs)"),
    ("V100-16GB", 8, [3, 4], "GPUs 3,4 span 2 NVLink domains (NVLink hybrid cube-mesh, GPUs fully connected "
                             "in quads): no single domain had 2 free GPUs when the pod was placed"),
    ("T4", 4, [0, 1], ""),
    ("H100-80GB", 8, [5], ""),
], ids=["shared", "spanning", "no-nvlink", "one-gpu"])
def test_placement_note(model, gpus, indices, expected):
    assert placement_note(interconnect_of(model), gpus, indices) == expected
