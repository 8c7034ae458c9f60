"""Protobuf through ``gpusched serve``: real kubectl 1.32's create generators (they POST protobuf
and accept it back), ``kubectl get`` output forms and ``-w`` next to them, and raw requests for
what kubectl does not send: Accept negotiation, protobuf watches, Status errors, refusals.

Upstream: apiserver ``pkg/endpoints/handlers/negotiation/negotiate.go`` (clause order, 406),
``handlers/rest.go`` ``AllowsMediaTypeTransform`` (Tables in JSON only), ``handlers/watch.go``
(``;stream=watch``, embedded objects in the full envelope), apimachinery
``runtime/serializer/protobuf/protobuf.go``.
"""

from __future__ import annotations

import http.client
import json
import shutil

import pytest

from gpusched.server.protobuf.envelope import decode_event, decode_object, encode_object, read_frames
from tests.conftest import CEILING_S
from tests.server.protobuf.test_codec import KUBECTL_NAMESPACE, unknown

pytestmark = [pytest.mark.slow]
needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
PROTOBUF = "application/vnd.kubernetes.protobuf"


def call(serve, method: str, path: str, body: bytes | None = None, content_type: str = PROTOBUF,
         accept: str = f"{PROTOBUF}, application/json") -> tuple[int, str, bytes]:
    """One request: (status, response Content-Type, raw body)."""
    host, port = serve.host_port
    conn = http.client.HTTPConnection(host, port, timeout=CEILING_S)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": content_type, "Accept": accept})
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type", ""), response.read()
    finally:
        conn.close()


# (id, kubectl create arguments, what it prints, (path, field reader, value) read back as JSON)
CREATES = [
    ("namespace", ["namespace", "monitoring"], "namespace/monitoring created",
     ("/api/v1/namespaces/monitoring",
      lambda o: o["metadata"]["labels"]["kubernetes.io/metadata.name"], "monitoring")),
    ("deployment", ["deployment", "web", "--image=nginx", "--replicas=0", "--port=80"],
     "deployment.apps/web created",
     ("/apis/apps/v1/namespaces/default/deployments/web", lambda o: o["spec"]["replicas"], 0)),
    ("configmap", ["configmap", "cm", "--from-literal=a=b"], "configmap/cm created",
     ("/api/v1/namespaces/default/configmaps/cm", lambda o: o["data"]["a"], "b")),
    ("secret", ["secret", "generic", "s", "--from-literal=p=q"], "secret/s created",
     ("/api/v1/namespaces/default/secrets/s", lambda o: o["data"]["p"], "cQ==")),
    ("job", ["job", "j", "--image=busybox", "--", "echo", "hi"], "job.batch/j created",
     ("/apis/batch/v1/namespaces/default/jobs/j",
      lambda o: o["spec"]["template"]["spec"]["containers"][0]["command"], ["echo", "hi"])),
    ("quota", ["quota", "q", "--hard=cpu=2,pods=10,requests.nvidia.com/gpu=4"], "resourcequota/q created",
     ("/api/v1/namespaces/default/resourcequotas/q", lambda o: o["spec"]["hard"]["requests.nvidia.com/gpu"], "4")),
    ("priorityclass", ["priorityclass", "high", "--value=1000", "--preemption-policy=Never"],
     "priorityclass.scheduling.k8s.io/high created",
     ("/apis/scheduling.k8s.io/v1/priorityclasses/high", lambda o: o["preemptionPolicy"], "Never")),
]


@needs_kubectl
@pytest.mark.parametrize("args,printed,check", [c[1:] for c in CREATES], ids=[c[0] for c in CREATES])
def test_kubectl_create_generators(serve, args, printed, check):
    """kubectl 1.32 sends these as protobuf (they were 415 UnsupportedMediaType)."""
    done = serve.kubectl("create", *args)
    assert done.stdout.strip() == printed
    path, field, value = check
    assert field(serve.json(path)) == value


