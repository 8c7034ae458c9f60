"""A node whose GPUs NVIDIA's DRA driver manages hands out no device-plugin devices: its GPUs are
ResourceSlice devices, allocated through ResourceClaims alone (KEP-5004: a node gets a GPU
resource from the device plugin or from slices, never both; ``dra-driver-nvidia-gpu`` replaces the
device plugin on such nodes). So a ``gpusched.io/gpu-milli`` share, which only the device plugin's
GPUs can serve, never lands there, and never on a GPU a claim holds."""

from __future__ import annotations

from tests.cluster.builders import apply

NODES = """
apiVersion: gpusched.io/v1alpha1
kind: NodePool
metadata: {name: dra}
spec:
  count: 1
  gpu: {model: T4, count: 1, management: dra}
"""


SHARE_POD = """
apiVersion: v1
kind: Pod
metadata:
  name: half
  annotations: {gpusched.io/gpu-milli: "500"}
spec:
  containers: [{name: c, image: img}]
"""


def test_a_gpu_share_does_not_land_on_a_dra_managed_node(cluster):
    apply(cluster, NODES)
    apply(cluster, SHARE_POD)
    pod = cluster.get("pod", ["half"])[0]
    assert not pod["spec"].get("nodeName"), pod["spec"].get("nodeName")
    assert pod["status"]["phase"] == "Pending"
