"""Status errors: malformed and invalid bodies change nothing; conflicts; tokens; TLS off loopback.

The cases on a plain ``serve`` share one per module, each in a namespace of its own (its
``/namespaces/default/`` paths are rewritten), so each still sees only its own objects."""

from __future__ import annotations

import itertools
import os
import socket

import pytest
import yaml

from tests.conftest import run_process
from tests.server.conftest import Served, start_serve, stops_cleanly

PODS = "/api/v1/namespaces/default/pods"


class InNamespace:
    """The module's ``serve`` seen from one namespace: paths naming ``default`` name it."""

    def __init__(self, served: Served, namespace: str) -> None:
        self.served, self.namespace = served, namespace

    def request(self, method: str, path: str, body: object = None, **options) -> tuple[int, dict | str]:
        path = path.replace("/namespaces/default/", f"/namespaces/{self.namespace}/")
        return self.served.request(method, path, body, **options)


@pytest.fixture(scope="module")
def shared_serve(tmp_path_factory):
    served = start_serve(tmp_path_factory.mktemp("errors"), "--virtual-clock")
    yield served
    stops_cleanly(served.process)


NAMESPACES = itertools.count(1)


@pytest.fixture
def serve(shared_serve: Served) -> InNamespace:
    namespace = f"case-{next(NAMESPACES)}"
    status, reply = shared_serve.request("POST", "/api/v1/namespaces", {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    assert status == 201, reply
    return InNamespace(shared_serve, namespace)


def pod(name: str, **spec) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}


@pytest.mark.slow
@pytest.mark.parametrize(("method", "path", "raw", "content_type", "code", "reason", "message"), [
    ("POST", PODS, b"{not json", "application/json", 400, "BadRequest", "could not be decoded"),
    ("POST", PODS, b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[]}}',
     "application/json", 422, "Invalid", 'Pod "x" is invalid: spec.containers: Required value'),  # errors.go NewInvalid
    ("POST", PODS, b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}',
     "application/json", 400, "BadRequest", "does not match the expected kind (Pod)"),
    ("PATCH", PODS + "/keep", b"[{", "application/json-patch+json", 400, "BadRequest", "could not be decoded"),
    ("PATCH", PODS + "/keep", b'{"spec":{"containers":[{"name":"c","image":"other"},{"name":"d","image":"x"}]}}',
     "application/strategic-merge-patch+json", 422, "Invalid", "pod updates may not change fields"),
    ("PATCH", PODS + "/keep", b"{}", "text/plain", 415, "UnsupportedMediaType", "unknown format"),
    ("GET", PODS + "/missing", b"", "application/json", 404, "NotFound", 'pods "missing" not found'),
], ids=["malformed-json", "invalid-pod", "wrong-kind", "malformed-json-patch", "immutable-pod-spec",
        "unknown-patch-type", "not-found"])
def test_bad_requests_get_status_objects_and_change_nothing(serve, method, path, raw, content_type,
                                                              code, reason, message):
    assert serve.request("POST", PODS, pod("keep"))[0] == 201
    serve.served.settled()              # the scheduler's answer (unschedulable) is written
    _, before = serve.request("GET", PODS)
    status, body = serve.request(method, path, raw=raw, headers={"Content-Type": content_type})
    assert status == code
    assert (body["kind"], body["status"], body["code"], body["reason"]) == ("Status", "Failure", code, reason)
    assert message in body["message"]
    _, after = serve.request("GET", PODS)
    assert after == before


@pytest.mark.slow
def test_stale_resource_version_is_a_409_conflict(serve):
    _, created = serve.request("POST", "/api/v1/namespaces/default/configmaps",
                               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}})
    stale = dict(created, data={"a": "1"})
    assert serve.request("PUT", "/api/v1/namespaces/default/configmaps/cm", stale)[0] == 200
    status, body = serve.request("PUT", "/api/v1/namespaces/default/configmaps/cm", dict(stale, data={"a": "2"}))
    assert (status, body["reason"]) == (409, "Conflict")
    assert body["message"] == ('Operation cannot be fulfilled on configmaps "cm": the object has been '
                               "modified; please apply your changes to the latest version and try again")
    assert serve.request("POST", "/api/v1/namespaces/default/configmaps", created)[1]["reason"] == "AlreadyExists"


