"""``pods/portforward``: kubectl port-forward's streams, as the kubelet pairs and serves them.

The upgrade (``server.portforward_io``) is refused with a Status before anything is streamed
when the pod does not exist (404 ``pods "x" not found``) or has no node (400 ``pod x does not
have a host assigned``, kube-apiserver pkg/registry/core/pod strategy.go
``PortForwardLocation``), or when the client offers no ``portforward.k8s.io`` protocol (403,
apimachinery httpstream.go ``Handshake``). :func:`resolve_target` reads the pod once, through
the cluster worker as exec does.

Then, per forwarded connection, kubectl opens two SPDY streams carrying the headers
``streamType`` (``error`` or ``data``), ``port`` and ``requestID`` (client-go
tools/portforward/portforward.go ``handleConnection``). :class:`PortForwardSession` pairs them
as the kubelet does (pkg/kubelet/cri/streaming/portforward/httpstream.go): a stream without a
valid ``port`` or ``streamType`` is reset; a request without ``requestID`` is paired by stream
id (error ``n``, data ``n+2``); a second stream of one type for a request is reset; a pair not
complete within :data:`STREAM_CREATION_TIMEOUT_S` gets ``timed out waiting for streams``.

What answers on a complete pair: gpusched runs no processes, so only one port is simulated,
dcgm-exporter's metrics port in a dcgm-exporter pod (``metrics.exporter_pod``). Its data
stream is read as one HTTP/1.1 request: ``/metrics`` gets ``200`` with the node's DCGM metrics,
any other path ``404 page not found`` (Go's ``http.NotFound``), a request that is not HTTP
``400 Bad Request``, and the response ends the stream (``Connection: close``). Every other pod
or port gets one line on the error stream, in the kubelet's words (``error forwarding port P
to pod NAME, uid UID: ...``) naming gpusched's limit; kubectl prints it.

Neighbours: ``server.spdy`` (frames), ``server.portforward_io`` (the transports, timers and
the worker reads), ``metrics.exporter_pod``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from gpusched.errors import GpuschedError, NotFoundError
from gpusched.objects.digits import is_digits
from gpusched.server import spdy

log = logging.getLogger(__name__)
PROTOCOL = "portforward.k8s.io"               # client-go PortForwardProtocolV1Name
TUNNEL_PROTOCOL = "SPDY/3.1+" + PROTOCOL       # apimachinery portforward.WebsocketsSPDYTunnelingPrefix
STREAM_CREATION_TIMEOUT_S = 30.0               # kubelet DefaultStreamCreationTimeout
MAX_REQUEST_HEAD = 64 * 1024
ERROR, DATA = "error", "data"


class _BadRequest(GpuschedError):
    code, reason = 400, "BadRequest"


@dataclass(frozen=True)
class ForwardTarget:
    """The pod read at the upgrade: who it is, where, and the one port gpusched serves in it."""

    namespace: str
    name: str
    uid: str
    node: str
    running: bool
    metrics_port: int | None          # dcgm-exporter's listen port; None: not an exporter pod
    pod: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)


def resolve_target(view: Any, namespace: str, name: str) -> ForwardTarget:
    """The pod to forward to, read from ``view``; NotFoundError / 400 as kube-apiserver refuses."""
    from gpusched.metrics.exporter_pod import exporter_container, listen_port
    pod = view.get("Pod", name, namespace)
    if pod is None:
        raise NotFoundError("pods", name)
    node = str((pod.get("spec") or {}).get("nodeName") or "")
    if not node:
        raise _BadRequest(f"pod {name} does not have a host assigned")
    container = exporter_container(pod)
    meta = pod.get("metadata") or {}
    return ForwardTarget(namespace, name, str(meta.get("uid", "")), node,
                         (pod.get("status") or {}).get("phase") == "Running",
                         listen_port(container) if container is not None else None, pod)


def negotiate(offered: list[str]) -> str | None:
    """The refusal of an SPDY upgrade's ``X-Stream-Protocol-Version`` values, None when
    ``portforward.k8s.io`` is among them (apimachinery httpstream.go ``Handshake``)."""
    if not offered:
        return "unable to upgrade: X-Stream-Protocol-Version is required"
    if PROTOCOL in offered:
        return None
    return (f"unable to upgrade: unable to negotiate protocol: client supports [{' '.join(offered)}], "
            f"server accepts [{PROTOCOL}]")


def spdy_upgrade(worker: Any, req: Any, namespace: str, name: str) -> ForwardTarget | Any:
    """The target of a ``POST .../portforward`` SPDY upgrade, or the Status refusing it: the pod
    (kube-apiserver), then the protocol and the upgrade headers (the kubelet's Handshake and
    UpgradeResponse)."""
    from gpusched.server.http import error_response, status_response
    try:
        target = worker.read(lambda view: resolve_target(view, namespace, name))
    except GpuschedError as err:
        return error_response(err)
    offered = [p.strip() for p in req.headers.get("x-stream-protocol-version", "").split(",") if p.strip()]
    refusal = negotiate(offered)
    if refusal is not None:
        response = status_response(403 if offered else 400, refusal)
        response.headers["X-Accepted-Stream-Protocol-Versions"] = PROTOCOL
        return response
    if "upgrade" not in req.headers.get("connection", "").lower() or \
            "spdy/3.1" not in req.headers.get("upgrade", "").lower():
        return status_response(400, "Upgrade request required: port-forward speaks SPDY/3.1 over an "
                               f"HTTP upgrade, or a WebSocket with the subprotocol {TUNNEL_PROTOCOL}")
    return target


def websocket_upgrade(worker: Any, namespace: str, name: str, offered: list[str]) -> ForwardTarget | Any:
    """The target of a port-forward WebSocket offering ``offered`` subprotocols, or the Status
    refusing it (kube-apiserver's tunneling handler takes ``SPDY/3.1+*.k8s.io`` protocols,
    apiserver pkg/util/proxy/streamtunnel.go ``spdyProtocolsFromWebsocketProtocols``)."""
    from gpusched.server.http import error_response, status_response
    try:
        target = worker.read(lambda view: resolve_target(view, namespace, name))
    except GpuschedError as err:
        return error_response(err)
    tunneled = [p[len("SPDY/3.1+"):] for p in offered if p.startswith("SPDY/3.1+") and p.endswith(".k8s.io")]
    if not tunneled:
        return status_response(400, "unable to upgrade: gpusched serve forwards ports over SPDY/3.1: a "
                               f"WebSocket must offer the subprotocol {TUNNEL_PROTOCOL} (kubectl 1.31 "
                               "and later), or use an HTTP upgrade to SPDY/3.1")
    refusal = negotiate(tunneled)
    return status_response(403, refusal) if refusal is not None else target


@dataclass(frozen=True)
class Fetch:
    """A complete HTTP request on a pair's data stream: answer it with :meth:`PortForwardSession.answer`."""

    request_id: str
    method: str
    path: str


