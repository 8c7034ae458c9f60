"""``fieldValidation`` on writes and the v1.35 schemas at ``/openapi/v3``, with real kubectl.

Upstream sources reproduced:

- [fv-param] apiserver pkg/endpoints/handlers/rest.go ``fieldValidation`` (absent -> Warn) and
  apimachinery pkg/apis/meta/v1/validation ``ValidateFieldValidation`` (``Unsupported value``);
- [strict] apiserver handlers/rest.go ``transformDecodeError`` + apimachinery runtime
  ``NewStrictDecodingError``; the e2e conformance test test/e2e/apimachinery/field_validation.go;
- [warning] apiserver pkg/warning + endpoints/handlers (``Warning: 299 - "<text>"``), printed by
  client-go rest/warnings.go as ``Warning: <text>``;
- [kubectl] kubectl pkg/cmd/apply and create: ``Error from server (BadRequest): error when
  creating "<file>": <message>``; kubectl 1.32 sends ``fieldValidation=Strict`` by default
  (``--validate=strict``) once the server's OpenAPI v3 declares the parameter;
- [explain] kubectl pkg/explain/v2 (reads ``components.schemas`` of ``/openapi/v3/<gv>``).
"""

from __future__ import annotations

import http.client
import json
import shutil

import pytest

from tests.server.conftest import DEBIAN_KUBECTL, Served
from tests.conftest import CEILING_S

TYPO_POD = """apiVersion: v1
kind: Pod
metadata: {name: train}
spec:
  containers:
  - name: c
    image: i
    resource: {limits: {nvidia.com/gpu: 1}}
"""
STRICT_MESSAGE = ('Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
                  'unknown field "spec.containers[0].resource"')
needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


def raw_request(served: Served, method: str, path: str, body: str,
                content_type: str = "application/json") -> tuple[int, dict, list[str]]:
    """(status, JSON body, Warning header values) of one request."""
    host, port = served.host_port
    conn = http.client.HTTPConnection(host, port, timeout=CEILING_S)
    try:
        conn.request(method, path, body=body.encode(), headers={"Content-Type": content_type})
        response = conn.getresponse()
        data = json.loads(response.read().decode())
        return response.status, data, response.headers.get_all("Warning") or []
    finally:
        conn.close()


POD_JSON = json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                       "spec": {"containers": [{"name": "c", "image": "i", "resource": {}}], "foo": 1}})
PODS = "/api/v1/namespaces/default/pods"

CREATE_CASES = [
    ("strict", "?fieldValidation=Strict", 400,
     'Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field '
     '"spec.containers[0].resource", unknown field "spec.foo"', []),
    ("warn", "?fieldValidation=Warn", 201, None,
     ['299 - "unknown field \\"spec.containers[0].resource\\""', '299 - "unknown field \\"spec.foo\\""']),
    ("absent-means-warn", "", 201, None,
     ['299 - "unknown field \\"spec.containers[0].resource\\""', '299 - "unknown field \\"spec.foo\\""']),
    ("ignore", "?fieldValidation=Ignore", 201, None, []),
    ("unsupported", "?fieldValidation=strict", 400,
     'fieldValidation: Unsupported value: "strict": supported values: "", "Ignore", "Strict", "Warn"', []),
]


@pytest.mark.slow
def test_create_honours_field_validation(serve):
    for case_id, query, status, message, warnings in CREATE_CASES:
        got_status, body, got_warnings = raw_request(serve, "POST", PODS + query, POD_JSON)
        assert (got_status, got_warnings) == (status, warnings), case_id
        if message is not None:
            assert body["message"] == message and body["reason"] == "BadRequest", case_id
            assert serve.request("GET", PODS + "/p")[0] == 404, case_id       # nothing stored
        else:
            container = body["spec"]["containers"][0]
            assert "resource" not in container and "foo" not in body["spec"], case_id
            assert serve.request("DELETE", PODS + "/p")[0] == 200


@pytest.mark.slow
def test_duplicate_keys_put_and_patch(serve):
    # [strict] duplicate JSON keys on create; PUT and merge PATCH decode the new object too.
    cm = '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1", "a": "2"}}'
    status, body, _ = raw_request(serve, "POST", "/api/v1/namespaces/default/configmaps?fieldValidation=Strict", cm)
    assert (status, body["message"]) == (400, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
                                              'strict decoding error: duplicate field "data.a"')
    status, body, warnings = raw_request(serve, "POST", "/api/v1/namespaces/default/configmaps", cm)
    assert (status, body["data"], warnings) == (201, {"a": "2"}, ['299 - "duplicate field \\"data.a\\""'])
    path = "/api/v1/namespaces/default/configmaps/c"
    status, body, _ = raw_request(serve, "PUT", path + "?fieldValidation=Strict",
                                  '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "dta": {}}')
    assert (status, body["message"]) == (400, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
                                              'strict decoding error: unknown field "dta"')
    status, body, _ = raw_request(serve, "PATCH", path + "?fieldValidation=Strict", '{"metadata": {"lables": {}}}',
                                  "application/merge-patch+json")
    assert (status, body["message"]) == (400, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
                                              'strict decoding error: unknown field "metadata.lables"')
    status, body, _ = raw_request(serve, "PATCH", path + "?fieldValidation=Strict", '{"data": {"b": 3}}',
                                  "application/merge-patch+json")
    assert (status, body["message"]) == (400, 'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: '
                                              'cannot unmarshal number into Go struct field ConfigMap.data of '
                                              'type string')
    assert serve.json(path)["data"] == {"a": "2"}


