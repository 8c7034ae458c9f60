"""Pods pinned by ``spec.nodeName`` through the real CLI (issue 25, finding 3): a pinned share
must not break ``describe node``, a later create or ``advance``, and neither may a stored
annotation the cluster cannot read (a hand-edited state file)."""

from __future__ import annotations

import pytest
import yaml

from gpusched.cluster.cluster import Cluster

from .runner import Gpusched

NODES = yaml.safe_dump({"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool",
                        "metadata": {"name": "gpu-node"},
                        "spec": {"count": 3, "cpu": "64", "memory": "256Gi",
                                 "gpu": {"model": "A100-40GB", "count": 2}}})


def pod(name: str, limits: dict, node: str = "") -> str:
    spec: dict = {"containers": [{"name": "c", "image": "x", "resources": {"limits": limits}}]}
    if node:
        spec["nodeName"] = node
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                           "spec": spec})


def later_work_succeeds(g: Gpusched) -> None:
    """describe node, a later create and a clock tick: each exits 0."""
    assert "gpusched.io/gpu-milli" in g.ok("describe", "node", "gpu-node-3").out
    g.ok("apply", "-f", "-", stdin=pod("later", {"nvidia.com/gpu": 1}))
    g.ok("advance", "10m")
    g.ok("top", "nodes")
    assert g.pods()["later"]["status"]["phase"] == "Running"


def test_pinned_share_leaves_the_cluster_working(tmp_path):
    g = Gpusched(tmp_path)
    g.ok("apply", "-f", "-", stdin=NODES)
    g.ok("apply", "-f", "-", stdin=pod("frac", {"gpusched.io/gpu-milli": 500}, "gpu-node-3"))
    g.ok("apply", "-f", "-", stdin=pod("whole", {"nvidia.com/gpu": 1}, "gpu-node-3"))
    pods = g.pods()
    gpus = [pods[n]["metadata"]["annotations"]["gpusched.io/assigned-gpus"] for n in ("frac", "whole")]
    assert sorted(gpus) == ["0", "1"]          # the whole GPU is not the one cut into a share
    later_work_succeeds(g)


@pytest.mark.parametrize("annotations", [
    {"gpusched.io/gpu-milli": ""},
    {"gpusched.io/assigned-gpus": "x"},
    {"gpusched.io/start-time": "x"},
    {"gpusched.io/restart-at": ""},
], ids=["gpu-milli-empty", "assigned-gpus", "start-time", "restart-at"])
def test_unreadable_stored_annotation_fails_nothing_else(tmp_path, annotations):
    g = Gpusched(tmp_path)
    g.ok("apply", "-f", "-", stdin=NODES)
    g.ok("apply", "-f", "-", stdin=pod("frac", {"gpusched.io/gpu-milli": 500}, "gpu-node-3"))
    with Cluster.open(g.state) as cluster, cluster.writing(settle=False) as view:
        body = view.copy("Pod", "frac", "default")
        body["metadata"]["annotations"].update(annotations)
        view.update(body)
    later_work_succeeds(g)