@dataclass
class Feedback:
    """What one feed asks of the transport: metrics to read, pairs to time out."""

    fetches: list[Fetch] = field(default_factory=list)
    new_pairs: list[str] = field(default_factory=list)
    closed: bool = False


@dataclass
class _Pair:
    request_id: str
    port: int
    error: int | None = None
    data: int | None = None
    started: bool = False
    asked: bool = False                 # its one request was read: later bytes are ignored
    head: bytearray = field(default_factory=bytearray)


class PortForwardSession:
    """The kubelet's side of one port-forward connection over a :class:`spdy.SpdySession`."""

    def __init__(self, target: ForwardTarget) -> None:
        self.target = target
        self.spdy = spdy.SpdySession()
        self._pairs: dict[str, _Pair] = {}
        self._by_stream: dict[int, _Pair] = {}

    def feed(self, data: bytes) -> Feedback:
        """Bytes from the client; SpdyError when they are not SPDY/3.1 (close the connection)."""
        feedback = Feedback()
        for event in self.spdy.feed(data):
            if isinstance(event, spdy.NewStream):
                self._new_stream(event, feedback)
            elif isinstance(event, spdy.StreamData):
                self._stream_data(event, feedback)
            elif isinstance(event, spdy.StreamReset):
                self._drop(self._by_stream.get(event.stream_id))
            else:
                feedback.closed = True
        return feedback

    def take_output(self) -> bytes:
        return self.spdy.take_output()

    # ---- pairing (kubelet httpstream.go) -----------------------------------------------------

    def _new_stream(self, event: spdy.NewStream, feedback: Feedback) -> None:
        headers = {name: values[0] for name, values in event.headers.items()}
        port, kind = headers.get("port", ""), headers.get("streamtype", "")
        if not (is_digits(port) and len(port) <= 5 and 0 < int(port) < 65536) or kind not in (ERROR, DATA):
            log.debug("port-forward stream %d refused: port %r, streamType %r", event.stream_id, port, kind)
            self.spdy.refuse(event.stream_id)
            return
        request_id = headers.get("requestid") or str(event.stream_id - (2 if kind == DATA else 0))
        pair = self._pairs.get(request_id)
        if pair is None:
            if len(self._pairs) >= spdy.MAX_STREAMS // 2:
                self.spdy.refuse(event.stream_id, spdy.REFUSED_STREAM)
                return
            pair = self._pairs[request_id] = _Pair(request_id, int(port))
            feedback.new_pairs.append(request_id)
        if getattr(pair, kind) is not None:         # "error stream already assigned"
            self.spdy.refuse(event.stream_id)
            return
        setattr(pair, kind, event.stream_id)
        self._by_stream[event.stream_id] = pair
        self.spdy.reply(event.stream_id)
        if pair.error is not None and pair.data is not None:
            self._start(pair)

    def _start(self, pair: _Pair) -> None:
        pair.started = True
        refusal = self._refusal(pair.port)
        if refusal is not None:
            t = self.target
            self._finish(pair, error=f"error forwarding port {pair.port} to pod {t.name}_{t.namespace}, "
                                    f"uid {t.uid}: {refusal}")

    def _refusal(self, port: int) -> str | None:
        t = self.target
        where = f"port {port} of pod {t.namespace}/{t.name}"
        if t.metrics_port is None:
            return (f"gpusched: {where} is not simulated (only a dcgm-exporter pod's metrics port "
                    "answers: gpusched runs no processes)")
        if port != t.metrics_port:
            return f"gpusched: {where} is not simulated (only dcgm-exporter's metrics port {t.metrics_port} is)"
        if not t.running:
            return f"gpusched: pod {t.namespace}/{t.name} is not running"
        return None

    def expire(self, request_id: str) -> None:
        """The stream-creation timeout of ``request_id``: an incomplete pair is ended."""
        pair = self._pairs.get(request_id)
        if pair is not None and not pair.started:
            self._finish(pair, error=f"(request={request_id}) timed out waiting for streams")

    # ---- the data stream: one HTTP/1.1 request -------------------------------------------

    def _stream_data(self, event: spdy.StreamData, feedback: Feedback) -> None:
        pair = self._by_stream.get(event.stream_id)
        if pair is None or event.stream_id != pair.data or not pair.started or pair.asked:
            return                                   # the error stream carries nothing from kubectl
        if len(pair.head) + len(event.data) > MAX_REQUEST_HEAD:
            self._finish(pair, response=http_response(431, b"431 Request Header Fields Too Large"))
            return
        pair.head += event.data
        end = pair.head.find(b"\r\n\r\n")
        if end < 0:
            if event.fin:
                self._finish(pair)                   # closed before a request: nothing to say
            return
        line = bytes(pair.head[:pair.head.find(b"\r\n")]).decode("latin-1")
        parts = line.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1.") or not parts[1].startswith("/"):
            self._finish(pair, response=http_response(400, b"400 Bad Request"))
            return
        pair.asked = True
        feedback.fetches.append(Fetch(pair.request_id, parts[0], parts[1]))

    def answer(self, request_id: str, response: bytes) -> None:
        """Send ``response`` on the pair's data stream and end both streams."""
        pair = self._pairs.get(request_id)
        if pair is not None:
            self._finish(pair, response=response)

    def _finish(self, pair: _Pair, error: str = "", response: bytes = b"") -> None:
        if pair.error is not None:
            self.spdy.send(pair.error, error.encode(), fin=True)
        if pair.data is not None:
            self.spdy.send(pair.data, response, fin=True)
        self._drop(pair)

    def _drop(self, pair: _Pair | None) -> None:
        if pair is None:
            return
        self._pairs.pop(pair.request_id, None)
        for stream_id in (pair.error, pair.data):
            if stream_id is not None:
                self._by_stream.pop(stream_id, None)


REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 431: "Request Header Fields Too Large",
           500: "Internal Server Error"}


def http_response(status: int, body: bytes, content_type: str = "text/plain; charset=utf-8",
                  head_only: bool = False) -> bytes:
    """An HTTP/1.1 response that closes the connection (how dcgm-exporter's Go server answers,
    headers in its canonical form)."""
    head = (f"HTTP/1.1 {status} {REASONS.get(status, '')}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    return head if head_only else head + body


def metrics_response(fetch: Fetch, body: bytes | None) -> bytes:
    """The answer to ``fetch`` on dcgm-exporter's port: ``body`` is the node's metrics."""
    from gpusched.metrics.dcgm import CONTENT_TYPE
    path = fetch.path.split("?", 1)[0]
    head_only = fetch.method == "HEAD"
    if path != "/metrics" or body is None:
        return http_response(404, b"404 page not found\n", head_only=head_only)
    return http_response(200, body, CONTENT_TYPE, head_only=head_only)
