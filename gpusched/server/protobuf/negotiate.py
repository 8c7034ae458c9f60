"""Content negotiation for protobuf, at the edge of the resource handlers.

Requests: a ``Content-Type: application/vnd.kubernetes.protobuf`` body (kubectl's create
generators, client-go's default for kube-scheduler's bindings, events and deletes) is decoded
here and handed on as JSON, so every handler, validation and admission sees what a JSON client
would have sent. A kind with no protobuf message (a custom resource) is 415 naming the JSON
types, as kube-apiserver's CRD handler; a body that does not decode is 400 with the
serializer's words (``envelope``).

Responses: the ``Accept`` header is read as apiserver ``negotiation.NegotiateMediaTypeOptions``
reads it (goautoneg: clauses by ``q``, then the specific before wildcards; the first clause the
endpoint can serve wins). Protobuf wins when its clause comes first and the kind has a message;
``as=Table`` is served in JSON only (``RequestScope.AllowsMediaTypeTransform``), so kubectl's
``...protobuf;as=Table..., application/json;as=Table...`` gets a JSON Table. Every other clause
keeps the JSON path; ``as=PartialObjectMetadata[List]`` (metadata-only informers) is protobuf
too, the handler asked for the same clause in JSON. An Accept that lists only clauses protobuf
cannot serve is 406
``only the following media types are accepted: ...``. A protobuf answer is the handler's JSON
answer re-encoded (objects, lists, Status errors); a watch renders its frames itself
(``server.watch``).

Neighbours: ``server.app`` (wraps the resource route), ``server.guards`` (its refusals),
``server.watch``, ``server.decoding``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any, Callable, Literal

from gpusched.errors import GpuschedError
from gpusched.server.http import JSON, Request, Response, error_response, status_object
from gpusched.server.protobuf.envelope import (ProtobufDecodeError, decode_object, encode_object,
                                                has_message)
from gpusched.server.protobuf.special import ConversionError

log = logging.getLogger(__name__)
PROTOBUF = "application/vnd.kubernetes.protobuf"
PROTOBUF_WATCH = PROTOBUF + ";stream=watch"
SERVED = ("application/json", "application/yaml", PROTOBUF)
METADATA_KINDS = ("PartialObjectMetadata", "PartialObjectMetadataList")


def clauses(header: str) -> list[tuple[str, dict[str, str]]]:
    """goautoneg ``ParseAccept``: (media type, parameters) by ``q``, specific types first.

    >>> [c[0] for c in clauses("*/*;q=0.5, application/json, application/vnd.kubernetes.protobuf;q=0.9")]
    ['application/json', 'application/vnd.kubernetes.protobuf', '*/*']
    """
    parsed = []
    for index, part in enumerate(header.split(",")):
        media, *params = [p.strip() for p in part.split(";")]
        if not media:
            continue
        values = dict(p.partition("=")[::2] for p in params)
        try:
            q = float(values.pop("q", "1") or 1)
        except ValueError:
            q = 1.0
        kind, _, sub = media.lower().partition("/")
        parsed.append((-q, kind == "*", sub == "*", index, f"{kind}/{sub}", values))
    parsed.sort(key=lambda c: c[:4])
    return [(c[4], c[5]) for c in parsed]


def protobuf_clause(accept: str, protobuf_ok: bool = True) -> dict[str, str] | Literal[False] | None:
    """The parameters of the protobuf clause that wins (``as``, ``g``, ``v``: a metadata-only
    list), False for the JSON path, None for 406 (only protobuf clauses, none servable)."""
    if not accept.strip():
        return False
    for media, params in clauses(accept):
        if media != PROTOBUF:
            return False
        if protobuf_ok and params.get("as", "") in ("",) + METADATA_KINDS:
            return params
    return None


def wants_protobuf(accept: str, protobuf_ok: bool = True) -> bool | None:
    """True when protobuf is the answer, False for the JSON path, None for 406."""
    chosen = protobuf_clause(accept, protobuf_ok)
    return chosen if chosen is None or chosen is False else True


def not_acceptable() -> Response:
    """406 as negotiation ``NewNotAcceptableError``."""
    return _json(status_object(406, "only the following media types are accepted: "
                                    + ", ".join(SERVED)), 406)


def _json(body: dict[str, Any], code: int) -> Response:
    return Response(code, json.dumps(body, separators=(",", ":")).encode() + b"\n", JSON)


def decode_request(req: Request, api_version: str, kind: str) -> Request | Response:
    """The request with a protobuf body turned into JSON; a 400/415 Response when it cannot be."""
    if req.content_type != PROTOBUF or (not req.body and req.method not in ("POST", "PUT")):
        return req
    if not has_message(api_version, kind):
        return _json(status_object(415, "the body of the request was in an unknown format - "
                                        "accepted media types include: application/json, application/yaml"), 415)
    try:
        body = decode_object(req.body, api_version, kind)
    except ProtobufDecodeError as err:
        return _json(status_object(400, str(err)), 400)
    headers = {**req.headers, "content-type": JSON}
    return dataclasses.replace(req, headers=headers, body=json.dumps(body, separators=(",", ":")).encode())


def encode_response(response: Response) -> Response:
    """A JSON answer re-encoded in protobuf; unchanged when it is not one or has no message."""
    media, _, params = response.content_type.partition(";")
    if response.stream is not None or media != JSON or not response.body:
        return response
    try:
        obj = json.loads(response.body)
        data = encode_object(obj) if isinstance(obj, dict) else None
    except (ValueError, ConversionError) as err:
        log.warning("answering in JSON: the response does not encode in protobuf: %s", err)
        return response
    if data is None:
        return response
    # a metadata-only answer names its kind (``server.partial``: ``;g=meta.k8s.io;v=v1;as=...``)
    return dataclasses.replace(response, body=data, content_type=PROTOBUF + (f";{params}" if params else ""))


def negotiated(req: Request, api_version: str, kind: str, handler: Callable[[Request], Response]) -> Response:
    """``handler(req)`` with protobuf in and out as the module doc says."""
    if req.content_type != PROTOBUF and PROTOBUF not in req.accept.lower():
        return handler(req)         # JSON clients: the messages are never loaded
    chosen = protobuf_clause(req.accept, has_message(api_version, kind))
    if chosen is None:
        return not_acceptable()
    decoded = decode_request(req, api_version, kind)
    if isinstance(decoded, Response):
        return encode_response(decoded) if chosen is not False else decoded
    if chosen is False:
        return handler(decoded)
    # the handler answers the same clause in JSON (a watch: in protobuf, server.watch)
    watch = req.query.get("watch") in ("true", "1")
    params = "".join(f";{key}={value}" for key, value in chosen.items())
    inner = dataclasses.replace(decoded, headers={**decoded.headers,
                                                   "accept": (PROTOBUF if watch else JSON) + params})
    try:
        response = handler(inner)
    except GpuschedError as err:
        response = error_response(err)
    return encode_response(response)
