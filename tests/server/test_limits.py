"""Hostile bodies against a real ``gpusched serve``: each gets one Status, nothing is stored, and
nothing stored afterwards breaks a later read, list, settle or clock tick (issue 16, point 3).

Upstream sources of the expected answers, per case id:

- ``*-content-type``: apiserver handlers/negotiation ``NegotiateInputSerializer`` -> apimachinery
  ``NewUnsupportedMediaTypeError`` (415 ``the body of the request was in an unknown format``);
- ``nan``/``infinity``/``deep-json``: Go encoding/json's scanner (``invalid character 'N' looking
  for beginning of value``; ``maxNestingDepth``), gpusched's depth bound being 100;
- ``yaml-alias-bomb``: go-yaml decode.go ``allowedAliasRatio`` (CVE-2019-11253);
- ``int64-overflow``/``int32-overflow``: encoding/json ``UnmarshalTypeError`` wrapped by handlers
  rest.go ``transformDecodeError`` (the vendored OpenAPI gives the int32/int64 formats);
- ``duplicate-key``: sigs.k8s.io/json strict decoding (``duplicate field "metadata.name"``);
- ``object-over-1.5MiB``: etcd ``--max-request-bytes`` refusal passed on by kube-apiserver
  (responsewriters ``ErrorToAPIStatus``: ``etcdserver: request is too large``);
- ``copy-bomb``: evanphx/json-patch ``AccumulatedCopySizeLimit`` (apiserver config
  ``JSONPatchMaxCopyBytes`` 3 MiB), answered as handlers/patch.go ``applyJSPatch`` does (422);
- replicas/completions/count: gpusched's documented maxima (objects.limits; README "Limits").
"""

from __future__ import annotations

import json

import pytest

from tests.server.conftest import Served, wait_for

CM_PATH = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"
DEPLOYS = "/apis/apps/v1/namespaces/default/deployments"
JOBS = "/apis/batch/v1/namespaces/default/jobs"
POOLS = "/apis/gpusched.io/v1alpha1/nodepools"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def cm_text(name: str, data: str = '{"a":"b"}') -> str:
    return f'{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"data":{data}}}'


def deployment(name: str, replicas: object = 1) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}}}


def pod(name: str, **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "x",
                                     "resources": {"limits": {"nvidia.com/gpu": 1}}}], **spec}}


