"""A node's advertised devices are derived once per (node, device inputs) in a command: the
device plugin's pass, the scheduler's snapshot and the kubelet's admission share one derivation
(``cluster.kubelet.device_inputs``), and a change to an input derives them again."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from gpusched.cluster.cluster import Cluster
from gpusched.cluster.kubelet import device_inputs, device_plugin

from ..builders import apply, pool, pod

MIG_POOL = pool("mig", count=2, model="A100-40GB", gpus=2)


def _count_derivations(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Node name -> how many times ``devices.advertise.node_device_state`` ran for it."""
    calls: Counter[str] = Counter()
    for module in (device_inputs, device_plugin):
        original = module.node_device_state

        def counted(node: dict[str, Any], *args: Any, _original: Any = original,
                    **kwargs: Any) -> Any:
            calls[node["metadata"]["name"]] += 1
            return _original(node, *args, **kwargs)

        monkeypatch.setattr(module, "node_device_state", counted)
    return calls


@pytest.mark.parametrize("pods", [1, 6], ids=["one-pod", "six-pods"])
def test_one_derivation_per_node_per_command(tmp_path, monkeypatch, pods):
    path = str(tmp_path / "cluster.db")
    with Cluster.open(path) as cluster:
        apply(cluster, pool("gpu", count=3, gpus=8))
    calls = _count_derivations(monkeypatch)
    with Cluster.open(path) as cluster:         # a new command: nothing remembered yet
        apply(cluster, "---\n".join(pod(f"p{i}", gpus=1) for i in range(pods)))
        bound = [p["spec"].get("nodeName") for p in cluster.view().list("Pod")]
    assert all(bound) and len(bound) == pods
    assert sorted(calls.items()) == [("gpu-1", 1), ("gpu-2", 1), ("gpu-3", 1)]


def test_a_configmap_change_derives_devices_again(cluster):
    apply(cluster, pool("gpu", count=1, gpus=2))
    apply(cluster, pod("before", gpus=1))
    apply(cluster, """
apiVersion: v1
kind: ConfigMap
metadata: {name: nvidia-device-plugin-config, namespace: kube-system}
data:
  default: |
    version: v1
    sharing:
      timeSlicing:
        resources: [{name: nvidia.com/gpu, replicas: 4}]
""")
    node = cluster.view().get("Node", "gpu-1")
    assert node is not None
    assert node["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    apply(cluster, "---\n".join(pod(f"shared{i}", gpus=1) for i in range(7)))
    assert all(p["spec"].get("nodeName") == "gpu-1" for p in cluster.view().list("Pod"))
