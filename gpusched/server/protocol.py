"""uvicorn's h11 protocol with the connection guards ``gpusched serve`` needs on top.

uvicorn (``uvicorn.protocols.http.h11_impl.H11Protocol``) gives HTTP/1.1 keep-alive, an idle
timeout between requests (``timeout_keep_alive``) and a bound on the request head
(``h11_max_incomplete_event_size``). Two things it leaves to the application are added here:

- a header timeout: a connection whose request line and headers are not complete within
  ``header_timeout`` seconds of its opening (or of the last response on it) is closed, so a
  client that sends half a request and stops (slowloris) holds nothing;
- at shutdown, idle connections are aborted rather than closed (no wait for a TLS close_notify);
- a request h11 cannot parse is answered with a Kubernetes ``Status`` (400 BadRequest) instead
  of uvicorn's plain-text line; an invalid ``Content-Length`` (``-1``, ``abc``: h11 refuses it
  before the application sees the request) is named in the message;
- a chunked body announcing a chunk over the 3 MiB body limit is answered at once, before any of
  it arrives, and the connection closed: 413 ``Request entity too large: limit is 3145728`` (what
  apiserver's ``limitedReadBody`` answers once it has read past the limit), or 400 ``http chunk
  length too large`` for a size of more than 16 hex digits (Go net/http/internal/chunked.go
  ``parseHexUint``; h11 takes up to 20). Without this the request waited for data the client
  never has to send.

- an upgrade the application accepted other than WebSocket (SPDY/3.1 for ``kubectl
  port-forward``, ``server.portforward_io``) takes the connection over from h11:
  :meth:`GuardedH11Protocol.take_over`, published to the application in the request scope's
  ``state`` under :data:`TAKE_OVER`, writes the ``101`` and hands the socket to the new protocol;
  uvicorn's "Unsupported upgrade request" warning is not logged for it.

The TLS handshake never reaches this class: asyncio runs it per connection inside the event
loop (``loop.create_server(ssl=...)``), so a silent client delays nobody. With client
certificates enabled the verified peer certificate is published in ``peers`` under the
client's (host, port), where ``server.guards`` looks it up.

Neighbours: ``server.app`` (configures uvicorn with :func:`protocol_class`), ``server.guards``.
"""

from __future__ import annotations

import asyncio
import json
import re
from http import HTTPStatus
from typing import Any, Callable

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from gpusched.objects.limits import MAX_BODY_BYTES
from gpusched.server.http import status_object
from gpusched.objects.digits import is_digits

_CONTENT_LENGTH = re.compile(rb"^content-length[ \t]*:[ \t]*([^\r\n]*)", re.I | re.M)
MAX_HEAD_BYTES = 64 * 1024     # h11_max_incomplete_event_size: request line and headers
TAKE_OVER = "gpusched.take_over"
SPDY_UPGRADE = b"spdy/3.1"