@needs_kubectl
def test_kubectl_get_forms_and_watch_next_to_protobuf_writes(serve):
    serve.kubectl("create", "namespace", "monitoring")
    serve.kubectl("create", "configmap", "cm", "-n", "monitoring", "--from-literal=a=b")
    assert serve.kubectl("get", "ns", "monitoring", "-o", "name").stdout.strip() == "namespace/monitoring"
    assert serve.kubectl("get", "cm", "cm", "-n", "monitoring", "-o", "jsonpath={.data.a}").stdout == "b"
    wide = serve.kubectl("get", "cm", "cm", "-n", "monitoring", "-o", "wide").stdout.split("\n")
    assert wide[0].split()[:2] == ["NAME", "DATA"] and wide[1].split()[:2] == ["cm", "1"]
    yaml_out = serve.kubectl("get", "cm", "cm", "-n", "monitoring", "-o", "yaml").stdout
    assert "  a: b\n" in yaml_out
    columns = serve.kubectl("get", "cm", "-n", "monitoring", "-o", "custom-columns=N:.metadata.name,A:.data.a")
    assert columns.stdout.split() == ["N", "A", "cm", "b"]
    watched = serve.kubectl("get", "cm", "-n", "monitoring", "-w", "--request-timeout=2s", check=False)
    assert watched.stdout.split("\n")[1].split()[:2] == ["cm", "1"], watched.stdout


def test_protobuf_create_get_list_and_status_errors(serve):
    code, ctype, body = call(serve, "POST", "/api/v1/namespaces", KUBECTL_NAMESPACE)
    assert (code, ctype) == (201, PROTOBUF)
    assert decode_object(body)["metadata"]["name"] == "monitoring"
    code, ctype, body = call(serve, "GET", "/api/v1/namespaces/monitoring")
    assert (code, ctype, decode_object(body)["metadata"]["name"]) == (200, PROTOBUF, "monitoring")
    code, ctype, body = call(serve, "GET", "/api/v1/namespaces")
    listed = decode_object(body)
    assert listed["kind"] == "NamespaceList" and "monitoring" in [i["metadata"]["name"] for i in listed["items"]]
    code, ctype, body = call(serve, "GET", "/api/v1/namespaces/nope")
    status = decode_object(body)
    assert (code, ctype, status["kind"], status["reason"], status["message"]) == (
        404, PROTOBUF, "Status", "NotFound", 'namespaces "nope" not found')


