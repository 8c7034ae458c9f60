"""Issue 25 through ``gpusched serve``: a ConfigMap over a bound (finding 1), a config nested too
deep (2), a write from another origin of the same host (5) and a chunk size no body could have (7).

Upstream answers reproduced, per case:

- configs: gpusched's documented bounds (``objects.limits``: ``MAX_SHARING_REPLICAS``, the
  manifest depth and alias bounds), refused at admission as 422 Invalid naming ConfigMap and key;
  NVIDIA k8s-device-plugin api/config/v1/replicas.go has no maximum of its own;
- origins: RFC 6454 section 4 (an origin is scheme, host and port; default ports filled in),
  the same rule as Go's net/http ``CrossOriginProtection`` comparing ``Origin`` with ``Host``;
- chunks: kube-apiserver handlers/rest.go ``limitedReadBody`` (413 ``Request entity too large:
  limit is 3145728``) and Go net/http/internal/chunked.go ``parseHexUint`` (``http chunk length
  too large`` past 16 hex digits), answered at once with the connection closed.

``serve`` runs under a 4 GiB address-space limit, so a regression of finding 1 fails the test
instead of taking the machine; raw sockets carry a generous ceiling and each asserts the status.
"""

from __future__ import annotations

import http.client
import json
import resource
import socket
from pathlib import Path

import pytest

from gpusched.server.app import ApiServer
from tests.cluster.test_config_admission import alias_bomb, deep, sharing
from tests.server.conftest import Served, start_serve, stops_cleanly

CEILING_S = 60                  # generous: a loaded machine still answers; a hang still fails
MEMORY_LIMIT = 4 << 30
CMS = "/api/v1/namespaces/default/configmaps"
NODE_POOL = {"apiVersion": "gpusched.io/v1alpha1", "kind": "NodePool", "metadata": {"name": "a100"},
             "spec": {"names": ["gpu-node-1"], "gpu": {"model": "A100-40GB", "count": 8}}}


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


@pytest.fixture
def bounded_serve(tmp_path: Path):
    served = start_serve(tmp_path, "--virtual-clock", preexec_fn=_limited)
    served.json("/apis/gpusched.io/v1alpha1/nodepools", NODE_POOL)
    served.settled()                    # the NodePool controller made gpu-node-1
    yield served
    stops_cleanly(served.process)


def configmap(name: str, text: str, key: str = "any") -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {key: text}}


@pytest.mark.parametrize("name,text,message", [
    ("time-slicing-config-all", sharing("timeSlicing", 1000000000),
     "device-plugin config: number of replicas must be <= 256, got 1000000000"),
    ("time-slicing-config", sharing("timeSlicing", 2**63), f"got {2**63}"),
    ("device-plugin-config", sharing("mps", 1000000000), "number of replicas must be <= 256"),
    ("time-slicing-config-all", deep(), "yaml: exceeded max depth of 100"),
    ("device-plugin-config", alias_bomb(), "yaml: document contains excessive aliasing"),
], ids=["time-slicing-1e9", "time-slicing-2^63", "mps-1e9", "5000-levels", "alias-bomb"])
def test_a_config_over_a_bound_gets_422_and_the_server_stays_up(bounded_serve: Served, name, text,
                                                                 message):
    status, answer = bounded_serve.request("POST", CMS, configmap(name, text))
    assert status == 422 and isinstance(answer, dict), (status, str(answer)[:300])
    assert answer["reason"] == "Invalid"
    assert answer["message"].startswith(f'ConfigMap "{name}" is invalid: data[any]: Invalid value: ') \
        or answer["message"].startswith(f'The ConfigMap "{name}" is invalid: data[any]: Invalid value: ')
    assert message in answer["message"]
    listed = bounded_serve.json(CMS)
    assert [item["metadata"]["name"] for item in listed["items"]] == []
    node = bounded_serve.json("/api/v1/nodes/gpu-node-1")
    assert node["status"]["capacity"]["nvidia.com/gpu"] == "8"


# ---- browsers: same origin is scheme, host and port; nosniff on every answer -----------------

@pytest.fixture
def server(tmp_path: Path):
    api = ApiServer(str(tmp_path / "state.db"), virtual_clock=True, idle_timeout=30.0).start()
    yield api
    api.stop()


CM = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}).encode()


def exchange(port: int, data: bytes) -> tuple[int, dict[str, str], bytes, bytes]:
    """Send raw bytes; (status, headers, body, what follows the answer: b"" once closed)."""
    with socket.create_connection(("127.0.0.1", port), timeout=CEILING_S) as sock:
        sock.sendall(data)
        response = http.client.HTTPResponse(sock)
        response.begin()
        body = response.read()
        headers = {k.lower(): v for k, v in response.getheaders()}
        after = sock.recv(16) if headers.get("connection") == "close" else b""
    return response.status, headers, body, after


def write_from(port: int, host: str, origin: str) -> tuple[int, dict]:
    """A POST with no Content-Type (a browser sends it without a preflight)."""
    host = host.replace("P", str(port))
    origin = origin.replace("P+1", str(port + 1)).replace("P", str(port))
    status, _, body, _ = exchange(port, (
        f"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: {host}\r\n"
        f"Origin: {origin}\r\nContent-Length: {len(CM)}\r\n\r\n").encode() + CM)
    return status, json.loads(body)


