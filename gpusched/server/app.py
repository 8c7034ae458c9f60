"""``ApiServer``: the HTTP server behind ``gpusched serve`` (threaded stdlib ``http.server``).

Routing, in order:

1. authentication: with a token configured, every request needs ``Authorization: Bearer
   <token>`` (compared in constant time), else 401 Status;
2. routes other modules registered with :meth:`ApiServer.register_route` (the web page mounts
   ``/`` and its static files so), longest prefix first;
3. health (``/healthz``, ``/readyz``, ``/livez``), ``/version``, discovery, OpenAPI,
   ``/metrics`` (``gpusched.metrics.exposition.render_cluster`` when that module exists);
4. resources (``server.resources``); anything else is a 404 Status.

Paths are normalised (kr8s sends trailing slashes). Responses use HTTP/1.1 keep-alive; watch
streams use chunked transfer encoding; ``pods/exec`` switches the connection to WebSocket
(``server.container``). No endpoint executes anything: exec answers are simulated.

Connections: the TLS handshake runs in the connection's own thread with a deadline, never in
the accept loop, so a client that connects and sends nothing delays nobody; a connection idle
(or sending its headers or body slower) than ``idle_timeout`` is closed; the listen backlog is
1,024. Bodies: kube-apiserver's 3 MiB write limit (413 ``Request entity too large: limit is
3145728``), ``Content-Length`` must be a non-negative integer (else 400), chunked uploads are
read up to the same limit. Browsers: a write carrying a foreign ``Origin`` or a content type a
cross-site form can send (``text/plain``, ``application/x-www-form-urlencoded``,
``multipart/form-data``) is refused, and on a loopback bind the ``Host`` header must name this
machine (``localhost``, ``127.0.0.1``, ``::1``), so neither a cross-site request nor DNS
rebinding can write to the cluster.

Neighbours: ``server.worker`` (the cluster thread), ``server.feed`` (watch), ``server.resources``,
``server.discovery``, ``server.security`` (TLS); started by ``cli.serve``.
"""

from __future__ import annotations

import hmac
import logging
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from gpusched.errors import GpuschedError
from gpusched.server import discovery
from gpusched.server.feed import DEFAULT_CAPACITY, ChangeFeed
from gpusched.server.http import (Handler, Request, Response, error_response, json_response,
                                  normalise_path, status_response, warning_header)
from gpusched.server.resources import ResourceApi, parse_target
from gpusched.server.security import is_loopback
from gpusched.server.tables import ColumnSource
from gpusched.server.worker import ClusterWorker

log = logging.getLogger(__name__)
MAX_BODY_BYTES = 3 * 1024 * 1024        # kube-apiserver's MaxRequestBodyBytes for writes
HEALTH = ("/healthz", "/readyz", "/livez")
IDLE_TIMEOUT_S = 60.0                   # per read/write on a connection, handshake included
LISTEN_BACKLOG = 1024
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
FORM_CONTENT_TYPES = ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data")
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
PROTOBUF = "application/vnd.kubernetes.protobuf"