@pytest.mark.slow
def test_token_required_when_asked_on_loopback(tmp_path):
    served = start_serve(tmp_path, "--virtual-clock", "--require-token")
    try:
        status, body = served.request("GET", "/api/v1/nodes")
        assert (status, body["reason"], body["code"]) == (401, "Unauthorized", 401)
        assert served.request("GET", "/api/v1/nodes", token="wrong")[0] == 401
        kubeconfig = next(line for line in served.lines if line.startswith("kubeconfig"))
        path = kubeconfig.split(": ", 1)[1]
        token = yaml.safe_load(open(path))["users"][0]["user"]["token"]
        assert served.request("GET", "/api/v1/nodes", token=token)[0] == 200
    finally:
        stops_cleanly(served.process)


def _non_loopback_address() -> str | None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))   # TEST-NET: no packet is sent
            address = probe.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") else address


@pytest.mark.slow
def test_non_loopback_bind_serves_tls_and_refuses_requests_without_token(tmp_path):
    address = _non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address (the token check is tested "
                    "on loopback with --require-token)")
    served = start_serve(tmp_path, "--virtual-clock", "--host", address)
    try:
        assert served.url.startswith(f"https://{address}:")
        assert served.request("GET", "/version")[0] == 401
        path = next(line for line in served.lines if line.startswith("kubeconfig")).split(": ", 1)[1]
        assert os.stat(path).st_mode & 0o777 == 0o600
        config = yaml.safe_load(open(path))
        token = config["users"][0]["user"]["token"]
        assert served.request("GET", "/version", token=token)[0] == 200
        env = {**os.environ, "HOME": str(served.home), "KUBECONFIG": path}
        nodes = run_process(["kubectl", "get", "nodes"], env=env)
        assert nodes.returncode == 0, nodes.stderr   # kubectl verifies the self-signed certificate
    finally:
        stops_cleanly(served.process)


@pytest.mark.slow
@pytest.mark.parametrize(("method", "path", "code", "message"), [
    # ValidateCreateOptions -> ValidateDryRun: NotSupported with the []string value
    ("POST", PODS + "?dryRun=Some", 422,
     'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Some"}: '
     'supported values: "All"'),
    ("DELETE", PODS + "/keep?dryRun=x", 422,
     'DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"x"}: '
     'supported values: "All"'),
    # no route for the subresource: the apiserver's NotFound handler
    ("GET", PODS + "/keep/frobnicate", 404, "the server could not find the requested resource"),
], ids=["create-dry-run-value", "delete-dry-run-value", "unknown-subresource"])
def test_option_and_route_errors_are_upstream_statuses(serve, method, path, code, message):
    assert serve.request("POST", PODS, pod("keep"))[0] == 201
    status, body = serve.request(method, path)
    assert (status, body["code"], body["message"]) == (code, code, message)
    assert serve.request("GET", PODS + "/keep?dryRun=All")[0] == 200      # reads ignore dryRun


@pytest.mark.slow
@pytest.mark.parametrize(("method", "path", "body", "details"), [
    ("GET", PODS + "/missing", None, {"name": "missing", "kind": "pods"}),
    ("POST", PODS, pod("keep"), {"name": "keep", "kind": "pods"}),
    ("GET", "/apis/apps/v1/namespaces/default/deployments/missing", None,
     {"name": "missing", "group": "apps", "kind": "deployments"}),
    ("POST", PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"containers": []}},
     {"name": "x", "kind": "Pod", "causes": [{"reason": "FieldValueRequired", "message": "Required value",
                                              "field": "spec.containers"}]}),
], ids=["not-found", "already-exists", "not-found-apps", "invalid"])
def test_status_details_name_the_resource_or_kind_as_errors_go(serve, method, path, body, details):
    """errors.go: NewNotFound/NewAlreadyExists carry the resource (pods, deployments + group),
    NewInvalid the kind (Pod) and one cause per field error."""
    assert serve.request("POST", PODS, pod("keep"))[0] == 201
    status, reply = serve.request(method, path, body)
    assert reply["details"] == details
