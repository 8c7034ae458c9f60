"""``gpusched serve`` refuses what kube-apiserver refuses, on create and on every update path
(PUT, JSON/merge/strategic patches, the ``status`` and ``scale`` subresources), with its status
code, reason and message, and changes nothing then (issue 25, finding 6).

Creates use ``tests/objects/test_validation_upstream.py``'s table (each case names its upstream
file). Updates follow apiserver's handlers: ``rest.BeforeUpdate`` ->
``ValidateObjectMetaAccessorUpdate`` (apimachinery objectmeta.go: ``metadata.uid`` is immutable,
422), the PUT's uid precondition (``rest.DefaultUpdatedObjectInfo.Preconditions``, checked by the
etcd3 store, 409 via ``storeerr.InterpretUpdateError``), ``checkName`` (400), the node status
strategy (metadata is kept and validated: ``ValidateNodeUpdate``), ``ValidateDeploymentStatus``
and the deployment scale's uid precondition (pkg/registry/apps/deployment/storage/storage.go).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpusched.objects.kinds import KINDS
from tests.objects.test_validation_upstream import ACCEPTED, REFUSED
from tests.server.conftest import Served, start_serve, stops_cleanly

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
CMS = "/api/v1/namespaces/default/configmaps"
DEPLOYS = "/apis/apps/v1/namespaces/default/deployments"
NODES = "/api/v1/nodes"


def collection(obj: dict[str, Any]) -> str:
    info = KINDS[obj["kind"]]
    root = "/api/v1" if info.api_version == "v1" else f"/apis/{info.api_version}"
    return f"{root}/namespaces/default/{info.plural}" if info.namespaced else f"{root}/{info.plural}"


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Served:
    served = start_serve(tmp_path_factory.mktemp("refusals"), "--virtual-clock")
    try:
        yield served
    finally:
        stops_cleanly(served.process)


def status_message(kind: str, line: str) -> str:
    """The Status message behind kubectl's line: ``NewInvalid`` names the group kind
    (``Deployment.apps "d" is invalid``); kubectl prints ``The Deployment "d" is invalid``."""
    group = KINDS[kind].group
    prefix = f"The {kind} "
    if not line.startswith(prefix):
        return line
    return f"{kind}.{group} {line[len(prefix):]}" if group else line[len("The "):]


@pytest.mark.parametrize("obj,message", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_create_is_refused_with_upstreams_status(served, obj, message):
    code, body = served.request("POST", collection(obj), obj)
    expected = (422, "Invalid") if " is invalid: " in message else (400, "BadRequest")
    assert (code, body["reason"], body["message"]) == (*expected, status_message(obj["kind"], message))
    name = obj["metadata"]["name"]
    assert served.request("GET", f"{collection(obj)}/{name}")[0] == 404


@pytest.mark.parametrize("index", range(len(ACCEPTED)), ids=[c[0] for c in ACCEPTED])
def test_near_boundary_create_is_accepted(served, index):
    obj = copy.deepcopy(ACCEPTED[index][1])
    obj["metadata"]["name"] = f"ok-{index}" if obj["kind"] != "Service" else obj["metadata"]["name"]
    if obj["kind"] == "LimitRange":
        obj["metadata"]["namespace"] = "limits"       # keeps the pods of the other cases admissible
        served.request("POST", "/api/v1/namespaces", {"metadata": {"name": "limits"}})
        path = "/api/v1/namespaces/limits/limitranges"
    else:
        path = collection(obj)
    code, body = served.request("POST", path, obj)
    assert code == 201, body


def make(served: Served, path: str, body: dict[str, Any]) -> dict[str, Any]:
    code, stored = served.request("POST", path, body)
    assert code == 201, stored
    return stored


def deployment(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


def patch(served: Served, path: str, kind: str, body: Any) -> tuple[int, dict[str, Any]]:
    code, answer = served.request("PATCH", path, body, headers={"Content-Type": kind})
    assert isinstance(answer, dict), answer
    return code, answer


def test_json_patch_of_the_uid_is_refused_not_ignored(served):
    stored = make(served, CMS, {"metadata": {"name": "uid-json"}, "data": {"a": "b"}})
    code, body = patch(served, f"{CMS}/uid-json", JSON_PATCH,
                       [{"op": "replace", "path": "/metadata/uid", "value": "forged"}])
    assert (code, body["reason"], body["message"]) == (
        422, "Invalid", 'ConfigMap "uid-json" is invalid: metadata.uid: Invalid value: "forged": field is immutable')
    assert served.json(f"{CMS}/uid-json")["metadata"]["uid"] == stored["metadata"]["uid"]


@pytest.mark.parametrize("kind", [MERGE, STRATEGIC])
def test_merge_patches_of_the_uid_are_refused(served, kind):
    name = "uid-merge" if kind == MERGE else "uid-strategic"
    make(served, CMS, {"metadata": {"name": name}})
    code, body = patch(served, f"{CMS}/{name}", kind, {"metadata": {"uid": "forged"}})
    assert (code, body["message"]) == (
        422, f'ConfigMap "{name}" is invalid: metadata.uid: Invalid value: "forged": field is immutable')


def test_put_with_another_uid_fails_its_precondition(served):
    stored = make(served, CMS, {"metadata": {"name": "uid-put"}})
    sent = {**stored, "metadata": {**stored["metadata"], "uid": "forged"}, "data": {"x": "y"}}
    code, body = served.request("PUT", f"{CMS}/uid-put", sent)
    uid = stored["metadata"]["uid"]
    assert (code, body["reason"], body["message"]) == (
        409, "Conflict", 'Operation cannot be fulfilled on configmaps "uid-put": StorageError: invalid object, '
        "Code: 4, Key: /registry/configmaps/default/uid-put, ResourceVersion: 0, AdditionalErrorMsg: "
        f"Precondition failed: UID in precondition: forged, UID in object meta: {uid}")
    assert "data" not in served.json(f"{CMS}/uid-put")


@pytest.mark.parametrize("kind", [MERGE, STRATEGIC])
def test_owner_references_without_name_or_uid_are_refused_through_patches(served, kind):
    name = "owned-merge" if kind == MERGE else "owned-strategic"
    make(served, CMS, {"metadata": {"name": name}})
    code, body = patch(served, f"{CMS}/{name}", kind,
                       {"metadata": {"ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "uid": ""}]}})
    assert (code, body["message"]) == (       # several causes: apimachinery's aggregate brackets them
        422, f'ConfigMap "{name}" is invalid: [metadata.ownerReferences.name: Invalid value: "": must not be '
        'empty, metadata.ownerReferences.uid: Invalid value: "": must not be empty]')
    assert "ownerReferences" not in served.json(f"{CMS}/{name}")["metadata"]


def test_node_status_validates_the_metadata_it_keeps(served):
    """nodeStatusStrategy.PrepareForUpdate resets only the spec; ValidateNodeUpdate checks labels."""
    make(served, NODES, {"metadata": {"name": "status-node"}})
    key = "k" * 70
    code, body = patch(served, f"{NODES}/status-node/status", MERGE, {"metadata": {"labels": {key: "v"}}})
    assert (code, body["reason"], body["message"]) == (
        422, "Invalid", f'Node "status-node" is invalid: metadata.labels: Invalid value: "{key}": name part '
        "must be no more than 63 characters")
    code, body = patch(served, f"{NODES}/status-node/status", MERGE, {"metadata": {"labels": {"rack": "r1"}}})
    assert code == 200 and body["metadata"]["labels"]["rack"] == "r1"
    code, body = patch(served, f"{NODES}/status-node/status", JSON_PATCH,
                       [{"op": "replace", "path": "/metadata/uid", "value": "forged"}])
    assert (code, body["reason"]) == (422, "Invalid")


def test_deployment_status_counts_are_validated(served):
    make(served, DEPLOYS, deployment("status-deploy"))
    code, body = patch(served, f"{DEPLOYS}/status-deploy/status", MERGE, {"status": {"replicas": -1}})
    assert (code, body["reason"]) == (422, "Invalid")
    assert body["message"].startswith('Deployment.apps "status-deploy" is invalid: [status.replicas: Invalid value: '
                                      "-1: must be greater than or equal to 0")
    assert served.json(f"{DEPLOYS}/status-deploy").get("status", {}).get("replicas", 0) >= 0


@pytest.mark.parametrize("method,body", [
    ("PUT", {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "other"}, "spec": {"replicas": 2}}),
    ("PATCH", {"metadata": {"name": "other"}, "spec": {"replicas": 2}}),
], ids=["put", "merge-patch"])
def test_scale_under_another_name_is_refused(served, method, body):
    name = f"scale-name-{method.lower()}"
    make(served, DEPLOYS, deployment(name))
    headers = {"Content-Type": MERGE} if method == "PATCH" else None
    code, answer = served.request(method, f"{DEPLOYS}/{name}/scale", body, headers=headers)
    assert (code, answer["reason"], answer["message"]) == (
        400, "BadRequest", f"the name of the object (other) does not match the name on the URL ({name})")
    assert served.json(f"{DEPLOYS}/{name}")["spec"]["replicas"] == 1


def test_scale_with_another_uid_fails_its_precondition(served):
    stored = make(served, DEPLOYS, deployment("scale-uid"))
    body = {"metadata": {"name": "scale-uid", "uid": "forged"}, "spec": {"replicas": 3}}
    code, answer = served.request("PUT", f"{DEPLOYS}/scale-uid/scale", body)
    assert (code, answer["reason"], answer["message"]) == (
        409, "Conflict", 'Operation cannot be fulfilled on deployments/scale.apps "scale-uid": Precondition failed: '
        f"UID in precondition: forged, UID in object meta: {stored['metadata']['uid']}")
    assert served.json(f"{DEPLOYS}/scale-uid")["spec"]["replicas"] == 1