class ApiServer:
    """The API server; ``start()`` serves in background threads, ``stop()`` ends it."""

    def __init__(self, state_path: str, host: str = "127.0.0.1", port: int = 0,
                 token: str | None = None, tls: ssl.SSLContext | None = None,
                 virtual_clock: bool = False, columns: ColumnSource | None = None,
                 watch_capacity: int = DEFAULT_CAPACITY, idle_timeout: float = IDLE_TIMEOUT_S,
                 wall_clock: Any = None) -> None:
        self.token = token
        self.feed = ChangeFeed(state_path, watch_capacity)
        self.worker = ClusterWorker(state_path, virtual_clock, on_commit=self.feed.poke,
                                    wall_clock=wall_clock)
        self.resources = ResourceApi(self.worker, self.feed, columns)
        self.routes: list[tuple[str, str, Handler]] = []
        self.httpd = _Server((host, port), _RequestHandler)
        self.httpd.app = self
        self.httpd.tls = tls                   # handshakes happen per connection (_Server)
        self.httpd.idle_timeout = idle_timeout
        self.loopback = is_loopback(host)
        self.scheme = "https" if tls is not None else "http"
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def url(self) -> str:
        host = self.httpd.server_address[0]
        host = f"[{host}]" if ":" in str(host) else host
        return f"{self.scheme}://{host}:{self.port}"

    def register_route(self, method: str, path_prefix: str, handler: Handler) -> None:
        """Serve ``method`` (``"*"`` for any) on paths equal to or under ``path_prefix`` with
        ``handler(Request) -> Response``; registered routes win over the API's own."""
        self.routes.append((method.upper(), path_prefix.rstrip("/") or "/", handler))
        self.routes.sort(key=lambda r: -len(r[1]))

    def start(self) -> "ApiServer":
        self.worker.start()
        self.feed.start()
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="gpusched-http",
                                        kwargs={"poll_interval": 0.2}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.feed.close()        # ends open watches first
        self.httpd.shutdown()
        self.httpd.server_close()
        self.worker.stop()

    # ---- routing -----------------------------------------------------------------------------

    def authorized(self, headers: dict[str, str]) -> bool:
        if self.token is None:
            return True
        scheme, _, given = headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(),
                                                                  self.token.encode())

    def refuse_browser_writes(self, req: Request) -> Response | None:
        """403/415 for requests a foreign web page (or a DNS-rebound name) could make; None if fine."""
        host = _host_name(req.headers.get("host", ""))
        if self.loopback and host and host not in LOOPBACK_HOSTS + (str(self.httpd.server_address[0]),):
            return status_response(403, f'forbidden: the Host header "{req.headers.get("host")}" does not '
                                        "name this server (use localhost or 127.0.0.1)", "Forbidden")
        if req.method not in WRITE_METHODS:
            return None
        origin = req.headers.get("origin")
        if origin is not None and _host_name(origin.partition("://")[2]) != host:
            return status_response(403, f'forbidden: cross-origin write from "{origin}" refused',
                                   "Forbidden")
        if req.content_type == PROTOBUF and req.method in ("POST", "PUT"):
            return status_response(415, "the body of the request was in an unknown format - accepted "
                                        "media types include: application/json, application/yaml "
                                        "(gpusched serve does not read protobuf bodies, which kubectl's "
                                        "create generators send; use kubectl apply -f or create -f)",
                                   "UnsupportedMediaType")
        if req.content_type in FORM_CONTENT_TYPES:
            return status_response(415, "the body of the request was in an unknown format - "
                                        "accepted media types include: application/json, application/yaml",
                                   "UnsupportedMediaType")
        return None

    def handle(self, req: Request) -> Response:
        refused = self.refuse_browser_writes(req)
        if refused is not None:
            return refused
        if not self.authorized(req.headers):
            return status_response(401, "Unauthorized", "Unauthorized")
        for method, prefix, handler in self.routes:
            if method in ("*", req.method) and (
                    prefix == "/" or req.path == prefix or req.path.startswith(prefix + "/")):
                if prefix == "/" and req.path != "/" and self._own_path(req.path):
                    continue
                return handler(req)
        try:
            return self._builtin(req)
        except GpuschedError as err:
            return error_response(err)

    @staticmethod
    def _own_path(path: str) -> bool:
        return path.split("/")[1] in ("api", "apis", "openapi", "version", "metrics",
                                      "healthz", "readyz", "livez")

    def _builtin(self, req: Request) -> Response:
        path = req.path
        if path in HEALTH:
            return Response(200, b"ok", "text/plain")
        if path == "/version":
            return json_response(discovery.version())
        if path == "/metrics":
            return self._metrics()
        if path.startswith("/openapi"):
            return self._openapi(path, req.accept)
        if path in ("/api", "/apis"):
            tag = discovery.aggregated_tag(req.accept)
            if tag is not None:
                ctype = discovery.AGGREGATED_V2 if tag == "v2" else discovery.AGGREGATED_V2BETA1
                return json_response(discovery.aggregated(path == "/api", tag), content_type=ctype)
            return json_response(discovery.api_versions() if path == "/api" else discovery.api_groups())
        parts = path.strip("/").split("/")
        if path == "/api/v1" or (parts[0] == "apis" and len(parts) == 3):
            listing = discovery.resource_list("v1" if path == "/api/v1" else f"{parts[1]}/{parts[2]}")
            if listing is not None:
                return json_response(listing)
        if parts[0] == "apis" and len(parts) == 2:
            group = discovery.api_group(parts[1])
            if group is not None:
                return json_response(group)
        target = parse_target(path)
        if target is not None and target.info.kind == "Pod" and target.subresource in (
                "exec", "log", "attach"):
            from gpusched.server.container import handle_container   # pods/exec, pods/log
            return handle_container(self.worker, req, target)
        if target is not None:
            return self.resources.handle(req, target)
        return status_response(404, "the server could not find the requested resource", "NotFound")

    def _openapi(self, path: str, accept: str = "") -> Response:
        if path == "/openapi/v2":
            if "protobuf" in accept:
                return Response(200, discovery.openapi_v2_protobuf(), "application/octet-stream")
            return json_response(discovery.openapi_v2_json())
        if path == "/openapi/v3":
            return json_response(discovery.openapi_root())
        prefix = "/openapi/v3/"
        if path.startswith(prefix):
            rest = path[len(prefix):]
            gv = "v1" if rest == "api/v1" else rest[len("apis/"):] if rest.startswith("apis/") else ""
            document = discovery.openapi_document(gv) if gv else None
            if document is not None:
                return json_response(document)
        return status_response(404, "the server could not find the requested resource", "NotFound")

    def _metrics(self) -> Response:
        from gpusched.metrics.exposition import render_cluster   # imported on first scrape
        content_type, body = self.worker.cluster_call(render_cluster)
        return Response(200, body, content_type)


