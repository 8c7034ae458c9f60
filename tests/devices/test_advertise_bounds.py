"""``devices.advertise``: a number on a Node that becomes devices is bounded where it is read
(issue 25, 'every size has a bound'). A Node manifest declaring 10^9 GPUs made the plugin model
build a device per GPU (CLI: MemoryError); now the node carries the plugin's error and advertises
nothing. The bound is the NodePool's (``limits.MAX_GPUS_PER_NODE`` = 64; no real node has more).
Counts of 100,000 keep a regression cheap for this process.
"""

from __future__ import annotations

import pytest

from gpusched.devices.advertise import node_device_state


def node(annotations: dict, capacity: dict | None = None) -> dict:
    return {"metadata": {"name": "big", "labels": {}, "annotations": annotations},
            "status": {"capacity": capacity or {}}}


@pytest.mark.parametrize("gpu_node,count", [
    (node({"gpusched.io/gpu-model": "A100-40GB", "gpusched.io/gpu-count": "100000"}), "100000"),
    (node({"gpusched.io/gpu-model": "A100-40GB"}, {"nvidia.com/gpu": "100000"}), "100000"),
    (node({"gpusched.io/gpu-model": "A100-40GB", "gpusched.io/gpu-count": "65"}), "65"),
], ids=["annotation", "capacity", "one-over"])
def test_a_gpu_count_over_the_bound_is_the_node_error(gpu_node, count):
    state = node_device_state(gpu_node, [])
    assert state.error == f'node big: invalid GPU count "{count}": at most 64 GPUs per node'
    assert state.devices.devices == () and state.capacity == {}


def test_sixty_four_gpus_are_advertised():
    state = node_device_state(node({"gpusched.io/gpu-model": "A100-40GB",
                                    "gpusched.io/gpu-count": "64"}), [])
    assert not state.error and state.capacity["nvidia.com/gpu"] == 64