class GuardedH11Protocol(H11Protocol):
    """See the module docstring; ``header_timeout`` and ``peers`` are set by :func:`protocol_class`."""

    header_timeout: float = 60.0
    peers: dict[tuple[Any, ...], Any] | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.app_state = {**self.app_state, TAKE_OVER: self.take_over}   # this connection's
        self._upgraded: Any = None
        self._head = b""
        self._header_timer: asyncio.TimerHandle | None = None
        self._arm_header_timer()
        if self.peers is not None and self.client is not None:
            cert = transport.get_extra_info("peercert")
            if cert:
                self.peers[self.client] = cert

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        if self.peers is not None and self.client is not None:
            self.peers.pop(self.client, None)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        waiting_for_head = self.conn.their_state is h11.IDLE
        if waiting_for_head:
            self._head = (self._head + data)[-MAX_HEAD_BYTES:]
        super().data_received(data)
        self._check_chunk_size()
        if self.conn.their_state is not h11.IDLE:
            self._head = b""
            self._disarm_header_timer()
        elif self._header_timer is None:
            self._arm_header_timer()     # a new request began after a keep-alive pause

    def shutdown(self) -> None:
        """Server stopping: an idle connection is dropped at once. uvicorn closes it, which on TLS
        waits up to 30 s for the client's close_notify; a client idling in a connection pool
        (the Python client's urllib3) never sends one, so the stop would wait for it. A
        connection taken over (port-forward) ends its session."""
        if self._upgraded is not None:
            self._upgraded.shutdown()
            return
        idle = self.cycle is None or self.cycle.response_complete
        super().shutdown()
        if idle:
            self.transport.abort()

    def take_over(self, head: bytes, make_protocol: Callable[[bytes, Callable[[], None]], Any]) -> bool:
        """Switch protocols after an upgrade request h11 left pending (``MIGHT_SWITCH_PROTOCOL``):
        ``head`` (the ``101`` response) is written and the socket handed to
        ``make_protocol(bytes already received, on_lost)``. The request's cycle is marked
        disconnected, so whatever the application answers afterwards is dropped. False (nothing
        changed) when the request was not such an upgrade."""
        if self.conn.their_state is not h11._state.MIGHT_SWITCH_PROTOCOL or self.transport.is_closing():
            return False
        pending = bytes(self.conn.trailing_data[0])
        self._disarm_header_timer()
        self._unset_keepalive_if_required()
        if self.cycle is not None:
            self.cycle.disconnected = True
        self.transport.write(head)
        self._upgraded = make_protocol(pending, self._upgraded_lost)
        self.transport.set_protocol(self._upgraded)
        self._upgraded.connection_made(self.transport)
        self.flow.resume_reading()                # h11 paused reading at the pending switch
        return True

    def _upgraded_lost(self) -> None:
        self.connections.discard(self)            # uvicorn's graceful stop waits for this set
        if self.peers is not None and self.client is not None:
            self.peers.pop(self.client, None)

    def _unsupported_upgrade_warning(self) -> None:
        if self._get_upgrade() != SPDY_UPGRADE:   # SPDY is served (port-forward): no warning
            super()._unsupported_upgrade_warning()

    def _arm_header_timer(self) -> None:
        self._disarm_header_timer()
        self._header_timer = self.loop.call_later(self.header_timeout, self._header_timed_out)

    def _disarm_header_timer(self) -> None:
        timer = getattr(self, "_header_timer", None)
        if timer is not None:
            timer.cancel()
        self._header_timer = None

    def _header_timed_out(self) -> None:
        self._header_timer = None
        idle = self.conn.their_state is h11.IDLE and (self.cycle is None or self.cycle.response_complete)
        if idle and not self.transport.is_closing():
            self.transport.close()       # silent, or half a request head: hang up

    def send_400_response(self, msg: str) -> None:
        """A request h11 refused, answered as kube-apiserver answers a bad request: a Status."""
        found = _CONTENT_LENGTH.search(self._head)
        if found is not None and not is_digits(found.group(1).strip()):
            raw = found.group(1).strip().decode("latin-1")
            message = f'invalid Content-Length "{raw}": must be a non-negative integer'
        else:
            message = "the request could not be read as HTTP/1.1"
        self._answer_and_close(400, message, "BadRequest")

    def _check_chunk_size(self) -> None:
        """Refuse a chunk announced over the body limit (h11's ``ChunkedReader`` holds the size
        of the chunk being read; nothing public exposes it)."""
        announced = getattr(getattr(self.conn, "_reader", None), "_bytes_in_chunk", 0)
        if not isinstance(announced, int) or announced <= MAX_BODY_BYTES or self.transport.is_closing():
            return
        if announced >= 1 << 64:
            self._answer_and_close(400, "http chunk length too large", "BadRequest")
        else:
            self._answer_and_close(413, f"Request entity too large: limit is {MAX_BODY_BYTES}",
                                   "RequestEntityTooLarge")

    def _answer_and_close(self, code: int, message: str, reason: str) -> None:
        """A Status written straight to the socket, the request's cycle ended (the application's
        pending read sees a disconnect and its answer is dropped), the connection closed."""
        body = json.dumps(status_object(code, message, reason), separators=(",", ":")).encode()
        headers = [(b"content-type", b"application/json"), (b"connection", b"close"),
                   (b"content-length", str(len(body)).encode()), (b"x-content-type-options", b"nosniff")]
        if self.cycle is not None:
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        try:
            for event in (h11.Response(status_code=code, headers=headers,
                                       reason=HTTPStatus(code).phrase.encode()), h11.Data(data=body),
                          h11.EndOfMessage()):
                self.transport.write(self.conn.send(event))
        except h11.LocalProtocolError:
            pass                         # a response had already begun: just close
        self.transport.close()


def protocol_class(header_timeout: float, peers: dict[tuple[Any, ...], Any] | None) -> type[GuardedH11Protocol]:
    """A protocol class carrying one server's settings (uvicorn instantiates it per connection)."""
    settings: dict[str, Any] = {"header_timeout": header_timeout, "peers": peers}
    return type("GpuschedH11Protocol", (GuardedH11Protocol,), settings)
