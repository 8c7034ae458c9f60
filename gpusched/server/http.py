"""Requests, responses and Kubernetes Status objects: the server's small HTTP vocabulary.

A handler is ``Callable[[Request], Response]``. A :class:`Response` has a body, or a ``stream``
(an iterator of byte chunks, streamed with chunked transfer encoding: watch). Errors become
``{"kind": "Status", ...}`` bodies with Kubernetes' code, reason and message
(:func:`status_response`); :mod:`gpusched.errors` types carry their code and reason.

Neighbours: ``server.app`` (the HTTP server), ``server.resources`` (handlers), the web page.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator
from urllib.parse import parse_qs

from gpusched.errors import GpuschedError, InvalidError

JSON = "application/json"
REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
           405: "MethodNotAllowed", 406: "NotAcceptable", 408: "Timeout", 409: "Conflict", 410: "Expired",
           413: "RequestEntityTooLarge",
           415: "UnsupportedMediaType", 422: "Invalid", 429: "TooManyRequests",
           500: "InternalError", 503: "ServiceUnavailable"}


@dataclass(frozen=True)
class Request:
    method: str
    path: str                       # normalised: no trailing slash, no query
    query: dict[str, str]           # last value of each parameter
    headers: dict[str, str]         # lower-case names
    body: bytes = b""
    raw_query: str = ""             # as sent (repeated parameters such as exec's ``command``)

    @property
    def accept(self) -> str:
        return self.headers.get("accept", "")

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()


@dataclass
class Response:
    status: int = 200
    body: bytes = b""
    content_type: str = JSON
    headers: dict[str, str] = field(default_factory=dict)
    stream: Iterator[bytes] | None = None
    # Warning headers (RFC 7234 ``299 - "<text>"``, one header each), as kube-apiserver sends
    # fieldValidation=Warn findings; kubectl prints each as ``Warning: <text>``.
    warnings: tuple[str, ...] = ()


Handler = Callable[[Request], Response]


def normalise_path(raw: str) -> tuple[str, dict[str, str]]:
    """``/api/v1/pods/?limit=5`` -> (``/api/v1/pods``, {"limit": "5"}); kr8s sends trailing slashes.

    >>> normalise_path("/version/?timeout=32s")
    ('/version', {'timeout': '32s'})
    """
    path, _, query = raw.partition("?")
    path = "/" + "/".join(part for part in path.split("/") if part)
    params = {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}
    return path, params


def warning_header(text: str) -> str | None:
    r"""The value of one ``Warning`` header (apiserver pkg/warning: code 299, agent ``-``, Go-quoted
    text), or None for a text kube-apiserver drops: one with control characters (apimachinery
    ``pkg/util/net/http.go`` ``NewWarningHeader``: "must not contain control characters"; the
    apiserver's recorder ignores a warning it cannot encode). A newline in a header would end it.

    >>> warning_header('unknown field "spec.x"')
    '299 - "unknown field \\"spec.x\\""'
    >>> warning_header('unknown field "a\nb"') is None
    True
    """
    if any(unicodedata.category(c) == "Cc" for c in text):
        return None
    quoted = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'299 - "{quoted}"'


def json_response(obj: object, status: int = 200, content_type: str = JSON) -> Response:
    return Response(status, json.dumps(obj, separators=(",", ":")).encode() + b"\n", content_type)


def status_object(code: int, message: str, reason: str = "", details: dict[str, Any] | None = None) -> dict[str, Any]:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason or REASONS.get(code, "Unknown"), "code": code}
    if details:
        body["details"] = details
    return body


def status_response(code: int, message: str, reason: str = "", details: dict[str, Any] | None = None) -> Response:
    return json_response(status_object(code, message, reason, details), code)


def error_response(error: GpuschedError) -> Response:
    """A gpusched error as Kubernetes Status (422 Invalid lists its field causes)."""
    details = None
    if isinstance(error, InvalidError):
        details = {"name": error.name, "kind": error.kind,
                   "causes": [{"reason": "FieldValueInvalid" if e.type == "Invalid value" else
                               "FieldValue" + e.type.replace(" value", "").replace(" ", ""),
                               "message": str(e).partition(": ")[2], "field": e.path}
                              for e in error.errors]}
    return status_response(error.code, error.message, error.reason, details)


def success_status(code: int = 200, details: dict[str, Any] | None = None) -> Response:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code}
    if details:
        body["details"] = details
    return json_response(body, code)
