"""Kubelet admission of pods pinned by ``spec.nodeName`` (issue 25, findings 3 and 4): fractional
shares through the scheduler's allocator, GPU resources a node does not advertise, and stored
objects that must not poison a later read, create or clock tick. Each case cites its upstream
source; ``cluster.kubelet.invariants.violations`` must be empty after every case."""

from __future__ import annotations

import pytest
import yaml

from gpusched.cluster.kubelet.invariants import violations
from gpusched.cluster.scheduling.cache import node_devices

from .builders import apply, join, pool
from .test_kubelet import status_of

UNAVAILABLE = ("Pod was rejected: Allocate failed due to requested number of devices "
               "unavailable for {res}. Requested: {req}, Available: {avail}, which is unexpected")


def pinned(name: str, limits: dict, node: str = "gpu-1") -> str:
    """A pod bound by the user through spec.nodeName, with these container limits."""
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
        "nodeName": node, "containers": [{"name": "c", "image": "x",
                                          "resources": {"limits": limits}}]}})


def milli(name: str, share: int, node: str = "gpu-1") -> str:
    return pinned(name, {"gpusched.io/gpu-milli": share}, node)


def phases(cluster, names) -> list[str]:
    return [status_of(cluster, n)[0] for n in names]


# (id, nodes, pods, pod checked, its (phase, reason, message))
CASES = [
    # finding 3: a pinned share is a share of one GPU with room (devices.node best fit), the
    # second pinned share of the same size fits beside it
    ("pinned-share-runs", pool(count=1, gpus=1, model="T4"),
     [milli("a", 500), milli("b", 500)], "b", ("Running", "", "")),
    # finding 3: a whole GPU is not given to a second pod while a share is held on it:
    # devicemanager/manager.go devicesToAllocate "requested number of devices unavailable"
    ("whole-gpu-after-share", pool(count=1, gpus=1, model="T4"),
     [milli("a", 500), pinned("b", {"nvidia.com/gpu": 1})], "b",
     ("Failed", "UnexpectedAdmissionError",
      UNAVAILABLE.format(res="nvidia.com/gpu", req=1, avail=0))),
    # finding 3: five 700-milli pods pinned to a 2-GPU node: two run, one per GPU; the third
    # finds 300 free at most (gpusched's share message, kubelet.py)
    ("shares-beyond-capacity", pool(count=1, gpus=2, model="T4"),
     [milli(f"p{i}", 700) for i in range(5)], "p2",
     ("Failed", "UnexpectedAdmissionError",
      UNAVAILABLE.format(res="gpusched.io/gpu-milli", req=700, avail=300))),
    # a share is never cut from a GPU a pinned pod holds whole
    ("share-after-whole-gpu", pool(count=1, gpus=1, model="T4"),
     [pinned("a", {"nvidia.com/gpu": 1}), milli("b", 300)], "b",
     ("Failed", "UnexpectedAdmissionError",
      UNAVAILABLE.format(res="gpusched.io/gpu-milli", req=300, avail=0))),
    # finding 4: GPUs pinned to a CPU node: predicate.go InsufficientResourceError, capacity 0
    ("gpus-on-cpu-node", pool(count=1, gpus=0),
     [pinned("a", {"nvidia.com/gpu": 4})], "a",
     ("Failed", "OutOfnvidia.com/gpu", "Pod was rejected: Node didn't have enough resource: "
      "nvidia.com/gpu, requested: 4, used: 0, capacity: 0")),
    # finding 4: a MIG device on a node without MIG
    ("mig-on-non-mig-node", pool(count=1, gpus=1, model="A100-40GB"),
     [pinned("a", {"nvidia.com/mig-1g.5gb": 1})], "a",
     ("Failed", "OutOfnvidia.com/mig-1g.5gb", "Pod was rejected: Node didn't have enough "
      "resource: nvidia.com/mig-1g.5gb, requested: 1, used: 0, capacity: 0")),
    # finding 4: a share pinned to a node without GPUs
    ("share-on-cpu-node", pool(count=1, gpus=0),
     [milli("a", 500)], "a",
     ("Failed", "UnexpectedAdmissionError",
      UNAVAILABLE.format(res="gpusched.io/gpu-milli", req=500, avail=0))),
]


@pytest.mark.parametrize("nodes,pods,name,want", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_pinned_admission(cluster, nodes, pods, name, want):
    apply(cluster, nodes)
    for text in pods:
        apply(cluster, text)
    assert status_of(cluster, name) == want
    assert violations(cluster.view()) == []


def test_five_shares_run_one_per_gpu(cluster):
    """Finding 3's five 700-milli pods: never 3,500 milli on one GPU."""
    apply(cluster, pool(count=1, gpus=2, model="T4"))
    apply(cluster, join(*(milli(f"p{i}", 700) for i in range(5))))
    assert phases(cluster, [f"p{i}" for i in range(5)]) == ["Running"] * 2 + ["Failed"] * 3
    rows = [r for r in node_devices(cluster.view(), "gpu-1").rows() if r.holder]
    assert sorted((r.gpu_index, r.milli) for r in rows) == [(0, 700), (1, 700)]


@pytest.mark.parametrize("first", [
    milli("a", 500),
    yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}, "spec": {
        "containers": [{"name": "c", "image": "x",
                        "resources": {"limits": {"gpusched.io/gpu-milli": 500}}}]}}),
], ids=["pinned", "scheduled"])
def test_share_as_resource_does_not_poison_later_work(cluster, first):
    """Finding 3: after a share asked for as the extended resource (no annotation), describe's
    device view, a later create (scheduling pass) and a clock tick still work."""
    apply(cluster, pool(count=1, gpus=1, model="T4"))
    apply(cluster, first)
    rows = [(r.resource, r.holder != "", r.milli) for r in node_devices(cluster.view(), "gpu-1").rows()]
    assert ("gpusched.io/gpu-milli", True, 500) in rows
    apply(cluster, yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b"},
                                   "spec": {"containers": [{"name": "c", "image": "x", "resources": {
                                       "limits": {"gpusched.io/gpu-milli": 400}}}]}}))
    cluster.advance(600)
    assert phases(cluster, ["a", "b"]) == ["Running", "Running"]
    assert violations(cluster.view()) == []


def _poison(cluster, name: str, annotations: dict) -> None:
    """Write ``annotations`` onto a stored pod past admission, as a hand-edited state file."""
    with cluster.writing(settle=False) as view:
        body = view.copy("Pod", name, "default")
        body["metadata"].setdefault("annotations", {}).update(annotations)
        view.update(body)


@pytest.mark.parametrize("annotations", [
    {"gpusched.io/assigned-gpus": "x"},
    {"gpusched.io/gpu-milli": ""},
    {"gpusched.io/gpu-milli": "5000"},
], ids=["assigned-gpus-malformed", "gpu-milli-empty", "gpu-milli-out-of-range"])
def test_malformed_stored_annotation_affects_only_its_pod(cluster, annotations):
    """No stored object can make a later read, create or clock tick fail (issue 25)."""
    apply(cluster, pool(count=1, gpus=2, model="T4"))
    apply(cluster, milli("a", 500))
    _poison(cluster, "a", annotations)
    assert node_devices(cluster.view(), "gpu-1") is not None      # describe node's device view
    apply(cluster, pinned("b", {"nvidia.com/gpu": 1}))
    apply(cluster, yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "c"},
                                   "spec": {"containers": [{"name": "c", "image": "x"}]}}))
    cluster.advance(600)
    assert phases(cluster, ["b", "c"]) == ["Running", "Running"]