@pytest.mark.slow
@needs_kubectl
def test_kubectl_strict_warn_and_explain(serve, tmp_path):
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(TYPO_POD)
    for verb in ("apply", "create"):
        done = serve.kubectl(verb, "-f", str(manifest), check=False)
        assert done.returncode == 1, done
        assert done.stderr.strip() == (f'Error from server (BadRequest): error when creating "{manifest}": '
                                       f"{STRICT_MESSAGE}")
    assert serve.request("GET", PODS + "/train")[0] == 404
    done = serve.kubectl("apply", "--validate=warn", "-f", str(manifest))
    assert done.stderr.strip() == 'Warning: unknown field "spec.containers[0].resource"'
    assert done.stdout.strip() == "pod/train created"
    explained = serve.kubectl("explain", "pod.spec.containers.resources").stdout
    assert explained.splitlines()[:4] == ["KIND:       Pod", "VERSION:    v1", "", "FIELD: resources <ResourceRequirements>"]
    assert "limits\t<map[string]string>" in explained and "requests\t<map[string]string>" in explained
    pool = serve.kubectl("explain", "nodepools.spec.gpu").stdout
    assert "GROUP:      gpusched.io" in pool and "model\t<string>" in pool


@pytest.mark.slow
@pytest.mark.skipif(not DEBIAN_KUBECTL.exists(), reason="Debian kubectl 1.20 not fetched")
def test_kubectl_1_20_gets_the_servers_default_warn(serve, tmp_path):
    # kubectl 1.20 sends no fieldValidation: the server's default (Warn) applies and kubectl
    # prints the warnings; its client-side validation finds no definitions in /openapi/v2.
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(TYPO_POD)
    done = serve.kubectl("apply", "-f", str(manifest), binary=str(DEBIAN_KUBECTL))
    assert done.stdout.strip() == "pod/train created"
    assert done.stderr.strip() == 'Warning: unknown field "spec.containers[0].resource"'


@pytest.mark.slow
def test_strict_fuzz_through_serve(serve):
    """Hypothesis over the schema (tests/fuzz_strict.py) through POST ?fieldValidation=Strict:
    a 4xx Status with kube-apiserver's message each time, and the store's resourceVersion unchanged."""
    from hypothesis import HealthCheck, given, settings

    from gpusched.objects.kinds import KINDS
    from tests.fuzz_strict import mutations

    def collection(kind: str) -> str:
        info = KINDS[kind]
        base = "/api/v1" if info.api_version == "v1" else f"/apis/{info.api_version}"
        return f"{base}/namespaces/default/{info.plural}" if info.namespaced else f"{base}/{info.plural}"

    def served(kind: str, message: str) -> str:
        """The CLI's (kubectl's) 'The Pod "x" is invalid' as the server words it: errors.go
        NewInvalid's '<Kind>[.<group>] "x" is invalid' (kubectl rebuilds the former from details)."""
        group = KINDS[kind].group
        if not message.startswith(f"The {kind} "):
            return message
        return (f"{kind}.{group}" if group else kind) + message[len(f"The {kind}"):]

    def store_version() -> str:
        return serve.json("/api/v1/namespaces")["metadata"]["resourceVersion"]

    before = store_version()
    runs: list[str] = []

    @settings(max_examples=FUZZ_THROUGH_SERVE, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(mutations())
    def check(mutation):
        status, body, warnings = raw_request(serve, "POST", collection(mutation.kind) + "?fieldValidation=Strict",
                                             mutation.text)
        assert status in (400, 422) and body["kind"] == "Status" and warnings == [], (status, body)
        expected = served(mutation.kind, mutation.expected)
        if mutation.exact:
            assert body["message"] == expected
        else:
            assert body["message"].startswith(expected), (body["message"], expected)
        runs.append(mutation.kind)

    check()
    assert store_version() == before
    assert len(runs) == FUZZ_THROUGH_SERVE
    print(f"strict fuzz through serve: {len(runs)} cases")


FUZZ_THROUGH_SERVE = 200