def alias_bomb_yaml() -> str:
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata: {name: bomb}", "data:",
             "  a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 9):
        name, prev = chr(97 + level), chr(96 + level)
        lines.append(f"  {name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    return "\n".join(lines) + "\n"


# (id, path, content type, body text, status, reason, message fragment, name that must not exist)
CREATE_CASES = [
    ("xml-content-type", CM_PATH, "application/xml", cm_text("xml"), 415, "UnsupportedMediaType",
     "the body of the request was in an unknown format - accepted media types include: "
     "application/json, application/yaml", f"{CM_PATH}/xml"),
    ("text-json-content-type", CM_PATH, "text/json", cm_text("tj"), 415, "UnsupportedMediaType",
     "the body of the request was in an unknown format", f"{CM_PATH}/tj"),
    ("nan", CM_PATH, "application/json", cm_text("nan", '{"a":NaN}'), 400, "BadRequest",
     "invalid character 'N' looking for beginning of value", f"{CM_PATH}/nan"),
    ("infinity", DEPLOYS, "application/json",
     json.dumps(deployment("inf", 1)).replace('"replicas": 1', '"replicas": Infinity'), 400, "BadRequest",
     "invalid character 'I' looking for beginning of value", f"{DEPLOYS}/inf"),
    ("deep-json", CM_PATH, "application/json", cm_text("deep", "[" * 100_000 + "]" * 100_000), 400,
     "BadRequest", "exceeded max depth of 100", f"{CM_PATH}/deep"),
    ("yaml-alias-bomb", CM_PATH, "application/yaml", alias_bomb_yaml(), 400, "BadRequest",
     "yaml: document contains excessive aliasing", f"{CM_PATH}/bomb"),
    ("int64-overflow", PODS, "application/json",
     json.dumps(pod("big-int", activeDeadlineSeconds=2**63)), 400, "BadRequest",
     "json: cannot unmarshal number 9223372036854775808 into Go struct field PodSpec.spec."
     "activeDeadlineSeconds of type int64", f"{PODS}/big-int"),
    ("int32-overflow", DEPLOYS, "application/json", json.dumps(deployment("i32", 2**31)), 400,
     "BadRequest", "json: cannot unmarshal number 2147483648 into Go struct field DeploymentSpec."
     "spec.replicas of type int32", f"{DEPLOYS}/i32"),
    ("duplicate-key", CM_PATH + "?fieldValidation=Strict", "application/json",
     '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup","name":"dup2"}}', 400, "BadRequest",
     'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field '
     '"metadata.name"', f"{CM_PATH}/dup2"),
    ("object-over-1.5MiB", CM_PATH, "application/json",
     cm_text("huge", json.dumps({"a": "x" * 1_600_000})), 500, "InternalError",
     "etcdserver: request is too large", f"{CM_PATH}/huge"),
    ("replicas-100000", DEPLOYS, "application/json", json.dumps(deployment("wide", 100_000)), 422, "Invalid",
     "spec.replicas: Invalid value: 100000: must be less than or equal to 5000", f"{DEPLOYS}/wide"),
    ("job-completions-1e6", JOBS, "application/json", json.dumps(
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "many"},
         "spec": {"completions": 10**6, "parallelism": 10**6, "template": {"spec": {
             "restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}}), 422, "Invalid",
     "spec.completions: Invalid value: 1000000: must be less than or equal to 100000", f"{JOBS}/many"),
    ("nodepool-count-1e5", POOLS, "application/json", json.dumps(
        {"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "huge"},
         "spec": {"count": 100_000, "gpu": {"model": "A100-40GB", "count": 8}}}), 422, "Invalid",
     "spec.count: Invalid value: 100000: must be less than or equal to 5000", f"{POOLS}/huge"),
]


@pytest.mark.parametrize("path,ctype,text,status,reason,message,absent",
                         [c[1:] for c in CREATE_CASES], ids=[c[0] for c in CREATE_CASES])
def test_hostile_create_gets_a_status_and_stores_nothing(serve: Served, path, ctype, text, status, reason,
                                                         message, absent):
    code, reply = serve.request("POST", path, raw=text.encode(), headers={"Content-Type": ctype})
    assert (code, reply["reason"]) == (status, reason), reply
    assert message in reply["message"], reply["message"]
    assert serve.request("GET", absent)[0] == 404


def test_yaml_bodies_are_read_as_yaml_for_create_and_update(serve: Served):
    """application/yaml is a body type kube-apiserver reads (and only the listed types are)."""
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\ndata: {a: b}\n"
    assert serve.request("POST", CM_PATH, raw=text.encode(), headers={"Content-Type": "application/yaml"})[0] == 201
    code, reply = serve.request("PUT", f"{CM_PATH}/y", raw=text.replace("a: b", "a: c").encode(),
                                headers={"Content-Type": "application/yaml"})
    assert code == 200 and reply["data"] == {"a": "c"}, reply


MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"

# (id, path under the fixture objects, content type, patch, status, message fragment)
PATCH_CASES = [
    # a 1 KB patch of copies used to build a 110 MB object (and hold the worker for a minute)
    ("copy-bomb", f"{CM_PATH}/base", JSON_PATCH,
     [{"op": "add", "path": "/metadata/annotations", "value": {"k": "x" * 1000}}]
     + [{"op": "copy", "from": "/metadata/annotations", "path": f"/metadata/labels{i}"} for i in range(1)]
     + [{"op": "add", "path": "/data/list", "value": ["x" * 1000]}]
     + [{"op": "copy", "from": "/data/list", "path": "/data/list/-"} for _ in range(30)],
     422, "the server rejected our request due to an error in our request"),
    ("too-many-operations", f"{CM_PATH}/base", JSON_PATCH,
     [{"op": "test", "path": "/kind", "value": "ConfigMap"}] * 10_001, 413,
     "The allowed maximum operations in a JSON patch is 10000, got 10001"),
    ("status-wrong-type", f"{PODS}/pending/status", MERGE, {"status": {"phase": 5}}, 400,
     "json: cannot unmarshal number into Go struct field PodStatus.status.phase of type string"),
    ("status-start-time-list", f"{PODS}/pending/status", MERGE, {"status": {"containerStatuses": "x"}}, 400,
     "of type []v1.ContainerStatus"),
    ("merge-replicas-100000", f"{DEPLOYS}/web", MERGE, {"spec": {"replicas": 100_000}}, 422,
     "must be less than or equal to 5000"),
    ("scale-100000", f"{DEPLOYS}/web/scale", MERGE, {"spec": {"replicas": 100_000}}, 422,
     "must be less than or equal to 5000"),
    ("status-over-1.5MiB", f"{PODS}/pending/status", MERGE, {"status": {"message": "x" * 1_600_000}}, 500,
     "etcdserver: request is too large"),
]


@pytest.fixture
def objects(serve: Served) -> Served:
    serve.json(CM_PATH, json.loads(cm_text("base")))
    serve.json(DEPLOYS, deployment("web"))
    serve.json(PODS, pod("pending"))                 # no nodes: stays Pending
    serve.settled()                                  # the controllers' and scheduler's writes done
    return serve


@pytest.mark.parametrize("path,ctype,body,status,message", [c[1:] for c in PATCH_CASES],
                         ids=[c[0] for c in PATCH_CASES])
def test_hostile_patch_gets_a_status_and_changes_nothing(objects: Served, path, ctype, body, status, message):
    target = path.removesuffix("/status").removesuffix("/scale")
    before = objects.json(target)
    code, reply = objects.request("PATCH", path, body, headers={"Content-Type": ctype})
    assert code == status, reply
    assert message in json.dumps(reply), reply
    assert objects.json(target)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


@pytest.mark.parametrize("ctype,body", [
    (MERGE, {"metadata": {"annotations": None}}),
    (JSON_PATCH, [{"op": "add", "path": "/metadata/annotations", "value": None}]),
    (JSON_PATCH, [{"op": "add", "path": "/metadata/labels", "value": None}]),
], ids=["merge-null-annotations", "json-patch-null-annotations", "json-patch-null-labels"])
def test_null_metadata_on_a_pending_pod_does_not_stop_the_clock(objects: Served, ctype, body):
    """``metadata.annotations: null`` used to crash every later settle (the clock stopped for good):
    null decodes to no annotations, as Go's decoder leaves a nil map."""
    code, reply = objects.request("PATCH", f"{PODS}/pending", body, headers={"Content-Type": ctype})
    assert code == 200, reply
    assert objects.gpusched("advance", "1m").returncode == 0
    assert objects.request("POST", PODS, pod("after"))[0] == 201      # a write settles again


def test_no_hostile_write_breaks_a_later_read_list_settle_or_tick(objects: Served):
    """Write every hostile class (each refused or cleaned), then read, list (JSON and Table, and
    kubectl), settle (a create) and advance the clock: all must answer."""
    sent = 0
    for _id, path, ctype, text, *_ in CREATE_CASES:
        objects.request("POST", path, raw=text.encode(), headers={"Content-Type": ctype})
        sent += 1
    for _id, path, ctype, body, *_ in PATCH_CASES:
        objects.request("PATCH", path, body, headers={"Content-Type": ctype})
        sent += 1
    for body in ({"metadata": {"annotations": None, "labels": None, "finalizers": None}},
                 {"status": None}, {"spec": {"tolerations": None}}):
        objects.request("PATCH", f"{PODS}/pending", body, headers={"Content-Type": MERGE})
        objects.request("PATCH", f"{PODS}/pending/status", body, headers={"Content-Type": MERGE})
        sent += 2
    for path in (PODS, "/api/v1/pods", DEPLOYS, CM_PATH, JOBS, POOLS, "/api/v1/nodes", "/api/v1/events"):
        assert objects.request("GET", path)[0] == 200, path
        assert objects.request("GET", path, headers={"Accept": TABLE})[0] == 200, path
    assert objects.request("GET", f"{PODS}/pending")[0] == 200
    for kind in ("pods", "deployments", "configmaps", "all"):
        objects.kubectl("get", kind)
    assert objects.gpusched("advance", "5m").returncode == 0
    assert objects.request("POST", PODS, pod("still-works"))[0] == 201
    assert sent == len(CREATE_CASES) + len(PATCH_CASES) + 6


def test_int64_max_durations_do_not_break_delete_or_the_clock(serve: Served):
    """terminationGracePeriodSeconds of 2^63-1 is a valid int64 value (activeDeadlineSeconds stops
    at 2^31-1: ValidatePodSpec's inclusive range); deleting such a pod used to fail with
    ``OverflowError`` (its deletionTimestamp beyond year 9999), for the CLI and the API alike.
    RFC 3339 time stops at 9999-12-31T23:59:59Z."""
    capacity = {"cpu": "8", "memory": "16Gi", "pods": "110"}
    serve.json("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                                 "status": {"capacity": capacity, "allocatable": capacity}})
    body = pod("forever", terminationGracePeriodSeconds=2**63 - 1, activeDeadlineSeconds=2**31 - 1)
    del body["spec"]["containers"][0]["resources"]
    assert serve.request("POST", PODS, body)[0] == 201
    # Only a bound pod is deleted gracefully (an unbound one goes at once, as upstream's
    # CheckGracefulDelete): wait for the controller process to bind it.
    wait_for(lambda: serve.pod("forever")["spec"].get("nodeName"), "the pod to be bound",
             lambda: serve.pod("forever").get("status"))
    code, reply = serve.request("DELETE", f"{PODS}/forever")
    assert code == 200, reply
    assert reply["metadata"]["deletionTimestamp"] == "9999-12-31T23:59:59Z"
    code, reply = serve.request("DELETE", f"{PODS}/forever?gracePeriodSeconds={2**63 - 1}")
    assert code == 200, reply
    assert serve.gpusched("advance", "1h").returncode == 0
    assert serve.request("GET", PODS, headers={"Accept": TABLE})[0] == 200
    serve.kubectl("get", "pods")


def test_a_lone_surrogate_escape_is_stored_as_go_reads_it(serve: Served):
    """Go's encoding/json ``unquote`` reads a lone ``\\ud800`` as U+FFFD (tests/objects/test_surrogates.py);
    before, the body reached the store as a surrogate and the write failed with a 500."""
    text = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"sur"},"data":{"k":"x\\ud800y"}}'
    code, reply = serve.request("POST", CM_PATH, raw=text.encode())
    assert code == 201, reply
    assert serve.request("GET", f"{CM_PATH}/sur")[1]["data"] == {"k": "x\ufffdy"}
