"""The web page on DRA-managed nodes (``server.web.index_dra``): a whole GPU a claim holds shows
its pod; a GPU carved by DynamicMIG is drawn as its carved instances with their holders and the
free compute slices left, and its usage counts the carved slices."""

from __future__ import annotations

import pytest
import yaml

from gpusched.cluster.cluster import Cluster
from gpusched.server.web.index import WebIndex
from tests.cluster.builders import apply
from tests.cluster.kubelet.test_dra_prepare import NODES, allocate, claim, pod


@pytest.fixture
def dra(tmp_path):
    with Cluster.open(str(tmp_path / "cluster.db")) as cluster:
        apply(cluster, NODES)
        yield cluster


def node_entry(cluster, name: str):
    index = cluster.read(lambda view: WebIndex().index(view))
    return next(n for n in index.nodes if n.name == name)


def test_a_whole_gpu_held_through_a_claim_shows_its_pod(dra):
    apply(dra, yaml.safe_dump_all([claim("c", ["gpu"]), pod("p", "a100-1", {"c": [{"name": "c"}]},
                                                            ["c"])]))
    allocate(dra, "c", "a100-1", [("gpu", "gpu-1")], ["p"])
    entry = node_entry(dra, "a100-1")
    assert [(c["gpu"], c.get("pod")) for c in entry.cells] == [(0, None), (1, "default/p")]
    assert entry.usage == (0.0, 1.0)


def test_a_carved_gpu_shows_its_instances_and_the_free_slices(dra):
    apply(dra, yaml.safe_dump_all([claim("c", ["mig"]), pod("p", "h100-1", {"c": [{"name": "c"}]},
                                                            ["c"])]))
    assert [c["profile"] for c in node_entry(dra, "h100-1").cells] == [""]
    allocate(dra, "c", "h100-1", [("mig", "gpu-0-mig-3g40gb-9-4")], ["p"])
    entry = node_entry(dra, "h100-1")
    assert [(c["profile"], c.get("pod")) for c in entry.cells] == [("3g.40gb", "default/p"),
                                                                    ("4g.free", None)]
    assert entry.usage == (pytest.approx(3 / 7),)