def test_binding_and_delete_options_in_protobuf(serve):
    """client-go (kube-scheduler) posts pods/binding and DELETE options in protobuf."""
    serve.cli("apply", "-f", "examples/cluster.yaml")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"schedulerName": "elsewhere", "containers": [{"name": "c", "image": "i"}]}}
    assert call(serve, "POST", "/api/v1/namespaces/default/pods", encode_object(pod))[0] == 201
    node = serve.json("/api/v1/nodes")["items"][0]["metadata"]["name"]
    binding = encode_object({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
                             "target": {"kind": "Node", "name": node}})
    code, _, body = call(serve, "POST", "/api/v1/namespaces/default/pods/p/binding", binding)
    assert (code, decode_object(body)["status"]) == (201, "Success")
    assert serve.json("/api/v1/namespaces/default/pods/p")["spec"]["nodeName"] == node
    options = encode_object({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
    assert call(serve, "DELETE", "/api/v1/namespaces/default/pods/p", options)[0] == 200


# (id, Accept, expected status, expected Content-Type)
ACCEPTS = [
    ("protobuf-first", f"{PROTOBUF}, application/json", 200, PROTOBUF),
    ("json-first", f"application/json, {PROTOBUF}", 200, "application/json"),
    ("q-values", f"application/json;q=0.5, {PROTOBUF}", 200, PROTOBUF),
    ("protobuf-table-falls-to-json-table",
     f"{PROTOBUF};as=Table;v=v1;g=meta.k8s.io, application/json;as=Table;v=v1;g=meta.k8s.io", 200,
     "application/json"),
    ("protobuf-table-alone", f"{PROTOBUF};as=Table;v=v1;g=meta.k8s.io", 406, "application/json"),
]


@pytest.mark.parametrize("accept,code,ctype", [c[1:] for c in ACCEPTS], ids=[c[0] for c in ACCEPTS])
def test_accept_negotiation(serve, accept, code, ctype):
    got = call(serve, "GET", "/api/v1/namespaces", accept=accept)
    assert got[:2] == (code, ctype)
    if "as=Table" in accept and code == 200:
        assert json.loads(got[2])["kind"] == "Table"
    if code == 406:
        assert json.loads(got[2])["message"] == ("only the following media types are accepted: "
                                                 f"application/json, application/yaml, {PROTOBUF}")


def test_custom_resources_have_no_protobuf(serve):
    """A CRD serves JSON only: a protobuf body is 415, an Accept of protobuf alone 406."""
    path = "/apis/gpusched.io/v1alpha1/nodepools"
    assert call(serve, "GET", path)[:2] == (200, "application/json")
    assert call(serve, "GET", path, accept=PROTOBUF)[0] == 406
    code, _, body = call(serve, "POST", path, unknown(b"gpusched.io/v1alpha1", b"NodePool", b""))
    assert code == 415 and "accepted media types include: application/json, application/yaml" in \
        json.loads(body)["message"]


# (id, body, fragment of the 400 message)
BAD_BODIES = [
    ("wrong-magic", b"k8s\x01" + KUBECTL_NAMESPACE[4:], "expected prefix [107 56 115 0]"),
    ("truncated", KUBECTL_NAMESPACE[:30], "the object provided is unrecognized (must be of type Namespace)"),
    ("length-past-body", b"k8s\x00\x12\xff\xff\x03ab", "the object provided is unrecognized"),
    ("unregistered-kind", unknown(b"v1", b"Gadget", b""), 'no kind "Gadget" is registered for version "v1"'),
]


@pytest.mark.parametrize("body,fragment", [c[1:] for c in BAD_BODIES], ids=[c[0] for c in BAD_BODIES])
def test_malformed_protobuf_is_400_and_stores_nothing(serve, body, fragment):
    before = len(serve.json("/api/v1/namespaces")["items"])
    code, ctype, answer = call(serve, "POST", "/api/v1/namespaces", body)
    status = decode_object(answer)
    assert (code, ctype, status["reason"]) == (400, PROTOBUF, "BadRequest")
    assert fragment in status["message"]
    assert len(serve.json("/api/v1/namespaces")["items"]) == before


def test_protobuf_watch_frames(serve):
    serve.json("/api/v1/namespaces/default/configmaps",
               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w"}})
    code, ctype, body = call(serve, "GET", "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1",
                             accept=PROTOBUF)
    assert (code, ctype) == (200, f"{PROTOBUF};stream=watch")
    events = [decode_event(frame) for frame in read_frames(body)]
    assert [(t, o["kind"], o["metadata"]["name"]) for t, o in events] == [("ADDED", "ConfigMap", "w")]


def test_protobuf_watch_list_with_initial_events_end_bookmark(serve):
    """client-go's informers (kube-scheduler): ``sendInitialEvents=true`` with bookmarks, in
    protobuf; the BOOKMARK carries ``k8s.io/initial-events-end`` (KEP-3157)."""
    serve.json("/api/v1/namespaces/default/configmaps",
               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w"}})
    path = ("/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1&allowWatchBookmarks=true"
            "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan")
    code, _, body = call(serve, "GET", path, accept=f"{PROTOBUF}, */*")
    events = [decode_event(frame) for frame in read_frames(body)]
    assert [t for t, _ in events] == ["ADDED", "BOOKMARK"]
    assert events[1][1]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_guard_refusals_answer_in_protobuf(serve):
    """A refusal before any handler (here the DNS-rebinding Host check) is a Status in the
    client's media type too (apiserver responsewriters.ErrorNegotiated)."""
    host, port = serve.host_port
    conn = http.client.HTTPConnection(host, port, timeout=CEILING_S)
    try:
        conn.request("GET", "/api/v1/namespaces", headers={"Host": "evil.example", "Accept": PROTOBUF})
        response = conn.getresponse()
        status = decode_object(response.read())
    finally:
        conn.close()
    assert (response.status, response.getheader("Content-Type"), status["reason"]) == (
        403, PROTOBUF, "Forbidden")
