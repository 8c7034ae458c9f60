"""The ASGI middleware in front of every route of ``gpusched serve``, in kube-apiserver's order.

1. paths are normalised (kr8s sends trailing slashes; ``//`` collapses) before routing;
2. browsers: on a loopback bind the ``Host`` header must name this machine (no DNS rebinding);
   a write (or a WebSocket upgrade: exec) carrying a foreign ``Origin`` is refused unless the
   origin matches ``--cors-allowed-origins``. An origin is scheme, host and port (RFC 6454; the
   default ports 80/443 filled in), compared with this server's own: the scheme it serves and
   the ``Host`` the browser sent, so a page on another port of the same host is foreign;
3. authentication (``security.Authenticator``: bearer token in constant time, or a verified
   client certificate): 401 ``Unauthorized`` Status when credentials are needed and missing;
4. authorization: a read-only user gets 403 ``Forbidden`` on any write with kube-apiserver's
   message (``security.forbidden_message``), details naming the resource;
5. bodies: a declared ``Content-Length`` over the 3 MiB write limit is refused at once (413,
   the body unread, the connection closed); content types a cross-site form can send get 415.

Every refusal is a Kubernetes Status (in protobuf when the client prefers it:
``server.protobuf.negotiate``) and, for a request that may carry an unread body, closes
the connection. Every response carries ``X-Content-Type-Options: nosniff`` (error Statuses and
objects echo what a client sent; a browser must never sniff them into HTML or script). Nothing
here logs a header value (tokens stay out of the logs).

Neighbours: ``server.app`` (wraps the route table with :class:`Guards`), ``server.security``,
``server.resources.parse_target`` (what a path names, for 403 messages).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from starlette.responses import Response as StarletteResponse
from starlette.websockets import WebSocket

from gpusched.objects.limits import MAX_BODY_BYTES   # kube-apiserver's MaxRequestBodyBytes
from gpusched.server.http import Response, json_response, normalise_path, status_object
from gpusched.server.decoding import ACCEPTED_BODY_TYPES
from gpusched.server.protobuf.negotiate import encode_response, wants_protobuf
from gpusched.server.resources import parse_target
from gpusched.server.security import Authenticator, User, forbidden_message
from gpusched.objects.digits import is_digits

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
FORM_CONTENT_TYPES = ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data")
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
NOSNIFF = (b"x-content-type-options", b"nosniff")
Origin = tuple[str, str, int]


@dataclass(frozen=True)
class Policy:
    """What the guards enforce for one server."""

    authenticator: Authenticator
    loopback: bool
    bind_host: str
    cors_origins: tuple[str, ...] = ()
    peers: dict[tuple[Any, ...], Any] | None = None              # client (host, port) -> verified peer certificate

    def origin_allowed(self, origin: str) -> bool:
        return any(re.search(pattern, origin) for pattern in self.cors_origins)


def status(code: int, message: str, reason: str = "", details: dict[str, Any] | None = None) -> Response:
    return json_response(status_object(code, message, reason, details), code)


def host_name(host_header: str) -> str:
    """``127.0.0.1:6443`` -> ``127.0.0.1``; ``[::1]:6443`` -> ``::1``; lower case.

    >>> host_name("[::1]:6443"), host_name("LocalHost:80"), host_name("10.0.0.1")
    ('::1', 'localhost', '10.0.0.1')
    """
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host


def origin_of(scheme: str, authority: str) -> Origin | None:
    """(scheme, host, port) with the scheme's default port filled in; None when unreadable.

    >>> origin_of("http", "LocalHost"), origin_of("https", "[::1]:6443"), origin_of("http", "h:x")
    (('http', 'localhost', 80), ('https', '::1', 6443), None)
    """
    scheme = scheme.lower()
    host = host_name(authority)
    port_text = authority.strip().rpartition("]")[2] if authority.strip().startswith("[") \
        else (authority.rpartition(":")[2] if authority.count(":") == 1 else "")
    port_text = port_text.lstrip(":")
    if scheme not in DEFAULT_PORTS or not host:
        return None
    if not port_text:
        return scheme, host, DEFAULT_PORTS[scheme]
    if not is_digits(port_text) or int(port_text) > 65535:
        return None
    return scheme, host, int(port_text)


def same_origin(origin: str, scheme: str, host_header: str) -> bool:
    """Whether a browser's ``Origin`` is this server's own: same scheme, host and port.

    >>> same_origin("http://127.0.0.1:8001", "http", "127.0.0.1:8001")
    True
    >>> same_origin("http://127.0.0.1:8002", "http", "127.0.0.1:8001"), same_origin(
    ...     "https://localhost:8001", "http", "localhost:8001"), same_origin("null", "http", "h")
    (False, False, False)
    """
    own_scheme = {"ws": "http", "wss": "https"}.get(scheme, scheme)
    origin_scheme, sep, authority = origin.strip().partition("://")
    if not sep or "/" in authority or "@" in authority:
        return False
    theirs = origin_of(origin_scheme, authority)
    return theirs is not None and theirs == origin_of(own_scheme, host_header)


def browser_refusal(policy: Policy, method: str, headers: dict[str, str], websocket: bool,
                    scheme: str = "http") -> Response | None:
    """403 for a request a foreign web page (or a DNS-rebound name) could make; None if fine."""
    raw_host = headers.get("host", "")
    host = host_name(raw_host)
    if policy.loopback and host and host not in LOOPBACK_HOSTS + (policy.bind_host,):
        return status(403, f'forbidden: the Host header "{raw_host}" does not name this server '
                           "(use localhost or 127.0.0.1)", "Forbidden")
    if method not in WRITE_METHODS and not websocket:
        return None
    origin = headers.get("origin")
    if origin is not None and not same_origin(origin, scheme, raw_host) \
            and not policy.origin_allowed(origin):
        return status(403, f'forbidden: cross-origin write from "{origin}" refused', "Forbidden")
    return None


def content_refusal(method: str, headers: dict[str, str]) -> Response | None:
    """413 for a declared body over the limit, 415 for form bodies; None if fine."""
    length = headers.get("content-length", "").strip()
    if is_digits(length) and int(length) > MAX_BODY_BYTES:
        return status(413, f"Request entity too large: limit is {MAX_BODY_BYTES}", "RequestEntityTooLarge")
    if method not in WRITE_METHODS:
        return None
    content_type = headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type in FORM_CONTENT_TYPES:
        return status(415, "the body of the request was in an unknown format - accepted media types "
                           f"include: {', '.join(ACCEPTED_BODY_TYPES)}", "UnsupportedMediaType")
    return None


def authorization_refusal(user: User, method: str, path: str, websocket: bool) -> Response | None:
    """403 Forbidden for a read-only user's write (kube-apiserver's Status); None if allowed."""
    if user.admin or (method not in WRITE_METHODS and not websocket):
        return None
    target = parse_target(path)
    if target is None:
        message = forbidden_message(user.name, method.lower(), "", "", "", "", path)
        return status(403, message, "Forbidden")
    info = target.info
    verb = "create" if websocket else VERBS[method]
    if verb == "delete" and not target.name:
        verb = "deletecollection"
    resource = info.plural + (f"/{target.subresource}" if target.subresource else "")
    namespace = target.namespace or (target.name if info.kind == "Namespace" else "")
    message = forbidden_message(user.name, verb, resource, info.group, namespace, target.name, path)
    return status(403, message, "Forbidden",
                  {"name": target.name, "group": info.group, "kind": info.plural}
                  if target.name else {"group": info.group, "kind": info.plural})


def _with_nosniff(send: Any) -> Any:
    """``send`` adding ``X-Content-Type-Options: nosniff`` to the response head."""
    async def guarded(message: dict[str, Any]) -> None:
        if message.get("type") in ("http.response.start", "websocket.http.response.start"):
            message = {**message, "headers": [*message.get("headers", ()), NOSNIFF]}
        await send(message)
    return guarded


class Guards:
    """ASGI middleware: see the module docstring."""

    def __init__(self, app: Any, policy: Policy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path, _ = normalise_path(scope["path"])
        scope = {**scope, "path": path, "raw_path": path.encode()}
        websocket = scope["type"] == "websocket"
        method = "GET" if websocket else scope["method"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        send = _with_nosniff(send)
        refused = self.refusal(scope, method, path, headers, websocket)
        if refused is None:
            await self.app(scope, receive, send)
            return
        if wants_protobuf(headers.get("accept", "")):
            refused = encode_response(refused)          # a Status, as the client asked
        reply = StarletteResponse(refused.body, refused.status, media_type=refused.content_type,
                                  headers={"Connection": "close"} if not websocket else None)
        if websocket:
            await WebSocket(scope, receive, send).send_denial_response(reply)
        else:
            await reply(scope, receive, send)

    def refusal(self, scope: dict[str, Any], method: str, path: str, headers: dict[str, str],
                websocket: bool) -> Response | None:
        policy = self.policy
        refused = browser_refusal(policy, method, headers, websocket, str(scope.get("scheme", "http")))
        if refused is not None:
            return refused
        peer = policy.peers.get(tuple(scope.get("client") or ())) if policy.peers is not None else None
        user = policy.authenticator.authenticate(headers.get("authorization", ""), peer)
        if user is None:
            return status(401, "Unauthorized", "Unauthorized")
        scope.setdefault("state", {})["user"] = user
        refused = authorization_refusal(user, method, path, websocket)
        if refused is not None:
            return refused
        return content_refusal(method, headers)
