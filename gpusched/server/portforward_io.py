"""The two ways kubectl's port-forward reaches ``serve``, both ending in one :class:`Driver`.

- **WebSocket** (kubectl 1.31+, feature PortForwardWebsockets): ``GET .../pods/NAME/portforward``
  upgraded to a WebSocket with subprotocol ``SPDY/3.1+portforward.k8s.io``; SPDY frames travel
  inside binary messages (client-go tools/portforward/tunneling_connection.go, apiserver
  pkg/util/proxy/streamtunnel.go). :func:`run_websocket` runs the session on starlette's WebSocket.
  Without that subprotocol the upgrade is refused (400), and kubectl falls back to SPDY
  (client-go fallback_dialer.go).
- **SPDY/3.1 over an HTTP upgrade** (kubectl before 1.31, and the fallback): ``POST`` with
  ``Connection: Upgrade``, ``Upgrade: SPDY/3.1``, ``X-Stream-Protocol-Version:
  portforward.k8s.io``. After the checks the connection is taken over from h11
  (``server.protocol``: ``101 Switching Protocols``, then :class:`SpdyTransport` owns the socket;
  apimachinery httpstream/spdy/upgrade.go).

The :class:`Driver` feeds the session, sends what it produces, reads the node's metrics on the
handler pool through the cluster worker (``worker.read``, as exec does), ends incomplete stream
pairs after the kubelet's 30 s, and closes the connection when it is idle for
:data:`IDLE_TIMEOUT_S` (the kubelet's ``--streaming-connection-idle-timeout`` default, 4 h;
kubectl 1.31+ pings every 10 s, which counts as traffic) or when a frame is malformed, without a
traceback in serve's log.

Neighbours: ``server.portforward`` (sessions), ``server.spdy``, ``server.app`` (routes),
``server.protocol`` (the SPDY takeover).
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Executor
from typing import Any, Callable

from starlette.websockets import WebSocket, WebSocketDisconnect

from gpusched.errors import GpuschedError
from gpusched.server.portforward import (STREAM_CREATION_TIMEOUT_S, Fetch, ForwardTarget,
                                         PortForwardSession, http_response, metrics_response)
from gpusched.server.spdy import SpdyError

log = logging.getLogger(__name__)
IDLE_TIMEOUT_S = 4 * 3600.0


class Driver:
    """One port-forward connection on the event loop; ``write`` and ``close`` reach the client."""

    def __init__(self, target: ForwardTarget, worker: Any, pool: Executor,
                 write: Callable[[bytes], None], close: Callable[[], None],
                 idle_timeout: float = IDLE_TIMEOUT_S) -> None:
        self.session = PortForwardSession(target)
        self.worker, self.pool = worker, pool
        self._write, self._close = write, close
        self.idle_timeout = idle_timeout
        self.loop = asyncio.get_running_loop()
        self.closed = False
        self._timers: set[asyncio.TimerHandle] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._idle: asyncio.TimerHandle | None = None
        self._touch()

    def received(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            feedback = self.session.feed(data)
        except SpdyError as err:
            log.info("port-forward to pod %s/%s: closing the connection: %s",
                     self.session.target.namespace, self.session.target.name, err)
            self.close()
            return
        for request_id in feedback.new_pairs:
            self._timers.add(self.loop.call_later(STREAM_CREATION_TIMEOUT_S, self._expire, request_id))
        for fetch in feedback.fetches:
            task = self.loop.create_task(self._fetch(fetch))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        self._flush()
        self._touch()
        if feedback.closed:
            self.close()

    def close(self) -> None:
        """End the connection (idempotent): timers and reads cancelled, the transport closed."""
        if self.closed:
            return
        self.closed = True
        for handle in [*self._timers, *([self._idle] if self._idle else [])]:
            handle.cancel()
        for task in self._tasks:
            task.cancel()
        self._close()

    def _flush(self) -> None:
        out = self.session.take_output()
        if out and not self.closed:
            self._write(out)

    def _touch(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
        self._idle = self.loop.call_later(self.idle_timeout, self._idle_timed_out)

    def _idle_timed_out(self) -> None:
        log.info("port-forward to pod %s/%s: idle for %.0f s, closing", self.session.target.namespace,
                 self.session.target.name, self.idle_timeout)
        self.close()

    def _expire(self, request_id: str) -> None:
        self.session.expire(request_id)
        self._flush()

    async def _fetch(self, fetch: Fetch) -> None:
        target = self.session.target
        wanted = fetch.path.split("?", 1)[0] == "/metrics"

        def read(view: Any) -> bytes | None:
            from gpusched.metrics.exporter_pod import node_metrics
            return node_metrics(view, target.pod, target.node) if wanted else None

        try:
            body = await self.loop.run_in_executor(self.pool, self.worker.read, read)
            response = metrics_response(fetch, body)
        except GpuschedError as err:            # the server stopping, say
            response = http_response(500, f"{err}\n".encode())
        except Exception as err:                # a bug: logged, answered, the server keeps going
            log.exception("port-forward metrics of node %s failed", target.node)
            response = http_response(500, f"internal error: {type(err).__name__}\n".encode())
        self.session.answer(fetch.request_id, response)
        self._flush()
        self._touch()


class SpdyTransport(asyncio.Protocol):
    """The socket after ``101 Switching Protocols`` to SPDY/3.1 (``server.protocol`` hands it over)."""

    def __init__(self, target: ForwardTarget, worker: Any, pool: Executor,
                 on_lost: Callable[[], None], pending: bytes = b"") -> None:
        self.target, self.worker, self.pool = target, worker, pool
        self.on_lost = on_lost
        self.pending = pending
        self.driver: Driver | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.driver = Driver(self.target, self.worker, self.pool, transport.write, transport.close)
        if self.pending:
            self.driver.received(self.pending)

    def data_received(self, data: bytes) -> None:
        if self.driver is not None:
            self.driver.received(data)

    def eof_received(self) -> bool:
        return False                              # the client is done: close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        if self.driver is not None:
            self.driver.close()
        self.on_lost()

    def shutdown(self) -> None:
        """The server is stopping: end the session."""
        if self.driver is not None:
            self.driver.close()


async def run_websocket(websocket: WebSocket, target: ForwardTarget, worker: Any, pool: Executor) -> None:
    """A SPDY session tunnelled in the WebSocket's binary messages, until either side ends it."""
    outgoing: asyncio.Queue[bytes | None] = asyncio.Queue()
    ended = asyncio.Event()
    driver = Driver(target, worker, pool, outgoing.put_nowait, ended.set)

    async def send() -> None:
        try:
            while (message := await outgoing.get()) is not None:
                await websocket.send_bytes(message)
        except (RuntimeError, OSError, WebSocketDisconnect) as err:    # the client went away
            log.debug("port-forward tunnel: send failed: %s", err)
            ended.set()

    async def receive() -> None:
        while not driver.closed:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            if message.get("bytes") is None:      # tunneling_connection.go: binary messages only
                log.info("port-forward to pod %s/%s: a text message on the SPDY tunnel, closing",
                         target.namespace, target.name)
                return
            driver.received(message["bytes"])

    tasks: list[asyncio.Task[Any]] = [asyncio.create_task(c) for c in (send(), receive(), ended.wait())]
    try:
        await asyncio.wait(tasks[1:], return_when=asyncio.FIRST_COMPLETED)
        outgoing.put_nowait(None)                 # what was queued still goes out, then close
        await asyncio.wait([tasks[0]], timeout=IDLE_FLUSH_S)
    finally:
        driver.close()
        for task in tasks:
            task.cancel()
    try:
        await websocket.close(1000)
    except (RuntimeError, OSError, WebSocketDisconnect):   # already closed by the client
        pass


IDLE_FLUSH_S = 10.0                                # how long queued frames may take to go out at the end
