"""``ApiServer``: the HTTP server behind ``gpusched serve``: uvicorn (h11) running a starlette app.

Stack, outermost first:

- uvicorn on a socket bound here (backlog 1,024), in a thread of its own running the asyncio
  event loop. TLS is asyncio's, handshaken per connection inside the loop, so a client that
  connects and never sends a ClientHello delays nobody. HTTP/1.1 keep-alive; a connection idle
  ``idle_timeout`` (90 s) between requests is closed (``timeout_keep_alive``), and so is one
  whose request head is not complete within 32 s (``server.protocol``), which also
  answers unparsable requests (a bad ``Content-Length``) with a 400 Status. Request heads are
  bounded to 64 KiB.
- starlette's CORS middleware, only with ``cors_origins`` (``--cors-allowed-origins``).
- ``server.guards.Guards``: path normalisation, Host/Origin checks, authentication, read-only
  authorization, body limit and content types.
- ONE route table (:meth:`ApiServer.route_table`, starlette ``Route``/``WebSocketRoute``):
  health, ``/version``, ``/metrics``, discovery, OpenAPI, resources (``server.resources``),
  pods' ``exec`` (WebSocket ``v5.channel.k8s.io``), ``log``, ``portforward`` (SPDY/3.1, plain
  or tunnelled in a WebSocket: ``server.portforward_io``); routes other modules registered
  with :meth:`ApiServer.register_route` (the web page) come first, a ``/`` registration also
  catches what no API route matched. An unmatched path is a 404 Status, a wrong method 405.

Handlers stay synchronous (``Request -> Response``, ``server.http``) and run on a dedicated
thread pool, never on the event loop; they reach the store through the one cluster thread
(``server.worker``: SQLite, group commit). Bodies are read up to 3 MiB (413
``Request entity too large: limit is 3145728``, the connection closed) with ``idle_timeout``
between chunks (408). Watch responses are streamed (starlette ``StreamingResponse``), each next
chunk (the events of one wake-up: ``server.watch``) pulled on a second, larger pool, so 1,000
open watches block neither handlers nor the loop.

``stop()`` (SIGTERM in ``cli.serve``) shuts down gracefully: the listener closes, open watches
end, requests in flight (a write whose body is still arriving included) complete and are
answered, then the cluster thread commits and stops, then the controller process.

With ``controllers`` (``cli.serve`` passes one), this process is the API alone: its cluster
thread stores and never settles, and the controllers, kubelet and scheduler run in the child
process (``server.settler``), which follows the store's changes; without, the cluster thread
settles after each batch of writes (one process, as in-process tests run it).

Neighbours: ``server.worker`` (the cluster thread), ``server.feed`` (watch), ``server.resources``,
``server.discovery``, ``server.container`` (exec, log), ``server.guards``, ``server.protocol``,
``server.security``; started by ``cli.serve``.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, AsyncIterator, Callable, Iterator

import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect
from starlette.requests import Request as StarletteRequest
from starlette.responses import Response as StarletteResponse
from starlette.responses import StreamingResponse
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket

from gpusched.cluster.apiserver.store import DEFAULT_EVENT_TTL
from gpusched.errors import GpuschedError
from gpusched.server import discovery, metrics_api
from gpusched.server.feed import DEFAULT_CAPACITY, ChangeFeed
from gpusched.objects.limits import MAX_BODY_BYTES
from gpusched.server.guards import Guards, Policy
from gpusched.server.http import (Handler, Request, Response, error_response, json_response,
                                  normalise_path, status_response, warning_header)
from gpusched.server.protocol import MAX_HEAD_BYTES, TAKE_OVER, protocol_class
from gpusched.server.protobuf.negotiate import negotiated
from gpusched.server.resources import ResourceApi, parse_target
from gpusched.server.security import Authenticator, User, is_loopback
from gpusched.server.tables import ColumnSource
from gpusched.server.settler import ControllerProcess
from gpusched.server.worker import ClusterWorker

log = logging.getLogger(__name__)
__all__ = ["ApiServer", "MAX_BODY_BYTES"]
HEALTH = ("/healthz", "/readyz", "/livez")
# kube-apiserver's http.Server (apiserver pkg/server/secure_serving.go): IdleTimeout 90 s,
# ReadHeaderTimeout 32 s, no WriteTimeout (watches), MaxHeaderBytes 1 MiB.
IDLE_TIMEOUT_S = 90.0                   # keep-alive idle and body chunk deadline
HEADER_TIMEOUT_S = 32.0                 # request head deadline (at most the idle timeout)
GRACEFUL_SHUTDOWN_S = 30.0
LISTEN_BACKLOG = 1024
HANDLER_THREADS = 64
STREAM_THREADS = 1024
METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
PORTFORWARD = "/api/v1/namespaces/{namespace}/pods/{name}/portforward"
SPDY_SWITCH = (b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
               b"X-Stream-Protocol-Version: portforward.k8s.io\r\n\r\n")
_END = object()


class ApiServer:
    """The API server; ``start()`` serves in background threads, ``stop()`` ends it."""

    def __init__(self, state_path: str, host: str = "127.0.0.1", port: int = 0,
                 token: str | None = None, tls: ssl.SSLContext | None = None,
                 virtual_clock: bool = False, columns: ColumnSource | None = None,
                 watch_capacity: int = DEFAULT_CAPACITY, idle_timeout: float = IDLE_TIMEOUT_S,
                 wall_clock: Any = None, authenticator: Authenticator | None = None,
                 cors_origins: tuple[str, ...] = (), event_ttl: float = DEFAULT_EVENT_TTL,
                 controllers: ControllerProcess | None = None) -> None:
        if authenticator is None:
            authenticator = Authenticator({token: User("gpusched-admin", True)} if token else {})
        self.sock = _listen(host, port)          # bind errors surface here (cli.serve reports them)
        self.feed = ChangeFeed(state_path, watch_capacity)
        self.controllers = controllers           # None: the cluster thread settles (one process)
        self.worker = ClusterWorker(state_path, virtual_clock, on_commit=self._committed,
                                    wall_clock=wall_clock, event_ttl=event_ttl,
                                    settles=controllers is None)
        self.resources = ResourceApi(self.worker, self.feed, columns)
        self.registered: list[tuple[str, str, Handler]] = []
        self.idle_timeout = idle_timeout
        self.tls = tls
        self.scheme = "https" if tls is not None else "http"
        self.peers: dict[tuple[Any, ...], Any] | None = {} if tls is not None and tls.verify_mode != ssl.CERT_NONE else None
        self.policy = Policy(authenticator, is_loopback(host), host, tuple(cors_origins), self.peers)
        self.handlers = ThreadPoolExecutor(HANDLER_THREADS, thread_name_prefix="gpusched-handler")
        self.streams = ThreadPoolExecutor(STREAM_THREADS, thread_name_prefix="gpusched-stream")
        self.server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    @property
    def url(self) -> str:
        host = str(self.sock.getsockname()[0])
        host = f"[{host}]" if ":" in host else host
        return f"{self.scheme}://{host}:{self.port}"

    def register_route(self, method: str, path_prefix: str, handler: Handler) -> None:
        """Serve ``method`` (``"*"`` for any) on paths equal to or under ``path_prefix`` with
        ``handler(Request) -> Response``; registered routes win over the API's own (``/``
        only catches paths no API route matches). Call before ``start()``."""
        self.registered.append((method.upper(), path_prefix.rstrip("/") or "/", handler))

    # ---- the route table ---------------------------------------------------------------------

    def route_table(self) -> list[BaseRoute]:
        """Every route the server answers, in matching order."""
        first, last = [], []
        for method, prefix, handler in sorted(self.registered, key=lambda r: -len(r[1])):
            methods = METHODS if method == "*" else [method]
            endpoint = self._endpoint(handler)
            if prefix == "/":
                first.append(Route("/", endpoint, methods=methods))
                last.append(Route("/{rest:path}", endpoint, methods=methods))
            else:
                first += [Route(prefix, endpoint, methods=methods),
                          Route(prefix + "/{rest:path}", endpoint, methods=methods)]
        own = [
            *(Route(path, self._endpoint(_health), methods=METHODS) for path in HEALTH),
            Route("/version", self._endpoint(lambda req: json_response(discovery.version())),
                  methods=METHODS),
            Route("/metrics", self._endpoint(self._metrics), methods=METHODS),
            Route("/openapi/v2", self._endpoint(_openapi), methods=METHODS),
            Route("/openapi/v3", self._endpoint(_openapi), methods=METHODS),
            Route("/openapi/v3/{rest:path}", self._endpoint(_openapi), methods=METHODS),
            Route("/api", self._endpoint(_discovery), methods=METHODS),
            Route("/apis", self._endpoint(_discovery), methods=METHODS),
            Route("/api/v1", self._endpoint(_discovery), methods=METHODS),
            Route("/apis/{group}", self._endpoint(_discovery), methods=METHODS),
            Route("/apis/{group}/{version}", self._endpoint(_discovery), methods=METHODS),
            *(Route(prefix + "/{rest:path}", self._endpoint(self._metrics_api), methods=METHODS)
              for prefix in metrics_api.PREFIXES),      # metrics.k8s.io, custom, external
            WebSocketRoute("/api/v1/namespaces/{namespace}/pods/{name}/exec", self._exec_websocket),
            WebSocketRoute(PORTFORWARD, self._portforward_websocket),
            Route(PORTFORWARD, self._portforward_spdy, methods=METHODS),
            Route("/api/v1/{rest:path}", self._endpoint(self._resource), methods=METHODS),
            Route("/apis/{group}/{version}/{rest:path}", self._endpoint(self._resource), methods=METHODS),
        ]
        return first + own + last

    def asgi(self) -> Any:
        """The ASGI application: middleware around the route table."""
        middleware = []
        if self.policy.cors_origins:
            middleware.append(Middleware(CORSMiddleware, allow_origin_regex="|".join(
                f"(?:{p})" for p in self.policy.cors_origins), allow_methods=METHODS,
                allow_headers=["Authorization", "Content-Type", "Accept", "X-Requested-With",
                               "If-Modified-Since"],
                expose_headers=["Date"], allow_credentials=True))
        middleware.append(Middleware(Guards, policy=self.policy))
        return Starlette(routes=self.route_table(), middleware=middleware,
                         exception_handlers={HTTPException: _http_exception})

    # ---- lifecycle ---------------------------------------------------------------------------

    def _committed(self) -> None:
        self.feed.poke()
        if self.controllers is not None:
            self.controllers.nudge()

    def start(self) -> "ApiServer":
        if self.controllers is not None:
            self.controllers.start()               # settles the state file once before we serve
        self.worker.start()
        self.feed.start()
        config = uvicorn.Config(self.asgi(), http=protocol_class(min(self.idle_timeout, HEADER_TIMEOUT_S), self.peers),
                                ws="wsproto", lifespan="off", access_log=False, log_config=None,
                                server_header=False, timeout_keep_alive=int(max(1, self.idle_timeout)),
                                timeout_graceful_shutdown=int(GRACEFUL_SHUTDOWN_S),
                                h11_max_incomplete_event_size=MAX_HEAD_BYTES, loop="asyncio")
        config.load()
        config.ssl = self.tls                      # our context (client CAs, ciphers) as is
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]},
                                        name="gpusched-http", daemon=True)
        self._thread.start()
        while not self.server.started and self._thread.is_alive():
            time.sleep(0.01)                       # startup: binds nothing new, takes milliseconds
        if not self.server.started:
            raise GpuschedError("the HTTP server did not start")
        return self

    def stop(self) -> None:
        """Graceful: stop accepting, end watches, finish requests in flight, then the worker."""
        if self.server is not None:
            self.server.should_exit = True
        self.feed.close()                          # ends open watches
        if self._thread is not None:
            self._thread.join(GRACEFUL_SHUTDOWN_S + 10)
        self.sock.close()
        self.handlers.shutdown(wait=True, cancel_futures=False)
        self.streams.shutdown(wait=False, cancel_futures=True)
        self.worker.stop()
        if self.controllers is not None:
            self.controllers.stop()

    # ---- adapters between starlette and the synchronous handlers -----------------------------

    def _endpoint(self, handler: Handler) -> Callable[[StarletteRequest], Any]:
        async def endpoint(request: StarletteRequest) -> StarletteResponse:
            req = await self._read_request(request)
            if isinstance(req, Response):
                return self._to_starlette(req)
            loop = asyncio.get_running_loop()
            response = await loop.run_in_executor(self.handlers, _call, handler, req)
            return self._to_starlette(response)
        return endpoint

    async def _read_request(self, request: StarletteRequest) -> Request | Response:
        """The request with its body (bounded, each chunk within the idle timeout)."""
        parts, total = [], 0
        stream = request.stream()
        while True:
            try:
                async with asyncio.timeout(self.idle_timeout):   # a timer, not a task per chunk
                    chunk = await stream.__anext__()
            except StopAsyncIteration:
                break
            except (asyncio.TimeoutError, ClientDisconnect):
                response = status_response(408, "the request body did not arrive in time", "Timeout")
                response.headers["Connection"] = "close"
                return response
            total += len(chunk)
            if total > MAX_BODY_BYTES:
                response = status_response(413, f"Request entity too large: limit is {MAX_BODY_BYTES}",
                                           "RequestEntityTooLarge")
                response.headers["Connection"] = "close"
                return response
            parts.append(chunk)
        scope = request.scope
        raw_query = scope.get("query_string", b"").decode("latin-1")
        path, query = normalise_path(scope["path"] + ("?" + raw_query if raw_query else ""))
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        return Request(scope["method"], path, query, headers, b"".join(parts), raw_query)

    def _to_starlette(self, response: Response) -> StarletteResponse:
        out: StarletteResponse
        if response.stream is not None:
            out = StreamingResponse(self._pull(response.stream), response.status,
                                    headers={**response.headers, "Cache-Control": "no-cache, private"},
                                    media_type=response.content_type)
        else:
            out = StarletteResponse(response.body, response.status, headers=response.headers,
                                    media_type=response.content_type)
        for text in response.warnings:
            header = warning_header(text)
            if header is not None:
                out.raw_headers.append((b"warning", header.encode()))
        return out

    async def _pull(self, chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
        """A synchronous stream (a watch) pulled chunk by chunk on the stream pool."""
        loop = asyncio.get_running_loop()
        done = threading.Event()

        def pull() -> Any:
            if done.is_set():
                return _END
            try:
                return next(chunks, _END)
            except Exception:   # a bug in a stream: end it, keep the server
                log.exception("a streamed response failed")
                return _END

        try:
            while True:
                chunk = await loop.run_in_executor(self.streams, pull)
                if chunk is _END:
                    return
                yield chunk
        finally:
            done.set()
            _close_later(self.streams, chunks)

    # ---- endpoints ---------------------------------------------------------------------------

    def _metrics(self, req: Request) -> Response:
        from gpusched.metrics.exposition import render_cluster   # imported on first scrape
        content_type, body = self.worker.cluster_call(render_cluster)
        return Response(200, body, content_type)

    def _metrics_api(self, req: Request) -> Response:
        return metrics_api.handle(self.worker, req)

    def _resource(self, req: Request) -> Response:
        target = parse_target(req.path)
        if target is None:
            return _not_found()
        return negotiated(req, target.info.api_version, target.info.kind,
                          lambda inner: self._resource_at(inner, target))

    def _resource_at(self, req: Request, target: Any) -> Response:
        if target.info.kind == "Pod" and target.subresource in ("exec", "log", "attach"):
            from gpusched.server.container import handle_container   # pods/exec, pods/log
            return handle_container(self.worker, req, target)
        return self.resources.handle(req, target)

    async def _exec_websocket(self, websocket: WebSocket) -> None:
        """``pods/exec`` over WebSocket (``server.container.exec_session``)."""
        from gpusched.server.container import exec_session
        req = _websocket_request(websocket)
        target = parse_target(req.path)
        loop = asyncio.get_running_loop()
        session = await loop.run_in_executor(
            self.handlers, _call, lambda r: exec_session(self.worker, r, target), req)
        if isinstance(session, Response):
            await websocket.send_denial_response(self._to_starlette(session))
            return
        await websocket.accept(subprotocol=session.protocol)
        for message in session.messages:
            await websocket.send_bytes(message)
        await websocket.close(1000)

    async def _portforward_websocket(self, websocket: WebSocket) -> None:
        """``pods/portforward``, SPDY tunnelled in a WebSocket (``server.portforward_io``)."""
        from gpusched.server.portforward import TUNNEL_PROTOCOL, websocket_upgrade
        from gpusched.server.portforward_io import run_websocket
        req = _websocket_request(websocket)
        params = websocket.path_params
        offered = list(websocket.scope.get("subprotocols") or [])
        target = await asyncio.get_running_loop().run_in_executor(self.handlers, _call, lambda r: websocket_upgrade(
            self.worker, params["namespace"], params["name"], offered), req)
        if isinstance(target, Response):
            await websocket.send_denial_response(self._to_starlette(target))
            return
        await websocket.accept(subprotocol=TUNNEL_PROTOCOL)
        await run_websocket(websocket, target, self.worker, self.handlers)

    async def _portforward_spdy(self, request: StarletteRequest) -> StarletteResponse:
        """``pods/portforward`` over an HTTP upgrade to SPDY/3.1: checked, then the connection is
        taken over from h11 (``server.protocol.GuardedH11Protocol.take_over``)."""
        from gpusched.server.portforward import spdy_upgrade
        from gpusched.server.portforward_io import SpdyTransport
        req = await self._read_request(request)
        if isinstance(req, Response):
            return self._to_starlette(req)
        params = request.path_params
        target = await asyncio.get_running_loop().run_in_executor(self.handlers, _call, lambda r: spdy_upgrade(
            self.worker, r, params["namespace"], params["name"]), req)
        if isinstance(target, Response):
            return self._to_starlette(target)
        take_over = (request.scope.get("state") or {}).get(TAKE_OVER)
        if take_over is None or not take_over(SPDY_SWITCH, lambda pending, lost: SpdyTransport(
                target, self.worker, self.handlers, lost, pending)):
            return self._to_starlette(status_response(400, "Upgrade request required"))
        return StarletteResponse(b"", 200)        # dropped: the connection is SPDY now


def _websocket_request(websocket: WebSocket) -> Request:
    """The WebSocket handshake as a :class:`Request` (subprotocols as wsproto parsed them)."""
    scope = websocket.scope
    raw_query = scope.get("query_string", b"").decode("latin-1")
    path, query = normalise_path(scope["path"] + ("?" + raw_query if raw_query else ""))
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    headers["sec-websocket-protocol"] = ", ".join(scope.get("subprotocols") or [])
    return Request("GET", path, query, headers, b"", raw_query)


def _call(handler: Callable[[Request], Any], req: Request) -> Any:
    """``handler(req)``; errors become Status responses (a bug: 500, traceback in the log)."""
    try:
        return handler(req)
    except GpuschedError as err:
        return error_response(err)
    except Exception as err:
        log.exception("internal error serving %s %s", req.method, req.path)
        return status_response(500, f"internal error: {type(err).__name__}: {err}")


def _close_later(pool: ThreadPoolExecutor, chunks: Iterator[bytes]) -> None:
    def close() -> None:
        try:
            getattr(chunks, "close", lambda: None)()
        except ValueError:      # still running in another thread: it ends at its next event
            pass
    try:
        pool.submit(close)
    except RuntimeError:        # the pool is shut down (server stopping)
        pass


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    if host == "localhost":
        host = "127.0.0.1"
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(LISTEN_BACKLOG)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


def _health(req: Request) -> Response:
    return Response(200, b"ok", "text/plain")


def _not_found() -> Response:
    return status_response(404, "the server could not find the requested resource", "NotFound")


async def _http_exception(request: StarletteRequest, exc: Exception) -> StarletteResponse:
    code = getattr(exc, "status_code", 500)
    if code == 405:
        response = status_response(405, "the server does not allow this method on the requested resource",
                                   "MethodNotAllowed")
    elif code == 404:
        response = _not_found()
    else:
        response = status_response(code, str(getattr(exc, "detail", "")) or "error")
    return StarletteResponse(response.body, response.status, media_type=response.content_type)


def _discovery(req: Request) -> Response:
    path = req.path
    if path in ("/api", "/apis"):
        tag = discovery.aggregated_tag(req.accept)
        if tag is not None:
            ctype = discovery.AGGREGATED_V2 if tag == "v2" else discovery.AGGREGATED_V2BETA1
            return json_response(discovery.aggregated(path == "/api", tag), content_type=ctype)
        return json_response(discovery.api_versions() if path == "/api" else discovery.api_groups())
    parts = path.strip("/").split("/")
    if path == "/api/v1" or len(parts) == 3:
        listing = discovery.resource_list("v1" if path == "/api/v1" else f"{parts[1]}/{parts[2]}")
        if listing is not None:
            return json_response(listing)
    if len(parts) == 2:
        group = discovery.api_group(parts[1])
        if group is not None:
            return json_response(group)
    return _not_found()


def _openapi(req: Request) -> Response:
    path = req.path
    if path == "/openapi/v2":
        if "protobuf" in req.accept:
            return Response(200, discovery.openapi_v2_protobuf(), "application/octet-stream")
        return json_response(discovery.openapi_v2_json())
    if path == "/openapi/v3":
        return json_response(discovery.openapi_root())
    rest = path[len("/openapi/v3/"):]
    gv = "v1" if rest == "api/v1" else rest[len("apis/"):] if rest.startswith("apis/") else ""
    document = discovery.openapi_document(gv) if gv else None
    if document is not None:
        return json_response(document)
    return _not_found()
