"""``pods/portforward`` on the wire against ``gpusched serve``: upgrades refused with a Status,
malformed SPDY frames closing the connection without a traceback in serve's log, and serve
answering on afterwards.

Refusals as kube-apiserver and the kubelet give them: a missing pod 404, a pod without a node
400 ``pod x does not have a host assigned`` (pkg/registry/core/pod/strategy.go
``PortForwardLocation``), a protocol other than ``portforward.k8s.io`` 403 (apimachinery
httpstream.go ``Handshake``), a WebSocket without a ``SPDY/3.1+*.k8s.io`` subprotocol 400
(apiserver pkg/util/proxy/streamtunnel.go takes only those).
"""

from __future__ import annotations

import json
import socket
import struct
import zlib

import pytest

from gpusched.server import spdy
from tests.conftest import CEILING_S
from tests.server.conftest import Served, start_serve, stops_cleanly

PATH = "/api/v1/namespaces/default/pods/{pod}/portforward"
SPDY_HEADERS = {"Connection": "Upgrade", "Upgrade": "SPDY/3.1",
                "X-Stream-Protocol-Version": "portforward.k8s.io", "Content-Length": "0"}
WEBSOCKET_HEADERS = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
                     "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}


@pytest.fixture
def served(tmp_path):
    """serve with a pod bound to a node (``placed``) and one never scheduled (``pending``); at
    the end serve must stop cleanly with no traceback in its log."""
    served = start_serve(tmp_path, "--virtual-clock")
    for name, spec in (("placed", {"nodeName": "gpu-node-1"}), ("pending", {"schedulerName": "nobody"})):
        served.json("/api/v1/namespaces/default/pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {**spec, "containers": [{"name": "c", "image": "nvcr.io/nvidia/k8s/dcgm-exporter:4"}]}})
    yield served
    stops_cleanly(served.process)
    assert "Traceback" not in served.process.stop_stderr, served.process.stop_stderr


def connect(served: Served, method: str, pod: str, headers: dict[str, str]) -> tuple[socket.socket, str, bytes]:
    """Send the request head; returns the socket, the response head and what followed it."""
    host, port = served.host_port
    sock = socket.create_connection((host, port), timeout=CEILING_S)
    lines = [f"{method} {PATH.format(pod=pod)} HTTP/1.1", f"Host: {host}:{port}",
             *(f"{k}: {v}" for k, v in headers.items())]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    received = b""
    while b"\r\n\r\n" not in received:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before a response head: {received!r}"
        received += chunk
    head, _, rest = received.partition(b"\r\n\r\n")
    return sock, head.decode("latin-1"), rest


def read_to_end(sock: socket.socket, first: bytes = b"") -> bytes:
    data = first
    while chunk := sock.recv(65536):
        data += chunk
    return data


@pytest.mark.parametrize("method,pod,headers,code,message", [
    ("POST", "nope", SPDY_HEADERS, 404, 'pods "nope" not found'),
    ("POST", "pending", SPDY_HEADERS, 400, "pod pending does not have a host assigned"),
    ("POST", "placed", {**SPDY_HEADERS, "X-Stream-Protocol-Version": "v4.channel.k8s.io"}, 403,
     "unable to upgrade: unable to negotiate protocol: client supports [v4.channel.k8s.io], "
     "server accepts [portforward.k8s.io]"),
    ("POST", "placed", {k: v for k, v in SPDY_HEADERS.items() if k != "X-Stream-Protocol-Version"}, 400,
     "unable to upgrade: X-Stream-Protocol-Version is required"),
    ("POST", "placed", {"X-Stream-Protocol-Version": "portforward.k8s.io", "Content-Length": "0"}, 400,
     "Upgrade request required"),
    ("GET", "placed", {**WEBSOCKET_HEADERS, "Sec-WebSocket-Protocol": "v4.channel.k8s.io"}, 400,
     "a WebSocket must offer the subprotocol SPDY/3.1+portforward.k8s.io"),
    ("GET", "placed", {**WEBSOCKET_HEADERS, "Sec-WebSocket-Protocol": "SPDY/3.1+v4.channel.k8s.io"}, 403,
     "unable to negotiate protocol: client supports [v4.channel.k8s.io]"),
    ("GET", "nope", {**WEBSOCKET_HEADERS, "Sec-WebSocket-Protocol": "SPDY/3.1+portforward.k8s.io"}, 404,
     'pods "nope" not found'),
], ids=["spdy-missing-pod", "spdy-no-node", "spdy-other-protocol", "spdy-no-protocol", "no-upgrade",
        "websocket-exec-subprotocol", "websocket-tunnel-other-protocol", "websocket-missing-pod"])
def test_refused_upgrades(served, method, pod, headers, code, message):
    sock, head, rest = connect(served, method, pod, {**headers, "Connection": headers.get("Connection", "close")})
    with sock:
        assert head.split(" ")[1] == str(code), head
        length = int(next(line.split(":")[1] for line in head.splitlines() if line.lower().startswith("content-length")))
        while len(rest) < length:
            rest += sock.recv(65536)
    assert message in json.loads(rest[:length])["message"]


def syn_stream(stream_id: int, block: bytes) -> bytes:
    return spdy.client_frame(spdy.SYN_STREAM, struct.pack(">IIBB", stream_id, 0, 0, 0) + block)


def compressed(raw: bytes) -> bytes:
    deflate = zlib.compressobj(zlib.Z_BEST_COMPRESSION, zdict=spdy.DICTIONARY)
    return deflate.compress(raw) + deflate.flush(zlib.Z_SYNC_FLUSH)


@pytest.mark.parametrize("frames", [
    struct.pack(">HHI", 0x8002, 1, 10) + b"\0" * 10,
    spdy.client_frame(5, b""),
    struct.pack(">HHI", 0x8003, 1, 0xFFFFFF),
    struct.pack(">II", 1, 0xFFFFFF),
    syn_stream(1, b"not zlib at all"),
    syn_stream(1, compressed(b"\0" * (32 << 20))),
    syn_stream(1, compressed(struct.pack(">I", 1_000_000))),
    syn_stream(1, compressed(struct.pack(">II", 1, 1 << 30))),
    spdy.data_frame(0, b"x"),
    spdy.client_frame(spdy.PING, struct.pack(">I", 0)),
    b"GET / HTTP/1.1\r\n\r\n",
], ids=["spdy-version-2", "unknown-control-type", "control-frame-16mib", "data-frame-16mib",
        "header-block-not-zlib", "header-block-bomb", "a-million-headers", "header-length-1gib",
        "data-on-stream-zero", "ping-zero", "http-instead-of-spdy"])
def test_malformed_frames_close_the_connection(served, frames):
    sock, head, rest = connect(served, "POST", "placed", SPDY_HEADERS)
    with sock:
        assert head.startswith("HTTP/1.1 101 Switching Protocols") and "Upgrade: SPDY/3.1" in head
        sock.sendall(frames)
        assert read_to_end(sock, rest) == b""                # closed, nothing said
    assert served.request("GET", "/version")[0] == 200      # serve answers on


def test_a_spdy_session_on_the_wire(served):
    """What kubectl 1.20 does per connection, by hand: error and data streams for port 9400 of
    a dcgm-exporter pod that is not running: SYN_REPLYs, then the kubelet's line on the error
    stream (the pod's node does not exist, so it never runs)."""
    sock, head, rest = connect(served, "POST", "placed", SPDY_HEADERS)
    deflate = zlib.compressobj(zlib.Z_BEST_COMPRESSION, zdict=spdy.DICTIONARY)

    def block(kind: str) -> bytes:
        raw = spdy.encode_header_block({"streamtype": [kind], "port": ["9400"], "requestid": ["0"]})
        return deflate.compress(raw) + deflate.flush(zlib.Z_SYNC_FLUSH)

    with sock:
        sock.sendall(syn_stream(1, block("error")) + spdy.client_frame(spdy.PING, struct.pack(">I", 1))
                     + syn_stream(3, block("data")) + spdy.client_frame(spdy.GOAWAY, b"\0" * 8))
        data = read_to_end(sock, rest)
    assert data.count(struct.pack(">HH", 0x8003, spdy.SYN_REPLY)) == 2
    assert struct.pack(">HHII", 0x8003, spdy.PING, 4, 1) in data
    assert b"gpusched: pod default/placed is not running" in data


def test_serve_stops_cleanly_with_a_session_open(tmp_path):
    """SIGTERM ends an open port-forward session (uvicorn's graceful stop waits for every
    connection; a taken-over one leaves the set when its session ends)."""
    served = start_serve(tmp_path, "--virtual-clock")
    served.json("/api/v1/namespaces/default/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "placed"},
        "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "busybox"}]}})
    sock, head, rest = connect(served, "POST", "placed", SPDY_HEADERS)
    with sock:
        assert head.startswith("HTTP/1.1 101")
        stops_cleanly(served.process)
        assert read_to_end(sock, rest) == b""
    assert "Traceback" not in served.process.stop_stderr


class Tunnel:
    """A WebSocket client (wsproto) on the port-forward tunnel, as kubectl 1.32 opens it."""

    def __init__(self, served: Served, pod: str) -> None:
        from wsproto import ConnectionType, WSConnection
        from wsproto.events import Request
        host, port = served.host_port
        self.ws = WSConnection(ConnectionType.CLIENT)
        self.sock = socket.create_connection((host, port), timeout=CEILING_S)
        self.sock.sendall(self.ws.send(Request(host=f"{host}:{port}", target=PATH.format(pod=pod),
                                               subprotocols=["SPDY/3.1+portforward.k8s.io"])))
        self.events: list = []
        self.read_until(lambda: self.events, "the handshake's answer")
        assert type(self.events[0]).__name__ == "AcceptConnection", self.events
        assert self.events[0].subprotocol == "SPDY/3.1+portforward.k8s.io"

    def send(self, event) -> None:
        self.sock.sendall(self.ws.send(event))

    def read_until(self, done, what: str) -> None:
        while not done():
            chunk = self.sock.recv(65536)
            if not chunk:
                raise AssertionError(f"connection closed before {what}; events: {self.events}")
            self.ws.receive_data(chunk)
            self.events += list(self.ws.events())

    def closed(self) -> bool:
        return any(type(e).__name__ == "CloseConnection" for e in self.events)

    def received(self) -> bytes:
        return b"".join(e.data for e in self.events if type(e).__name__ == "BytesMessage")


@pytest.mark.parametrize("message", [
    "bytes:" + "not spdy at all",
    "text:" + "a text message",
], ids=["malformed-spdy-in-a-binary-message", "text-message"])
def test_tunnel_closes_on_bad_messages(served, message):
    """tunneling_connection.go reads binary messages only; a malformed frame in one closes the
    tunnel as it closes a plain SPDY connection (normal closure, no traceback)."""
    from wsproto.events import BytesMessage, TextMessage
    tunnel = Tunnel(served, "placed")
    kind, _, text = message.partition(":")
    tunnel.send(BytesMessage(data=b"\x80\x02" + text.encode()) if kind == "bytes" else TextMessage(data=text))
    tunnel.read_until(tunnel.closed, "the server's close")
    tunnel.sock.close()
    assert served.request("GET", "/version")[0] == 200


def test_tunnel_carries_the_session(served):
    """The same streams as on the wire, in binary messages: SYN_REPLYs and the kubelet's line."""
    from wsproto.events import BytesMessage
    tunnel = Tunnel(served, "placed")
    deflate = zlib.compressobj(zlib.Z_BEST_COMPRESSION, zdict=spdy.DICTIONARY)
    frames = b""
    for stream_id, kind in ((1, "error"), (3, "data")):
        raw = spdy.encode_header_block({"streamtype": [kind], "port": ["9400"], "requestid": ["0"]})
        frames += syn_stream(stream_id, deflate.compress(raw) + deflate.flush(zlib.Z_SYNC_FLUSH))
    tunnel.send(BytesMessage(data=frames[:7]))                # frames split across messages
    tunnel.send(BytesMessage(data=frames[7:]))
    tunnel.read_until(lambda: b"is not running" in tunnel.received(), "the error line")
    assert tunnel.received().count(struct.pack(">HH", 0x8003, spdy.SYN_REPLY)) == 2
    tunnel.sock.close()
