"""``cluster.kubelet.invariants.violations``: each rule caught on a forged state (records written
past the kubelet, as a bug or a hand-edited state file would), nothing on a clean one."""

from __future__ import annotations

import pytest
import yaml

from gpusched.cluster.kubelet.invariants import violations

from .builders import apply, join, pool


def pod(name: str, limits: dict, node: str = "") -> str:
    spec: dict = {"containers": [{"name": "c", "image": "x", "resources": {"limits": limits}}]}
    if node:
        spec["nodeName"] = node
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})


def forge(cluster, name: str, annotations: dict | None = None, copy_from: str = "",
          status: dict | None = None) -> None:
    """Rewrite a stored pod past admission and the kubelet (no settle)."""
    with cluster.writing(settle=False) as view:
        body = view.copy("Pod", name, "default")
        notes = body["metadata"].setdefault("annotations", {})
        if copy_from:
            source = view.get("Pod", copy_from, "default")["metadata"]["annotations"]
            for key in ("gpusched.io/assigned-gpus", "gpusched.io/assigned-devices"):
                notes[key] = source[key]
        notes.update(annotations or {})
        if status:
            body["status"].update(status)
        view.update(body)


def whole_twice(cluster):
    apply(cluster, join(pool(count=1, gpus=2, model="T4"), pod("a", {"nvidia.com/gpu": 1}),
                        pod("b", {"nvidia.com/gpu": 1})))
    forge(cluster, "b", copy_from="a")


def shares_over(cluster):
    apply(cluster, join(pool(count=1, gpus=2, model="T4"), pod("a", {"gpusched.io/gpu-milli": 700}),
                        pod("b", {"gpusched.io/gpu-milli": 700})))
    forge(cluster, "b", copy_from="a")


def device_gone(cluster):
    apply(cluster, join(pool(count=1, gpus=1, model="T4"), pod("a", {"nvidia.com/gpu": 1})))
    forge(cluster, "a", {"gpusched.io/assigned-devices": "MIG-gone"})


def gpus_on_cpu_node(cluster):
    apply(cluster, join(pool(count=1, gpus=0), pod("a", {"nvidia.com/gpu": 7}, "gpu-1")))
    forge(cluster, "a", status={"phase": "Running", "reason": "", "message": ""})


def clean(cluster):
    apply(cluster, join(pool(count=1, gpus=2, model="T4"), pod("a", {"nvidia.com/gpu": 1}),
                        pod("b", {"gpusched.io/gpu-milli": 500})))


@pytest.mark.parametrize("build,want", [
    (clean, []),
    (whole_twice, ["device {a} held by default/a and default/b", "GPU 0 holds 2000 milli > 1000"]),
    (shares_over, ["GPU 0 holds 1400 milli > 1000 (default/a, default/b)"]),
    (device_gone, ["default/a holds MIG-gone, which the node does not advertise"]),
    (gpus_on_cpu_node, ["nvidia.com/gpu requested 7 > allocatable None"]),
], ids=["clean", "whole-gpu-twice", "shares-over-1000", "device-gone", "gpus-on-cpu-node"])
def test_violations(cluster, build, want):
    build(cluster)
    view = cluster.view()
    held = (view.get("Pod", "a", "default")["metadata"].get("annotations") or {}).get(
        "gpusched.io/assigned-devices", "")
    found = [line.removeprefix("gpu-1: ") for line in violations(view)]
    found = [line.split(" (")[0] if line.startswith("GPU 0 holds 2000") else line for line in found]
    assert found == [w.format(a=held) for w in want]
