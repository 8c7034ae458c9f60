"""POST pods/<name>/binding (``apiserver.api_ops.bind``) through the serve worker's write path:
what it refuses, in which order, and what a binding writes. Upstream: the pods/binding
subresource (pkg/registry/core/pod/storage/storage.go BindingREST.Create, assignPod:
``pod <name> is already assigned to node "<node>"`` as a 409 Conflict)."""

from __future__ import annotations

from typing import Any

import pytest

from gpusched.cluster.apiserver import api_ops
from gpusched.errors import GpuschedError
from gpusched.objects.kinds import KINDS
from gpusched.server.worker import ClusterWorker

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                   "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}


def make_pod(name: str, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def binding(node: str = "n1", **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Binding", "metadata": meta, "target": {"name": node}}


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    worker = ClusterWorker(str(tmp_path_factory.mktemp("bind") / "cluster.db"), virtual_clock=True).start()
    try:
        worker.write(lambda view: api_ops.create(view, KINDS["Node"], "default", NODE), True)
        for body in (make_pod("waiting"), make_pod("fresh"), make_pod("placed", node="n1")):
            worker.write(lambda view, body=body: api_ops.create(view, KINDS["Pod"], "default", body), False)
        yield worker
    finally:
        worker.stop()


REFUSED = [
    ("not-an-object", "waiting", "not a binding", 400, "a Binding needs target.name"),
    ("no-target", "waiting", {"kind": "Binding"}, 400, "a Binding needs target.name"),
    ("pod-missing", "nope", binding(), 404, 'pods "nope" not found'),
    ("already-assigned", "placed", binding(), 409,
     'Operation cannot be fulfilled on pods/binding "placed": pod placed is already assigned to '
     'node "n1"'),
    # the pod is looked at before the node
    ("already-assigned-before-missing-node", "placed", binding("n9"), 409,
     'Operation cannot be fulfilled on pods/binding "placed": pod placed is already assigned to '
     'node "n1"'),
    ("node-missing", "waiting", binding("n9"), 404, 'nodes "n9" not found'),
]


@pytest.mark.parametrize("name,body,code,message", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_bind_refusals(worker, name, body, code, message):
    with pytest.raises(GpuschedError) as err:
        worker.write(lambda view: api_ops.bind(view, "default", name, body), False)
    assert (err.value.code, str(err.value)) == (code, message)


def test_bind_assigns_the_pod_with_the_bindings_annotations(worker):
    worker.write(lambda view: api_ops.bind(view, "default", "fresh", binding(
        annotations={"example.com/by": "test", "n": 1})), False)
    pod = worker.read(lambda view: view.get("Pod", "fresh", "default"))
    assert pod["spec"]["nodeName"] == "n1"
    assert {"example.com/by": "test", "n": "1"}.items() <= pod["metadata"]["annotations"].items()
    assert pod["status"]["phase"] == "Pending" and "nominatedNodeName" not in pod["status"]
    assert {k: pod["status"]["conditions"][0][k] for k in ("type", "status")} == \
        {"type": "PodScheduled", "status": "True"}
