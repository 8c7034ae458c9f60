"""The kinds stored for stock components, over HTTP: what a v1.35 kube-scheduler's informers
(``pkg/scheduler/scheduler.go`` and ``framework/plugins``: CSINode, CSIDriver,
CSIStorageCapacity, VolumeAttachment, ReplicationController, StatefulSet and, DRA being locked on,
DeviceClass, ResourceClaim, ResourceSlice), controller-runtime and kubectl discovery ask for.

Each kind: discovery lists it in its group version (``APIResourceList``), and create, get, list,
watch from the create's resourceVersion, merge PATCH, PUT and DELETE work on it; a body of the
wrong JSON type is refused as kube-apiserver's strict decoder words it (the schemas are the
v1.35 OpenAPI definitions, ``scripts/gen_openapi_schemas.py``) and nothing is stored.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import wait_until
from tests.server.conftest import start_serve, stops_cleanly

TEMPLATE = {"metadata": {"labels": {"app": "x"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
CLAIM_SPEC = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}

# (id, collection path, plural in discovery, body without apiVersion/kind, merge patch)
KINDS = [
    ("csinode", "/apis/storage.k8s.io/v1", "csinodes", "CSINode",
     {"metadata": {"name": "gpu-node-1"},
      "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-1"}]}}),
    ("csidriver", "/apis/storage.k8s.io/v1", "csidrivers", "CSIDriver",
     {"metadata": {"name": "ebs.csi.aws.com"},
      "spec": {"attachRequired": True, "volumeLifecycleModes": ["Persistent"]}}),
    ("csistoragecapacity", "/apis/storage.k8s.io/v1/namespaces/default", "csistoragecapacities",
     "CSIStorageCapacity", {"metadata": {"name": "cap-1"}, "storageClassName": "standard",
                            "capacity": "100Gi"}),
    ("volumeattachment", "/apis/storage.k8s.io/v1", "volumeattachments", "VolumeAttachment",
     {"metadata": {"name": "va-1"}, "spec": {"attacher": "ebs.csi.aws.com", "nodeName": "gpu-node-1",
                                            "source": {"persistentVolumeName": "pv-1"}}}),
    ("replicationcontroller", "/api/v1/namespaces/default", "replicationcontrollers",
     "ReplicationController",
     {"metadata": {"name": "rc-1"}, "spec": {"replicas": 0, "selector": {"app": "x"},
                                            "template": TEMPLATE}}),
    ("statefulset", "/apis/apps/v1/namespaces/default", "statefulsets", "StatefulSet",
     {"metadata": {"name": "db"}, "spec": {"replicas": 0, "serviceName": "db",
                                          "selector": {"matchLabels": {"app": "x"}},
                                          "template": TEMPLATE}}),
    ("deviceclass", "/apis/resource.k8s.io/v1", "deviceclasses", "DeviceClass",
     {"metadata": {"name": "gpu.nvidia.com"},
      "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}}),
    ("resourceslice", "/apis/resource.k8s.io/v1", "resourceslices", "ResourceSlice",
     {"metadata": {"name": "gpu-node-1-gpu"},
      "spec": {"driver": "gpu.nvidia.com", "nodeName": "gpu-node-1",
               "pool": {"name": "gpu-node-1", "generation": 1, "resourceSliceCount": 1},
               "devices": [{"name": "gpu-0"}]}}),
    ("resourceclaim", "/apis/resource.k8s.io/v1/namespaces/default", "resourceclaims",
     "ResourceClaim", {"metadata": {"name": "one-gpu"}, "spec": CLAIM_SPEC}),
    ("resourceclaimtemplate", "/apis/resource.k8s.io/v1/namespaces/default",
     "resourceclaimtemplates", "ResourceClaimTemplate",
     {"metadata": {"name": "one-gpu"}, "spec": {"spec": CLAIM_SPEC}}),
    ("customresourcedefinition", "/apis/apiextensions.k8s.io/v1", "customresourcedefinitions",
     "CustomResourceDefinition",
     {"metadata": {"name": "widgets.example.com"},
      "spec": {"group": "example.com", "scope": "Namespaced",
               "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
               "versions": [{"name": "v1", "served": True, "storage": True,
                             "schema": {"openAPIV3Schema": {"type": "object"}}}]}}),
]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    served = start_serve(tmp_path_factory.mktemp("stock"), "--virtual-clock")
    yield served
    stops_cleanly(served.process)


def group_version(base: str) -> str:
    parts = base.strip("/").split("/")
    return "v1" if parts[0] == "api" else f"{parts[1]}/{parts[2]}"


def watch_lines(served, path: str) -> list[dict]:
    """A watch from ``path`` (with resourceVersion) that ends after one second."""
    status, text = served.request("GET", path + "&timeoutSeconds=1")
    assert status == 200, text
    lines = text if isinstance(text, str) else json.dumps(text)
    return [json.loads(line) for line in lines.splitlines() if line.strip()]


@pytest.mark.parametrize("case", KINDS, ids=[case[0] for case in KINDS])
def test_stored_kind_round_trip(served, case):
    """kube-apiserver's generic registry (``staging/src/k8s.io/apiserver/pkg/registry/generic/
    registry/store.go``) serves every verb; gpusched stores the object as sent."""
    _, base, plural, kind, body = case
    gv = group_version(base)
    listed = served.json("/api/v1" if gv == "v1" else f"/apis/{gv}")
    assert plural in {r["name"] for r in listed["resources"]}
    collection = f"{base}/{plural}"
    before = served.json(collection)
    assert before["kind"] == f"{kind}List"
    created = served.json(collection, {"apiVersion": gv, "kind": kind, **body})
    name = created["metadata"]["name"]
    assert created["metadata"]["uid"] and created["metadata"]["resourceVersion"]
    assert served.json(f"{collection}/{name}")["metadata"]["uid"] == created["metadata"]["uid"]
    assert name in {item["metadata"]["name"] for item in served.json(collection)["items"]}
    status, patched = served.request("PATCH", f"{collection}/{name}",
                                     {"metadata": {"labels": {"team": "a"}}},
                                     {"Content-Type": "application/merge-patch+json"})
    assert status == 200 and patched["metadata"]["labels"] == {"team": "a"}, patched
    status, put = served.request("PUT", f"{collection}/{name}", {**patched, "metadata": {
        **patched["metadata"], "labels": {"team": "b"}}})
    assert status == 200 and put["metadata"]["labels"] == {"team": "b"}, put
    since = f"{collection}?watch=true&resourceVersion={created['metadata']['resourceVersion']}"
    want = [("MODIFIED", {"team": "a"}), ("MODIFIED", {"team": "b"})]

    def labelled() -> list[tuple[str, dict]]:
        # (a StatefulSet's controller also writes its status: those events carry no labels)
        return [(e["type"], e["object"]["metadata"]["labels"]) for e in watch_lines(served, since)
                if "labels" in e["object"]["metadata"]]
    # each watch replays from the same resourceVersion and ends after a second: a loaded
    # machine may stream part of it within that second, so watch again until both are there
    wait_until(lambda: labelled() == want, f"both label changes replayed from {since}", labelled)
    status, _ = served.request("DELETE", f"{collection}/{name}")
    assert status == 200
    assert served.request("GET", f"{collection}/{name}")[0] == 404


# (id, path, body with a field of the wrong JSON type, upstream's decoder message)
WRONG_TYPES = [
    ("csinode-drivers", "/apis/storage.k8s.io/v1/csinodes",
     {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "bad"},
      "spec": {"drivers": "ebs"}}, "spec.drivers"),
    ("resourceclaim-requests", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
     {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "bad"},
      "spec": {"devices": {"requests": {"name": "gpu"}}}}, "spec.devices.requests"),
]


@pytest.mark.parametrize("path,body,field", [c[1:] for c in WRONG_TYPES], ids=[c[0] for c in WRONG_TYPES])
def test_wrong_json_type_is_refused_and_nothing_stored(served, path, body, field):
    """kube-apiserver's strict JSON decoding (``k8s.io/apimachinery/pkg/runtime/serializer/json``):
    a field of the wrong type is 400 ``json: cannot unmarshal ... into Go struct field``."""
    status, reply = served.request("POST", path, body)
    assert status == 400 and "cannot unmarshal" in reply["message"] and field in reply["message"], reply
    assert served.request("GET", f"{path}/bad")[0] == 404
