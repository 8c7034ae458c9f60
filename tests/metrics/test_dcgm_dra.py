"""DCGM attribution of DRA-held GPUs (``metrics.cluster_source_dra``): a whole GPU names its pod
on the GPU's line; a DynamicMIG device carved for a claim is a MIG instance line of its GPU
(``GPU_I_PROFILE``), the GPU's line then without ``DCGM_FI_DEV_GPU_UTIL``, as dcgm-exporter
reports a MIG-enabled GPU."""

from __future__ import annotations

import pytest
import yaml

from gpusched.metrics.cluster_source import ClusterSource
from tests.cluster.builders import apply
from tests.cluster.kubelet.test_dra_prepare import NODES, allocate, claim, pod


@pytest.fixture
def dra(cluster):
    apply(cluster, NODES)
    return cluster


def samples(cluster, node: str) -> list:
    return cluster.read(lambda v: [s for s in ClusterSource(v).samples() if s.hostname == node])


@pytest.mark.parametrize("node,device,profile", [
    ("a100-1", "gpu-1", ""),
    ("h100-1", "gpu-0-mig-3g40gb-9-4", "3g.40gb"),
], ids=["whole-gpu", "dynamic-mig"])
def test_a_dra_device_is_attributed_to_its_pod(dra, node, device, profile):
    apply(dra, yaml.safe_dump_all([claim("c", ["gpu"]), pod("p", node, {"c": [{"name": "c"}]},
                                                            ["c"])]))
    before = samples(dra, node)
    assert all(not s.pods for s in before) and all(not s.gpu_instance_profile for s in before)
    allocate(dra, "c", node, [("gpu", device)], ["p"])
    dra.advance(10)
    named = [s for s in samples(dra, node) if s.pods]
    assert [(p.namespace, p.pod) for s in named for p in s.pods] == [("default", "p")]
    assert named[0].gpu_instance_profile == profile
    gpu = int(device.split("-")[1])
    if profile:
        parent = [s for s in samples(dra, node) if s.gpu == gpu and not s.gpu_instance_profile]
        assert "DCGM_FI_DEV_GPU_UTIL" not in parent[0].values
    else:
        assert named[0].gpu == gpu and "DCGM_FI_DEV_GPU_UTIL" in named[0].values