@pytest.mark.parametrize("host,origin,status", [
    ("127.0.0.1:P", "http://127.0.0.1:P+1", 403),
    ("localhost:P", "http://localhost:3000", 403),
    ("localhost:P", "https://localhost:P", 403),
    ("localhost:P", "http://localhost", 403),
    ("localhost:P", "null", 403),
    ("localhost:P", "http://localhost:P/path", 403),
    ("localhost", "http://localhost:8080", 403),
    ("127.0.0.1:P", "http://127.0.0.1:P", 201),
    ("LOCALHOST:P", "http://localhost:P", 201),
    ("localhost:80", "http://localhost", 201),
    ("localhost", "http://localhost:80", 201),
    ("[::1]:P", "http://[::1]:P", 201),
], ids=["other-port", "dev-server-port", "other-scheme", "default-port-vs-P", "null-origin",
        "origin-with-a-path", "port-vs-default", "same-origin", "host-case", "default-port-80",
        "explicit-80", "ipv6-same-origin"])
def test_an_origin_is_scheme_host_and_port(server, host, origin, status):
    code, answer = write_from(server.port, host, origin)
    assert code == status, answer
    if status == 403:
        assert answer["reason"] == "Forbidden" and "cross-origin write" in answer["message"]


def test_a_configured_cors_origin_may_still_write(tmp_path: Path):
    api = ApiServer(str(tmp_path / "state.db"), virtual_clock=True, idle_timeout=30.0,
                    cors_origins=(r"^http://localhost:3000$",)).start()
    try:
        assert write_from(api.port, "localhost:P", "http://localhost:3000")[0] == 201
        assert write_from(api.port, "localhost:P", "http://localhost:3001")[0] == 403
    finally:
        api.stop()


@pytest.mark.parametrize("request_bytes,status", [
    (b"GET /version HTTP/1.1\r\nHost: localhost\r\n\r\n", 200),
    (b"GET /api/v1/namespaces/default/configmaps/%3Cscript%3E HTTP/1.1\r\nHost: localhost\r\n\r\n", 404),
    (b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: localhost\r\n"
     b"Content-Type: application/json\r\nContent-Length: 9\r\n\r\n<script>x", 400),
    (b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: localhost\r\n"
     b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(CM), CM), 201),
    (b"GET /api/v1/nodes HTTP/1.1\r\nHost: evil.example\r\n\r\n", 403),
    (b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: localhost\r\n"
     b"Content-Length: -1\r\n\r\n", 400),
    (b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n", 200),
], ids=["version", "not-found-echoing-a-name", "bad-json", "created-object", "foreign-host",
        "unparsable-head", "healthz"])
def test_every_answer_says_nosniff(server, request_bytes, status):
    code, headers, _, _ = exchange(server.port, request_bytes)
    assert code == status
    assert headers.get("x-content-type-options") == "nosniff"


# ---- chunk sizes (finding 7) ---------------------------------------------------------------------

HEAD = (b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")


@pytest.mark.parametrize("chunk_size,status,message", [
    (b"FFFFFFFFFFFFFFFFFFFF", 400, "http chunk length too large"),
    (b"10000000000000000", 400, "http chunk length too large"),
    (b"FFFFFFFFFFFFFFFF", 413, "Request entity too large: limit is 3145728"),
    (b"FFFFFFFF", 413, "Request entity too large: limit is 3145728"),
    (b"300001", 413, "Request entity too large: limit is 3145728"),
], ids=["20-hex-digits", "2^64", "2^64-1", "4GiB", "limit+1"])
def test_a_chunk_no_body_could_have_is_answered_at_once_and_closed(server, chunk_size, status,
                                                                   message):
    code, headers, body, after = exchange(server.port, HEAD + chunk_size + b"\r\n")
    answer = json.loads(body)
    assert (code, answer["code"]) == (status, status) and answer["message"] == message
    assert headers["connection"] == "close" and after == b""
    listed = exchange(server.port, b"GET /api/v1/namespaces/default/configmaps HTTP/1.1\r\n"
                                   b"Host: localhost\r\nConnection: close\r\n\r\n")
    assert listed[0] == 200 and json.loads(listed[2])["items"] == []


def test_a_chunk_at_the_limit_is_still_read(server):
    """The bound is the body limit: a small chunked upload is created as before."""
    body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(CM), CM)
    code, _, answer, _ = exchange(server.port, HEAD + body)
    assert code == 201 and json.loads(answer)["metadata"]["name"] == "c"


# ---- every write path of a ConfigMap goes through the same admission ------------------------

def _write(port: int, method: str, path: str, body: object, content_type: str) -> tuple[int, dict]:
    data = json.dumps(body).encode()
    status, _, answer, _ = exchange(port, (
        f"{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n").encode() + data)
    return status, json.loads(answer)


OVER = sharing("timeSlicing", 1000000000)


@pytest.mark.parametrize("method,content_type,body", [
    ("PATCH", "application/merge-patch+json", {"data": {"any": OVER}}),
    ("PATCH", "application/strategic-merge-patch+json", {"data": {"any": OVER}}),
    ("PATCH", "application/json-patch+json", [{"op": "replace", "path": "/data/any", "value": OVER}]),
    ("PUT", "application/json", configmap("time-slicing-config", OVER)),
], ids=["merge-patch", "strategic-merge-patch", "json-patch", "update"])
def test_an_update_over_a_bound_is_refused_and_changes_nothing(server, method, content_type, body):
    path = CMS + "/time-slicing-config"
    assert _write(server.port, "POST", CMS, configmap("time-slicing-config", sharing("timeSlicing", 4)),
                  "application/json")[0] == 201
    status, answer = _write(server.port, method, path, body, content_type)
    assert status == 422 and "number of replicas must be <= 256, got 1000000000" in answer["message"]
    stored = exchange(server.port, f"GET {path} HTTP/1.1\r\nHost: localhost\r\n"
                                   "Connection: close\r\n\r\n".encode())
    assert "replicas: 4" in json.loads(stored[2])["data"]["any"]