def _host_name(host_header: str) -> str:
    """``127.0.0.1:6443`` -> ``127.0.0.1``; ``[::1]:6443`` -> ``::1``; lower case."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = LISTEN_BACKLOG
    app: ApiServer
    tls: ssl.SSLContext | None = None
    idle_timeout: float = IDLE_TIMEOUT_S

    def server_bind(self) -> None:
        if ":" in str(self.server_address[0]):
            self.address_family = socket.AF_INET6
            self.socket = socket.socket(self.address_family, self.socket_type)
        super().server_bind()

    def finish_request(self, request: Any, client_address: Any) -> None:
        """In the connection's thread: the TLS handshake (bounded by the idle timeout), then HTTP."""
        if self.tls is None:
            super().finish_request(request, client_address)
            return
        request.settimeout(self.idle_timeout)
        try:
            secure = self.tls.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError) as err:        # silent, slow or not TLS at all
            log.debug("TLS handshake with %s failed: %s", client_address, err)
            return
        try:
            super().finish_request(secure, client_address)
        finally:
            try:
                secure.close()
            except OSError:
                pass


class _TooLarge(Exception):
    """The request body is over MAX_BODY_BYTES (answered 413, connection closed)."""


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:   # noqa: A002 (stdlib signature)
        log.debug("%s %s", self.address_string(), format % args)

    def setup(self) -> None:
        self.timeout = self.server.idle_timeout      # applied to the socket by StreamRequestHandler
        super().setup()

    def _request(self) -> Request:
        path, query = normalise_path(self.path)
        headers = {k.lower(): v for k, v in self.headers.items()}
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = self._read_chunked()
        else:
            raw = headers.get("content-length")
            if raw is not None and not raw.strip().isdigit():
                self.close_connection = True
                raise GpuschedError(f'invalid Content-Length "{raw}": must be a non-negative integer')
            length = int(raw or 0)
            if length > MAX_BODY_BYTES:
                self.close_connection = True             # the body stays unread
                raise _TooLarge()
            body = self.rfile.read(length) if length else b""
        return Request(self.command, path, query, headers, body, self.path.partition("?")[2])

    def _read_chunked(self) -> bytes:
        """A chunked request body (RFC 9112 7.1), refused past the body limit."""
        parts, total = [], 0
        while True:
            line = self.rfile.readline(1024)
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                self.close_connection = True
                raise GpuschedError("invalid chunked request body") from None
            if size < 0:
                self.close_connection = True
                raise GpuschedError("invalid chunked request body")
            total += size
            if total > MAX_BODY_BYTES:
                self.close_connection = True
                raise _TooLarge()
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass                                # trailers
                return b"".join(parts)
            parts.append(self.rfile.read(size))
            self.rfile.readline(1024)                   # the CRLF after each chunk

    def _handle(self) -> None:
        try:
            response = self.server.app.handle(self._request())
        except _TooLarge:
            response = status_response(413, f"Request entity too large: limit is {MAX_BODY_BYTES}",
                                       "RequestEntityTooLarge")
        except GpuschedError as err:
            response = error_response(err)
        except Exception as err:   # a bug: a 500 Status, the traceback in the log
            log.exception("internal error serving %s %s", self.command, self.path)
            response = status_response(500, f"internal error: {type(err).__name__}: {err}")
        try:
            self._send(response)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True

    def _send(self, response: Response) -> None:
        if response.upgrade is not None:          # exec over WebSocket (server.container)
            self.send_response_only(response.status)
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.flush()
            try:
                response.upgrade(self.connection, self.rfile, self.wfile)
            finally:
                self.close_connection = True
            return
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        for name, value in response.headers.items():
            self.send_header(name, value)
        for text in response.warnings:
            self.send_header("Warning", warning_header(text))
        if response.stream is None:
            self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.body)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.wfile.flush()
        try:
            for chunk in response.stream:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        finally:
            close = getattr(response.stream, "close", None)
            if close is not None:
                close()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle
