"""Fractional-GPU shares (``gpusched.io/gpu-milli``) in ``/metrics``: a GPU holding two 460m
shares is allocated (``gpusched_gpu_allocated_ratio`` 0.92, one ``nvidia.com/gpu`` allocated on
the node, as ``describe node`` counts it), never free; both pods are on that GPU's DCGM lines.

Counting convention: the scheduler gives a share pod a slice of one GPU, not the whole
``nvidia.com/gpu: 1`` its container asks for (``devices.node``), so the per-node allocation counts
the share in ``gpusched.io/gpu-milli`` and the cut GPU once in ``nvidia.com/gpu``
(tests/cli/test_shares_visible.py checks ``top nodes`` and ``describe node`` on the same pods).
"""

from __future__ import annotations

import pytest

from gpusched.cluster.cluster import Cluster
from gpusched.metrics.exposition import render_cluster
from tests.metrics.conftest import NODES, apply
from tests.metrics.test_exposition import samples


def share(name: str, milli: int, node: str = "gpu-node-1") -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, annotations: "
            f"{{gpusched.io/gpu-milli: \"{milli}\"}}}}\nspec:\n"
            f"  nodeSelector: {{kubernetes.io/hostname: {node}}}\n"
            f"  containers:\n  - {{name: main, image: x, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}\n")


def share_resource(name: str, milli: int, node: str = "gpu-node-1") -> str:
    """A share asked for as the extended resource instead of the annotation (``objects.pod``)."""
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n"
            f"  nodeSelector: {{kubernetes.io/hostname: {node}}}\n"
            f"  containers:\n  - {{name: main, image: x, resources: {{limits: {{gpusched.io/gpu-milli: {milli}}}}}}}\n")


def whole(name: str, gpus: int, node: str = "gpu-node-1") -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n"
            f"  nodeSelector: {{kubernetes.io/hostname: {node}}}\n"
            f"  containers:\n  - {{name: main, image: x, resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}}}\n")


def scrape(cluster) -> dict[str, list]:
    return samples(render_cluster(cluster)[1])


# (id, pods on gpu-node-1 (2 x A100-40GB), per-GPU allocated ratio, node nvidia.com/gpu, gpu-milli)
CASES = [
    ("two-460m-shares-fill-one-gpu", (share("s1", 460), share("s2", 460)), [0.92, 0.0], 1, 0.92),
    ("one-share-and-a-whole-gpu", (share("s1", 300), whole("w", 1)), [0.3, 1.0], 2, 0.3),
    ("two-460m-shares-by-extended-resource", (share_resource("s1", 460), share_resource("s2", 460)),
     [0.92, 0.0], 1, 0.92),
    ("whole-gpus-only", (whole("w", 2),), [1.0, 1.0], 2, None),
    ("nothing-running", (), [0.0, 0.0], None, None),
]


@pytest.mark.parametrize("pods,ratios,gpus,milli", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_shares_count_in_the_allocation_metrics(cluster, pods, ratios, gpus, milli):
    apply(cluster, NODES, *pods)
    got = scrape(cluster)
    per_gpu = {int(s.labels["gpu"]): s.value for s in got["gpusched_gpu_allocated_ratio"]
               if s.labels["node"] == "gpu-node-1"}
    assert [per_gpu[i] for i in sorted(per_gpu)] == pytest.approx(ratios)
    allocated = {s.labels["resource"]: s.value for s in got["gpusched_gpus_allocated"]
                 if s.labels["node"] == "gpu-node-1"}
    assert allocated.get("nvidia.com/gpu") == gpus
    assert allocated.get("gpusched.io/gpu-milli") == (pytest.approx(milli) if milli else None)


def test_a_gpu_with_two_shares_names_both_pods_and_is_never_free(cluster):
    apply(cluster, NODES, share("s1", 460), share("s2", 460))
    got = scrape(cluster)
    ratio = {(s.labels["gpu"], s.labels["UUID"]): s.value for s in got["gpusched_gpu_allocated_ratio"]
             if s.labels["node"] == "gpu-node-1"}
    lines = [s for s in got["DCGM_FI_DEV_GPU_UTIL"] if s.labels["Hostname"] == "gpu-node-1"]
    held_uuid = {s.labels["UUID"] for s in lines if s.labels.get("pod") in ("s1", "s2")}
    assert len(held_uuid) == 1                                    # both shares on one GPU
    assert {s.labels.get("pod") for s in lines if s.labels["UUID"] in held_uuid} == {"s1", "s2"}
    assert ratio[("0", held_uuid.pop())] == pytest.approx(0.92)   # not 0: never shown free
    demand = {(s.labels["namespace"], s.labels["resource"]): s.value
              for s in got["gpusched_gpus_allocated_by_namespace"]}
    assert demand == {("default", "gpusched.io/gpu-milli"): pytest.approx(0.92)}


def test_a_pending_share_asks_for_its_share(cluster):
    apply(cluster, NODES, whole("w", 2), share("late", 250))
    demand = {(s.labels["namespace"], s.labels["resource"]): s.value
              for s in scrape(cluster)["gpusched_pending_gpu_requests"]}
    assert demand == {("default", "gpusched.io/gpu-milli"): pytest.approx(0.25)}


def pod_lines(tmp_path, name: str, manifest: str) -> dict[str, float]:
    """The DCGM lines of pod ``s1`` in a fresh cluster holding only ``manifest``."""
    with Cluster.open(str(tmp_path / f"{name}.db")) as fresh:
        apply(fresh, NODES, manifest)
        got = scrape(fresh)
    return {metric: s.value for metric in ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED")
            for s in got[metric] if s.labels.get("pod") == "s1"}


def test_a_share_asked_for_as_a_resource_shows_as_the_same_share(tmp_path):
    """The GPU lines of a share pod are its share of the GPU however it asked for the share
    (``objects.assignment.assignment_of`` reads the share as the kubelet does), not a whole GPU."""
    by_annotation = pod_lines(tmp_path, "annotation", share("s1", 460))
    by_resource = pod_lines(tmp_path, "resource", share_resource("s1", 460))
    assert by_annotation and by_resource == by_annotation
