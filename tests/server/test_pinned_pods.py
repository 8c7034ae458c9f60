"""A pinned fractional pod through ``serve`` (issue 25, finding 3: every later create answered
400 ``invalid annotation gpusched.io/gpu-milli=""``)."""

from __future__ import annotations

NODES = {"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "gpu-node"},
         "spec": {"count": 3, "cpu": "64", "memory": "256Gi", "gpu": {"model": "A100-40GB", "count": 2}}}
PODS = "/api/v1/namespaces/default/pods"


def pinned(name: str, limits: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": "gpu-node-3",
                     "containers": [{"name": "c", "image": "x", "resources": {"limits": limits}}]}}


def test_pinned_share_then_later_creates(serve):
    serve.json("/apis/gpusched.io/v1alpha1/nodepools", NODES)
    serve.json(PODS, pinned("frac", {"gpusched.io/gpu-milli": 500}))
    for name in ("whole", "third"):
        serve.json(PODS, pinned(name, {"nvidia.com/gpu": 1}))
    serve.settled()          # the kubelet's admission runs in serve's controller process
    phases = {n: serve.pod(n)["status"] for n in ("frac", "whole", "third")}
    assert [phases[n]["phase"] for n in ("frac", "whole", "third")] == ["Running", "Running", "Failed"]
    assert phases["third"]["reason"] == "UnexpectedAdmissionError"
    status, node = serve.request("GET", "/api/v1/nodes/gpu-node-3")
    assert status == 200, node
